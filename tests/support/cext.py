"""Tiny wheels made in tests: a package with a C extension compiled with chosen flags."""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tempfile
import textwrap
import zipfile
from pathlib import Path

from support.env import require
from tfbuild.machine.detect import detect

# Instructions a test can execute to prove that a CPU lacks them: (cpuinfo flag, gcc option,
# C statement, what objdump shows for it). The statement runs when the extension is imported;
# `argc` is read from a volatile, so the compiler cannot fold the work away.
LACKING = [
    (
        "avx512f",
        "-mavx512f",
        "__m512 v = _mm512_set1_ps((float)argc); sink = _mm512_reduce_add_ps(_mm512_add_ps(v, v));",
        r"%zmm\d",
    ),
    ("amx_tile", "-mamx-tile", "_tile_release();", r"\btilerelease\b"),
    (
        "avx_vnni",
        "-mavxvnni",
        "__m256i a = _mm256_set1_epi32(argc); a = _mm256_dpbusd_avx_epi32(a, a, a);"
        " sink = (float)_mm256_extract_epi32(a, 0);",
        r"\bvpdpbusd\b",
    ),
]


def instruction_this_cpu_lacks() -> tuple[str, str, str, str]:
    """(name, gcc flag, statement, objdump pattern) for an extension this CPU does not have.

    Every x86 CPU lacks *something* tfbuild knows how to compile; if a CPU has all of these,
    `ud2` (the architecturally undefined instruction) stands in.
    """
    flags = detect().cpu.flags
    for name, flag, statement, shows in LACKING:
        if name not in flags:
            return name, flag, statement, shows
    return "ud2", "", "__builtin_trap();", r"\bud2\b"


def init_disassembly(wheel: Path, package: str) -> str:
    """objdump's disassembly of the module init function of `package._probe` in `wheel`."""
    with zipfile.ZipFile(wheel) as archive, tempfile.TemporaryDirectory() as tmp:
        (member,) = [n for n in archive.namelist() if n.startswith(f"{package}/_probe")]
        path = Path(archive.extract(member, tmp))
        proc = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", "--disassemble=PyInit__probe", str(path)],
            capture_output=True, text=True, check=True, timeout=60,
        )  # fmt: skip
    return proc.stdout


def build_wheel(
    out: Path,
    *,
    package: str,
    version: str,
    cflags: list[str],
    statement: str = "",
    requires: list[str] | None = None,
    prelude: str = "",
    include_dirs: list[str] | None = None,
) -> Path:
    """A wheel with `package`/__init__.py importing `package._probe`, a C extension whose module
    init runs `statement` (so importing the package executes it)."""
    src = out / f"src-{package}-{version}"
    (src / package).mkdir(parents=True)
    (src / package / "__init__.py").write_text(f"from {package} import _probe\n")
    (src / "probe.c").write_text(
        textwrap.dedent(
            """\
            #include <Python.h>
            #include <immintrin.h>
            volatile float sink;
            %s
            static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "_probe", NULL, -1, NULL};
            PyMODINIT_FUNC PyInit__probe(void) {
                int argc = (int)sink + 3;
                (void)argc;
                %s
                return PyModule_Create(&def);
            }
            """
        )
        % (prelude, statement)
    )
    (src / "setup.py").write_text(
        textwrap.dedent(
            f"""\
            from setuptools import Extension, setup
            setup(
                name={package!r},
                version={version!r},
                packages=[{package!r}],
                install_requires={requires or []!r},
                ext_modules=[Extension("{package}._probe", ["probe.c"],
                                       include_dirs={include_dirs or []!r},
                                       extra_compile_args={["-O1", *cflags]!r})],
            )
            """
        )
    )
    dist = out / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(src)],
        check=True,
        timeout=600,
    )
    normalized = package.replace("-", "_")
    return next(dist.glob(f"{normalized}-{version}-*.whl"))


def pure_wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    """A minimal pure-Python wheel: one module `name`, its metadata and RECORD."""
    metadata = "".join(f"Requires-Dist: {r}\n" for r in requires)
    return tagged_wheel(folder, name, "py3-none-any", metadata, version)


def tagged_wheel(
    folder: Path, name: str, tag: str, metadata: str = "", version: str = "1.0"
) -> Path:
    """A minimal wheel for the given tag (cp312-none-any...): one module `name` that knows its
    VERSION and the PYTHON running it, extra METADATA lines, and a RECORD."""
    module = f"import sys\nVERSION = {version!r}\nPYTHON = '%d.%d' % sys.version_info[:2]\n"
    return written_wheel(folder, name, version, tag, {f"{name}.py": module}, metadata)


def written_wheel(
    folder: Path, name: str, version: str, tag: str, files: dict[str, str], metadata: str = ""
) -> Path:
    """A wheel of `files` (path in the wheel -> text), with its METADATA (`metadata`: extra
    lines), WHEEL and RECORD."""
    dist = f"{name}-{version}"
    files = {
        **files,
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"
        f"Version: {version}\n" + metadata,
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        f"Root-Is-Purelib: true\nTag: {tag}\n",
    }

    def digest(text: str) -> str:
        raw = hashlib.sha256(text.encode()).digest()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    record = "".join(f"{p},sha256={digest(t)},{len(t.encode())}\n" for p, t in files.items())
    files[f"{dist}.dist-info/RECORD"] = record + f"{dist}.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-{tag}.whl"
    partial = path.with_name(path.name + ".partial")  # never seen half-written
    with zipfile.ZipFile(partial, "w") as archive:
        for p, t in files.items():
            archive.writestr(p, t)
    partial.replace(path)
    return path


ELF_WHEEL_NAME = "pkg-1.0-cp311-cp311-linux_x86_64.whl"


def shared_object(folder: Path) -> bytes:
    """A tiny x86-64 shared object, compiled here with gcc."""
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc is not installed")
    assert gcc is not None
    (folder / "m.c").write_text("int f(int x) { return x + 1; }\n")
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O2", str(folder / "m.c"), "-o", str(folder / "m.so")],
        check=True,
    )
    return (folder / "m.so").read_bytes()


def elf_wheel(path: Path, elf: bytes) -> Path:
    """A wheel of the package `pkg` holding one ELF object, pkg/m.so."""
    info = "pkg-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
        archive.writestr(f"{info}/RECORD", "")
        archive.writestr("pkg/m.so", elf)
    return path


NUMPY1 = "numpy==1.26.4"
"""The last NumPy 1.x: its C headers make an extension of the ABI NumPy 2 refuses to import."""


def numpy1_wheel(out: Path) -> Path:
    """A toy `tensorflow` whose C extension is compiled against NumPy 1.x's headers and calls
    import_array() when imported, as TensorFlow <= 2.14 does; it requires numpy, unpinned, so
    an install takes NumPy 2 and importing it fails the way intel-tensorflow 2.14 does
    (NumPy's own "compiled using NumPy 1.x cannot be run in NumPy 2" message)."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
         "--dest", str(out / "numpy1"), NUMPY1],
        check=True, timeout=600,
    )  # fmt: skip
    (archive_path,) = (out / "numpy1").glob("numpy-1.26.4-*.whl")
    headers = out / "numpy1-headers"
    with zipfile.ZipFile(archive_path) as archive:
        for name in archive.namelist():
            if name.startswith("numpy/core/include/"):
                archive.extract(name, headers)
    return build_wheel(
        out,
        package="tensorflow",
        version="0.0.2",
        cflags=[],
        prelude="#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION\n#include <numpy/arrayobject.h>",
        statement="import_array();",
        requires=["numpy"],
        include_dirs=[str(headers / "numpy" / "core" / "include")],
    )
