"""`tfbuild inspect` and `tfbuild verify` on tiny wheels compiled here: one whose library runs
an AVX2 instruction as it is loaded, one that needs nothing beyond x86-64. The verdict for a
named CPU, a saved profile or this machine, the exit code (6: cannot run there), the JSON
report and its cache, and the mistakes refused in one line before anything is audited; with
qemu-user, the same wheel run on emulated CPUs."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.cli import run_tfbuild
from support.env import FIXTURES, require

from tfbuild.audit import qemu
from tfbuild.audit.verdict import gpu_for_arch
from tfbuild.cli.inspecting import AuditProgress, InspectSettings, audit_target, check_snippet
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.progress import Reporter

WHEEL = "pkg-1.0-cp311-cp311-linux_x86_64.whl"
CPUINFO = FIXTURES / "cpuinfo"

AVX2_ON_LOAD = r"""
__attribute__((constructor)) static void on_load(void) {
    __asm__ volatile("vpaddd %%ymm0, %%ymm0, %%ymm0" ::: "xmm0");  /* VEX.256: AVX2 */
}
"""
PLAIN = "int add_one(int x) { return x + 1; }\n"

CRASH = "will crash here: needs AVX, AVX2; this CPU has up to SSE4.2"
"""What a wheel needing AVX2 gets on Nehalem, the newest extension of which is SSE4.2."""


def wheel_of(folder: Path, source: str) -> Path:
    """A wheel of the package `pkg` whose __init__ loads pkg/m.so (compiled from `source`)
    with ctypes, so importing the package runs the library's constructors."""
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc is not installed")
    assert gcc is not None
    folder.mkdir(parents=True)
    (folder / "m.c").write_text(source)
    subprocess.run([gcc, "-shared", "-fPIC", "-O2", str(folder / "m.c"), "-o",
                    str(folder / "m.so")], check=True, timeout=120)  # fmt: skip
    path = folder / WHEEL
    info = "pkg-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                         "Tag: cp311-cp311-linux_x86_64\n")  # fmt: skip
        archive.writestr(f"{info}/RECORD", "")
        archive.writestr(
            "pkg/__init__.py",
            "import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), 'm.so'))\n",
        )
        archive.write(folder / "m.so", "pkg/m.so")
    return path


@pytest.fixture(scope="module")
def avx2_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_of(tmp_path_factory.mktemp("avx2") / "wheel", AVX2_ON_LOAD)


@pytest.fixture(scope="module")
def plain_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return wheel_of(tmp_path_factory.mktemp("plain") / "wheel", PLAIN)


def inspect(wheel: Path, cache: Path, *args: str) -> Any:
    return run_tfbuild("inspect", str(wheel), "--cache-dir", str(cache), *args)


def profile(folder: Path, cpuinfo: str) -> Path:
    """A saved `tfbuild detect --format json` of the machine of a committed /proc/cpuinfo."""
    path = folder / f"{cpuinfo}.json"
    path.write_text(json.dumps(profile_from_cpuinfo(CPUINFO / cpuinfo).to_json()))
    return path


def test_a_wheel_that_runs_avx2_on_load_crashes_on_a_cpu_without_it(
    avx2_wheel: Path, tmp_path: Path
) -> None:
    """--cpu nehalem: exit 6, the verdict in the report and as the one error line; --cpu
    haswell (AVX2's first Intel core): it runs, exit 0."""
    cache = tmp_path / "cache"
    proc = inspect(avx2_wheel, cache, "--cpu", "nehalem")
    assert proc.returncode == 6, proc.stderr
    assert f"CPU    {CRASH}" in proc.stdout
    assert proc.stderr.splitlines()[-1] == f"tfbuild: {WHEEL}: {CRASH}"
    runs = inspect(avx2_wheel, cache, "--cpu", "haswell")
    assert runs.returncode == 0, runs.stderr
    assert "CPU    runs here: needs AVX2; haswell (as -march=haswell) has up to AVX2" in runs.stdout


def test_a_saved_profile_is_the_target_with_host(avx2_wheel: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    nehalem = inspect(avx2_wheel, cache, "--host",
                      str(profile(tmp_path, "nehalem-xeon-x3430.cpuinfo")))  # fmt: skip
    assert nehalem.returncode == 6, nehalem.stderr
    assert "will crash here: needs AVX, AVX2" in nehalem.stderr
    haswell = inspect(avx2_wheel, cache, "--host",
                      str(profile(tmp_path, "haswell-xeon-e5-2680v3.cpuinfo")))  # fmt: skip
    assert haswell.returncode == 0, haswell.stderr


def test_a_wheel_of_plain_x86_64_code_runs_on_any_x86_64_cpu(
    plain_wheel: Path, tmp_path: Path
) -> None:
    """The oldest target there is, x86-64 itself (-march=x86-64): nothing more is needed."""
    proc = inspect(plain_wheel, tmp_path / "cache", "--cpu", "x86-64", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["baseline"]["flags"] == []
    assert report["verdict"]["runs"] is True and report["verdict"]["blockers"] == []


def test_the_json_report_names_the_wheel_and_is_cached_until_refresh(
    avx2_wheel: Path, tmp_path: Path
) -> None:
    """The audit of a wheel is kept in --cache-dir: asked again it is read from there (the
    verdict is made for the target asked each time); --refresh audits again."""
    cache = tmp_path / "cache"
    first = inspect(avx2_wheel, cache, "--cpu", "nehalem", "--format", "json")
    assert first.returncode == 6, first.stderr
    report = json.loads(first.stdout)
    assert report["wheel"] == WHEEL
    assert report["sha256"] == hashlib.sha256(avx2_wheel.read_bytes()).hexdigest()
    assert (report["metadata"]["name"], report["metadata"]["version"]) == ("pkg", "1.0")
    assert [o["path"] for o in report["objects"]] == ["pkg/m.so"]
    assert report["baseline"]["flags"] == ["avx2"]
    assert report["verdict"] == {
        "target": "nehalem (as -march=nehalem)",
        "runs": False,
        "cpu": CRASH,
        "glibc": "no versioned glibc symbols needed",
        "cuda": "no device code",
        "blockers": [CRASH],
    }
    assert report["cached"] is False and any(cache.iterdir())
    again = json.loads(inspect(avx2_wheel, cache, "--cpu", "haswell", "--format", "json").stdout)
    assert again["cached"] is True and again["verdict"]["runs"] is True
    fresh = json.loads(inspect(avx2_wheel, cache, "--cpu", "haswell", "--json", "--refresh").stdout)
    assert fresh["cached"] is False and fresh["baseline"] == report["baseline"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("--cpu", "haswell", "--host", "host.json"),
            "tfbuild: --host and --cpu both name the target; give one of them",
        ),
        (
            ("--gpu", "banana"),
            "Error: Invalid value for '--gpu': 'banana' is not a GPU: give an "
            "architecture sm_XY (sm_90, sm_90a, sm_120), compute_XY (compute_90) or a compute "
            "capability X.Y (9.0, 12.0)",
        ),
    ],
    ids=["host-and-cpu", "unknown-gpu"],
)
def test_a_target_named_wrong_is_refused_before_the_audit(
    avx2_wheel: Path, tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    cache = tmp_path / "cache"
    proc = inspect(avx2_wheel, cache, *args)
    assert proc.returncode == 64, proc.stderr
    assert said in proc.stderr and "Traceback" not in proc.stderr
    assert not cache.exists()  # nothing audited


def test_an_unknown_cpu_model_is_named_with_those_known(avx2_wheel: Path, tmp_path: Path) -> None:
    proc = inspect(avx2_wheel, tmp_path / "cache", "--cpu", "pentium9")
    assert proc.returncode == 64, proc.stderr
    said = proc.stderr.splitlines()[-1]
    assert said.startswith(
        "tfbuild: --cpu 'pentium9': unknown CPU model (expected a -march name or a qemu model: "
    )
    assert "haswell" in said and "Nehalem" in said


def test_a_wheel_argument_that_is_no_file_or_variant_is_named(tmp_path: Path) -> None:
    missing = run_tfbuild("inspect", str(tmp_path / "gone.whl"))
    assert missing.returncode == 64
    assert missing.stderr == f"tfbuild: {tmp_path / 'gone.whl'}: no such wheel file\n"
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "variants:\n"
        "  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "  - {name: older, source: pypi, requirement: tensorflow-cpu==2.20.0}\n"
    )
    unknown = run_tfbuild("inspect", "stok", "--matrix", str(matrix))
    assert unknown.returncode == 4, unknown.stderr
    assert unknown.stderr == (
        f"tfbuild: {matrix}: unknown variant 'stok' (expected one of: stock, older); did you "
        "mean 'stock'?\n"
    )


def test_verify_runs_the_wheel_on_emulated_cpus(avx2_wheel: Path, tmp_path: Path) -> None:
    """qemu-user as the ground truth: importing the package loads the library, whose AVX2
    constructor dies with SIGILL on Nehalem and runs on Haswell; exit 6 naming the model it
    fails on."""
    require(shutil.which("qemu-x86_64") is not None, "qemu-user is not installed")
    proc = run_tfbuild("verify", str(avx2_wheel), "--cpu", "Nehalem-v1", "--cpu", "Haswell-v1",
                       "--cache-dir", str(tmp_path / "cache"), "--format", "json")  # fmt: skip
    assert proc.returncode == 6, proc.stderr
    assert proc.stderr == f"tfbuild: {WHEEL} fails on Nehalem-v1\n"
    said = json.loads(proc.stdout)
    assert said["wheel"] == WHEEL
    outcomes = {r["model"]: r for r in said["results"]}
    assert list(outcomes) == ["Nehalem-v1", "Haswell-v1"]
    assert outcomes["Nehalem-v1"]["passed"] is False
    assert outcomes["Nehalem-v1"]["returncode"] == -4  # SIGILL
    assert outcomes["Haswell-v1"]["passed"] is True and outcomes["Haswell-v1"]["returncode"] == 0


def test_verify_refuses_a_cpu_model_qemu_does_not_know_before_installing(
    avx2_wheel: Path, tmp_path: Path
) -> None:
    require(shutil.which("qemu-x86_64") is not None, "qemu-user is not installed")
    cache = tmp_path / "cache"
    proc = run_tfbuild("verify", str(avx2_wheel), "--cpu", "Nope-v9", "--cache-dir", str(cache))
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr.startswith(
        "tfbuild: --cpu 'Nope-v9': qemu does not know this CPU model (e.g. Nehalem-v1, "
    )
    assert not cache.exists()
    without = run_tfbuild("verify", str(avx2_wheel))
    assert without.returncode == 64 and "Error: Missing option '--cpu'." in without.stderr


def inspecting(**given: Any) -> InspectSettings:
    """`inspect`'s settings with these options, the others at their defaults."""
    defaults = InspectSettings(
        target=WHEEL, matrix=None, store=Path("wheels"), host=None, cpu_model=None, gpus=(),
        as_json=False, refresh=False, cache_dir=Path("cache"),
    )  # fmt: skip
    return dataclasses.replace(defaults, **given)


def test_the_verdict_is_for_the_cpu_named_or_the_saved_machine_with_the_gpus_named(
    tmp_path: Path,
) -> None:
    """--cpu names the CPU; else --host's saved machine (its CPU, glibc and GPUs); --gpu
    replaces the GPUs of either."""
    named = audit_target(inspecting(cpu_model="haswell"))
    assert named.label == "haswell (as -march=haswell)" and named.gpus is None
    saved = audit_target(inspecting(host=profile(tmp_path, "nehalem-xeon-x3430.cpuinfo")))
    nehalem = profile_from_cpuinfo(CPUINFO / "nehalem-xeon-x3430.cpuinfo")
    assert saved.label == "Intel(R) Xeon(R) CPU X3430 @ 2.40GHz (x86-64-v2)"
    assert saved.cpu == nehalem.cpu.isa and saved.gpus == nehalem.gpus
    h100 = gpu_for_arch("sm_90")
    with_gpu = audit_target(inspecting(cpu_model="haswell", gpus=(h100,)))
    assert with_gpu.gpus is not None and with_gpu.gpus.devices == (h100,)


def test_the_audit_says_its_progress_in_mb_of_code_a_step_each_twentieth() -> None:
    """Started at the first object, in MB; a step when a twentieth of the wheel's code more
    is audited, and at the last object, with the MB audited since the last step."""
    out = io.StringIO()
    screen = Console(file=out, width=200, highlight=False, color_system=None,
                     force_terminal=False)  # fmt: skip
    progress = AuditProgress(Reporter(screen), WHEEL)
    total = 40 << 20
    for done, name in [(1 << 20, "pkg/a.so"), (2 << 20, "pkg/b.so"), (5 << 20, "pkg/c.so"),
                       (6 << 20, "pkg/d.so"), (total, "pkg/libbig.so")]:  # fmt: skip
        progress(done, total, name)
    lines = [line.split("  (elapsed")[0] for line in out.getvalue().splitlines()]
    assert lines == [
        f"auditing {WHEEL}, MB of code (40)",
        "[2/40] b.so",
        "[5/40] c.so",
        "[40/40] libbig.so",
    ]


def test_the_emulated_run_runs_tensorflow_or_imports_the_wheels_packages() -> None:
    assert check_snippet(["tensorflow", "tensorflow_estimator"]) == qemu.TF_SNIPPET
    snippet = check_snippet(["pkg", "pkg_extra"])
    assert snippet.startswith("import pkg\nimport pkg_extra\n")
    assert "tensorflow" not in snippet
