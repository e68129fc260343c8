"""The static audit against the ground truth: wheels run on CPUs emulated by qemu-user."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from support.cext import build_wheel
from support.cli import run_tfbuild, toy_wheel
from support.env import FIXTURES, require

from tfbuild.files import sha256_of

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def qemu() -> None:
    require(shutil.which("qemu-x86_64") is not None, "qemu-user is not installed")


PENRYN = FIXTURES / "cpuinfo" / "penryn-core2-duo-t9600.cpuinfo"


def inspect(wheel: Path, cache: Path, *args: str) -> tuple[int, dict[str, object]]:
    proc = run_tfbuild(
        "inspect", str(wheel), "--format", "json", "--cache-dir", str(cache), *args, timeout=1800
    )
    return proc.returncode, json.loads(proc.stdout)


def verify(wheel: Path, cache: Path, *models: str) -> tuple[int, str]:
    args = [a for m in models for a in ("--cpu", m)]
    proc = run_tfbuild("verify", str(wheel), *args, "--cache-dir", str(cache), timeout=1800)
    return proc.returncode, proc.stdout + proc.stderr


@pytest.mark.docker
@pytest.mark.parametrize(
    ("variant", "needs", "on_haswell"),
    [("avx2-fma", ["avx2", "fma"], True), ("avx512", ["avx512f"], False)],
)
def test_toy_wheels_audit_and_emulation_agree(
    qemu: None, toy_store: Path, tmp_path: Path, variant: str, needs: list[str], on_haswell: bool
) -> None:
    """Built by `tfbuild build` with -mavx2 -mfma and with -mavx512f: the audit names exactly
    those extensions, and Haswell-v1 runs the first and kills the second."""
    wheel = toy_wheel(toy_store, variant)
    code, report = inspect(wheel, tmp_path, "--cpu", "Haswell-v1")
    baseline = report["baseline"]
    assert isinstance(baseline, dict) and baseline["flags"] == needs
    verdict = report["verdict"]
    assert isinstance(verdict, dict)
    assert verdict["runs"] is on_haswell and code == (0 if on_haswell else 6)
    manifest = report["manifest"]
    assert isinstance(manifest, dict) and manifest["variant"]["name"] == variant
    code, out = verify(wheel, tmp_path, "Haswell-v1")
    if on_haswell:
        assert code == 0 and "Haswell-v1: passes" in out, out
    else:
        assert code == 6 and "Haswell-v1: dies with SIGILL" in out, out


@pytest.mark.tf
def test_stock_tensorflow_baseline_is_avx(qemu: None, tf_workspace: Path, tmp_path: Path) -> None:
    """Stock tensorflow-cpu 2.21 carries AVX2 and AVX-512 kernels behind run-time dispatch, but
    needs only AVX: it runs on SandyBridge and dies with SIGILL on Nehalem. (The wheel store and
    the audit cache are those every test that installs TensorFlow shares.)"""
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    store, cache = tf_workspace / "wheels", tf_workspace / "cache"
    fetched = run_tfbuild("fetch", "--matrix", str(tmp_path / "matrix.yaml"), "--store", str(store),
                          "--format", "json")  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr
    (got,) = json.loads(fetched.stdout)["fetched"]  # as a script reads it
    wheel = Path(got["wheel"])
    assert got["variant"] == "stock" and wheel.parent.name == "tf2.21-py3.11-stock"
    assert got["sha256"] == sha256_of(wheel) and isinstance(got["downloaded"], bool)
    code, report = inspect(wheel, cache, "--cpu", "SandyBridge-v1")
    baseline = report["baseline"]
    assert isinstance(baseline, dict) and baseline["flags"] == ["avx"]
    assert code == 0
    used = {f for o in report["objects"] for f in o["usage"]}  # type: ignore[attr-defined]
    assert {"avx2", "avx512f", "fma"} <= used  # present, dispatched
    code, _ = inspect(wheel, cache, "--cpu", "Nehalem-v1")
    assert code == 6
    code, out = verify(wheel, cache, "SandyBridge-v1", "Nehalem-v1")
    assert "SandyBridge-v1: passes" in out, out
    assert "Nehalem-v1: dies with SIGILL" in out, out
    assert code == 6
    _one_story(wheel, cache, tmp_path)


def _one_story(wheel: Path, cache: Path, tmp_path: Path) -> None:
    """The extension table, the summary, the verdict for a saved Penryn profile and `tfbuild
    matrix --host` for the same profile agree on what the stock wheel requires: AVX and what
    it implies; a Penryn lacks SSE4.2, POPCNT and AVX of it."""
    profile = tmp_path / "penryn.json"
    detected = run_tfbuild("detect", "--cpuinfo", str(PENRYN), "--output", str(profile))
    assert detected.returncode == 0, detected.stderr
    wide = {"COLUMNS": "250"}
    proc = run_tfbuild("inspect", str(wheel), "--cache-dir", str(cache), "--host", str(profile),
                       env=wide)  # fmt: skip
    assert proc.returncode == 6, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Verdict for Intel(R) Core(TM)2 Duo CPU T9600")  # answer first
    needs = "needs SSE4.2, POPCNT, AVX; this CPU has up to SSE4.1"
    assert f"will crash here: {needs}" in lines[1]
    summary = next(line for line in lines if line.startswith("needs "))
    assert "AVX (and SSE3, SSSE3, SSE4.1, SSE4.2, POPCNT, which it implies)" in summary
    required = {
        cells[1]: cells[4].split(":")[0]
        for line in lines
        if line.startswith("│ ")
        and len(cells := [c.strip() for c in line.split("│")]) > 5
        and cells[1] != "extension"
    }
    yes = {name for name, answer in required.items() if answer == "yes"}
    assert yes == {"SSE3", "SSSE3", "SSE4.1", "SSE4.2", "POPCNT", "AVX"} & set(required), required
    assert {"SSE4.2", "POPCNT", "AVX"} <= yes and required["AVX2"] == "no"
    plan = run_tfbuild("matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--host",
                       str(profile), env=wide)  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert f"no: {needs}" in " ".join(plan.stdout.split())


def test_verify_says_how_to_get_qemu(tmp_path: Path) -> None:
    wheel = tmp_path / "x-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "x-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: x\nVersion: 1.0\n"
        )
    proc = run_tfbuild("verify", str(wheel), "--cpu", "Haswell-v1", env={"PATH": "/nonexistent"})
    assert proc.returncode == 12
    assert "apt-get install qemu-user" in proc.stderr and "Traceback" not in proc.stderr


def test_verify_is_not_fooled_by_the_folder_it_runs_in(qemu: None, tmp_path: Path) -> None:
    """Run from a source checkout of the package, verify still imports the installed wheel:
    the checkout's copy would exit with code 3 if it were imported instead."""
    wheel = build_wheel(tmp_path, package="shadowed", version="1.0", cflags=[])
    checkout = tmp_path / "checkout"
    (checkout / "shadowed").mkdir(parents=True)
    (checkout / "shadowed" / "__init__.py").write_text("raise SystemExit(3)\n")
    proc = run_tfbuild(
        "verify", str(wheel), "--cpu", "Haswell-v1", "--cache-dir", str(tmp_path / "cache"),
        cwd=checkout, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Haswell-v1: passes" in proc.stdout


POINTER_PRELUDE = """
__attribute__((target("avx512f"), noinline)) void wide(void) {
    __m512 a = _mm512_set1_ps(sink);
    sink = _mm512_reduce_add_ps(_mm512_fmadd_ps(a, a, a));
}
void (*volatile kernel)(void);
"""


def test_a_pointer_call_on_import_is_unproven_and_verify_shows_why(
    qemu: None, tmp_path: Path
) -> None:
    """The oracle: PyInit calls AVX-512 code through a function pointer, with no CPU check.
    The audit cannot see the call, so its verdict for Haswell-v1 is "unproven", not "runs
    here"; qemu shows the truth (SIGILL)."""
    wheel = build_wheel(
        tmp_path, package="pointer", version="1.0", cflags=[], prelude=POINTER_PRELUDE,
        statement="kernel = wide; kernel();",
    )  # fmt: skip
    code, report = inspect(wheel, tmp_path, "--cpu", "Haswell-v1")
    verdict = report["verdict"]
    assert isinstance(verdict, dict) and verdict["runs"] is None, verdict
    assert str(verdict["cpu"]).startswith("unproven: code that runs on load takes the address")
    code, out = verify(wheel, tmp_path, "Haswell-v1")
    assert code == 6 and "Haswell-v1: dies with SIGILL" in out, out
