"""The ISA audit on small ELF objects compiled in the test with known instructions."""

from __future__ import annotations

import shutil
import subprocess
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from support.env import require

from tfbuild.audit import isa
from tfbuild.audit.inspect import inspect_wheel
from tfbuild.audit.verdict import Target, refuse_if_incompatible, target_for_model, verdict
from tfbuild.errors import IncompatibleWheel, UsageError
from tfbuild.store import SourceBuild

GCC = shutil.which("gcc")


@pytest.fixture(autouse=True)
def _gcc() -> None:
    """gcc compiles the fixtures: skipped without it on a workstation, failed in CI."""
    require(GCC is not None, "gcc is not installed")


DISPATCH = r"""
#include <immintrin.h>
float data[64];
int ints[64];

/* reached from a constructor by a direct call: runs on load */
__attribute__((target("avx2"), noinline)) void on_load(void) {
    __m256i v = _mm256_loadu_si256((const __m256i *)ints);
    _mm256_storeu_si256((__m256i *)ints, _mm256_add_epi32(v, v));
}

/* only reached through a pointer chosen after a CPU check: dispatched */
__attribute__((target("avx512f"), noinline)) void wide(void) {
    __m512 a = _mm512_loadu_ps(data);
    _mm512_storeu_ps(data, _mm512_fmadd_ps(a, a, a));
}
__attribute__((noinline)) void narrow(void) { data[0] += 1.0f; }

void (*kernel)(void) = narrow;

__attribute__((constructor)) static void init(void) {
    on_load();
    if (__builtin_cpu_supports("avx512f")) kernel = wide;
}

/* compilers emit TZCNT (REP BSF) for any target: it needs no BMI1 */
__attribute__((noinline)) int trailing(unsigned x) { return __builtin_ctz(x); }
"""

PERVASIVE = "".join(
    f"""
void saxpy{i}(float *restrict y, const float *restrict x, float a, int n) {{
    for (int k = 0; k < n; k++) y[k] = a * x[k] + y[k] + {i}.0f;
}}
"""
    for i in range(30)
)

NEW_GLIBC = r"""
#include <stdlib.h>
unsigned int random_word(void) { return arc4random(); }  /* GLIBC_2.36 */
"""


def compile_so(tmp_path: Path, name: str, source: str, *flags: str) -> Path:
    c = tmp_path / f"{name}.c"
    c.write_text(source)
    so = tmp_path / f"{name}.so"
    assert GCC is not None
    subprocess.run([GCC, "-shared", "-fPIC", "-O3", *flags, str(c), "-o", str(so)], check=True)
    return so


def test_dispatched_code_is_not_baseline(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "dispatch", DISPATCH)
    result = isa.audit_object(so, so.name, workers=1)
    assert {"avx2", "avx512f"} <= set(result.usage)
    assert result.baseline.get("avx2") == ["runs on load"]
    assert "avx512f" not in result.baseline
    assert "bmi1" not in result.usage  # TZCNT is not a BMI1 requirement
    assert result.usage["avx512f"].functions == 1
    assert result.usage["avx512f"].examples[0][1] == "wide"
    assert result.entry_points >= 1 and result.reachable >= 2


POINTER = r"""
#include <immintrin.h>
float data[64];

/* AVX-512 code, never called directly */
__attribute__((target("avx512f"), noinline)) void wide(void) {
    __m512 a = _mm512_loadu_ps(data);
    _mm512_storeu_ps(data, _mm512_fmadd_ps(a, a, a));
}

void (*volatile kernel)(void);

/* runs on load and calls the AVX-512 code through a pointer, with no CPU check */
__attribute__((constructor)) static void init(void) {
    kernel = wide;
    kernel();
}
"""


def test_code_called_through_a_pointer_on_load_is_unproven(tmp_path: Path) -> None:
    """No CPU check in the object: the AVX-512 code whose address the constructor takes is not
    "dispatched", and a CPU without AVX-512 gets "unproven", never "runs here". With a check
    (DISPATCH) the same pattern is the dispatch the audit leaves out of the baseline."""
    so = compile_so(tmp_path, "pointer", POINTER)
    disassembly = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(so)], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    assert "call   *" in disassembly and "%zmm" in disassembly and "cpuid" not in disassembly
    result = isa.audit_object(so, so.name, workers=1)
    assert "avx512f" not in result.baseline
    assert result.unchecked["avx512f"] == ["wide"]
    dispatched = compile_so(tmp_path, "dispatch", DISPATCH)
    assert isa.audit_object(dispatched, dispatched.name, workers=1).unchecked == {}
    wheel = make_wheel(tmp_path, {"pointer.so": so})
    report = inspect_wheel(wheel, None)
    haswell = verdict(report, target_for_model("haswell"))
    assert haswell.runs is None
    assert haswell.cpu.startswith("unproven: code that runs on load takes the address of code")
    assert "AVX512F (pointer.so: wide)" in haswell.cpu
    assert verdict(report, target_for_model("skylake-avx512")).runs is True


def test_compiler_flags_make_extensions_pervasive(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "pervasive", PERVASIVE, "-mavx2", "-mfma")
    result = isa.audit_object(so, so.name, workers=2)
    assert result.functions >= 30
    assert any(r.startswith("pervasive") for r in result.baseline["fma"])
    assert any(r.startswith("pervasive") for r in result.baseline["avx"])
    assert isa.minimal(result.baseline) == ["avx2", "fma"]


def test_plain_build_needs_nothing(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "plain", PERVASIVE, "-march=x86-64")
    result = isa.audit_object(so, so.name, workers=1)
    assert result.baseline == {}


def test_glibc_floor(tmp_path: Path) -> None:
    so = compile_so(tmp_path, "glibc", NEW_GLIBC)
    result = isa.audit_object(so, so.name, workers=1)
    assert result.glibc == "2.36"
    assert isa.manylinux_tag("2.36") == "manylinux_2_36_x86_64"
    assert isa.manylinux_tag("2.17") == "manylinux_2_17_x86_64 (manylinux2014)"


def make_wheel(tmp_path: Path, objects: dict[str, Path]) -> Path:
    wheel = tmp_path / "probe-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, path in objects.items():
            archive.write(path, f"probe/{name}")
        archive.writestr("probe/__init__.py", "")
        archive.writestr(
            "probe-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: probe\nVersion: 1.0\nRequires-Dist: numpy\n\n",
        )
        archive.writestr("probe-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr("probe-1.0.dist-info/RECORD", "")
    return wheel


def test_wheel_report_verdicts_and_cache(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path,
        {
            "_dispatch.so": compile_so(tmp_path, "dispatch", DISPATCH),
            "_glibc.so": compile_so(tmp_path, "glibc", NEW_GLIBC),
        },
    )
    cache = tmp_path / "cache"
    report = inspect_wheel(wheel, cache)
    assert report.cached is False and report.needs.flags == ("avx2",)
    assert report.metadata.requires_dist == ("numpy",)
    assert report.glibc == "2.36"
    again = inspect_wheel(wheel, cache)
    assert again.cached is True and again == replace(report, cached=True)

    haswell = target_for_model("Haswell-v1")
    ok = verdict(report, haswell)
    assert ok.runs is True and ok.cpu.startswith("runs here: needs AVX2")
    old = verdict(report, target_for_model("sandybridge"))
    assert old.runs is False
    assert old.cpu == "will crash here: needs AVX2; this CPU has up to AVX"
    old_glibc = Target("old distro", haswell.cpu, glibc="2.31")
    result = verdict(report, old_glibc)
    assert (
        result.runs is False
        and result.glibc == "will fail to load: needs 2.36, this system has 2.31"
    )
    with pytest.raises(IncompatibleWheel, match="will crash here: needs AVX2"):
        refuse_if_incompatible(report, target_for_model("SandyBridge-v1"), "w")


def test_unknown_cpu_model() -> None:
    with pytest.raises(UsageError, match="did you mean 'Haswell'"):
        target_for_model("Hasswell")


def test_a_tfbuild_wheels_declared_extensions_include_its_releases_floor() -> None:
    """What inspect takes a tfbuild-built wheel to be compiled for, each with where the manifest
    says so: its copts, and TensorFlow's floor when it was built with --config=avx_linux (AVX,
    and F16C from 2.21 on)."""
    plain_221 = SourceBuild(copts=("-Wno-gnu-offsetof-extensions",), configs=("avx_linux",),
                            tensorflow="2.21.0")  # fmt: skip
    floor = "TensorFlow 2.21.0's floor, --config=avx_linux in the manifest"
    declared = isa.declared_flags(plain_221)
    assert {"avx", "f16c", "sse4_2"} <= set(declared)  # with what AVX implies
    assert set(declared.values()) == {floor}
    plain_217 = isa.declared_flags(replace(plain_221, tensorflow="2.17.1"))
    assert "avx" in plain_217 and "f16c" not in plain_217
    tuned = SourceBuild(copts=("-mavx2", "-mfma", "-mf16c"), configs=("avx_linux",),
                        tensorflow="2.21.0")  # fmt: skip
    why = isa.declared_flags(tuned)
    assert {name: why[name] for name in ("avx2", "fma", "f16c", "avx")} == {
        "avx2": "manifest copts",
        "fma": "manifest copts",
        "f16c": "manifest copts",
        "avx": "manifest copts",  # -mavx2 implies it
    }
    assert "avx512f" not in why
    native = isa.declared_flags(SourceBuild(copts=("-march=haswell",)))
    assert native["avx2"] == "-march=haswell in the manifest copts" and "avx512f" not in native
