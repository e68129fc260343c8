"""The bench machinery without TensorFlow: failure classes, environments, runtimes, summaries."""

from __future__ import annotations

import ast
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from cext import build_wheel
from conftest import REPO

from tfbuild.bench import payload, results, runner, suite
from tfbuild.bench.summary import summarise
from tfbuild.errors import EngineUnavailable
from tfbuild.fetch import Artifact
from tfbuild.matrix import PipSettings, load_matrix
from tfbuild.runtime import PAYLOAD, LocalVenv, RunOutcome, local_env, runtime_kind

INHERIT = PipSettings("inherit", "inherit", "inherit", ())


def outcome(code: int, result: dict[str, Any] | None = None, tail: str = "") -> RunOutcome:
    return RunOutcome(returncode=code, result=result, stderr=tail, wall_s=1.0)


def test_classify_failures() -> None:
    sigill = results.classify(outcome(-signal.SIGILL), 60)
    assert sigill is not None and sigill["kind"] == "sigill"
    assert sigill["reason"] == (
        "this build uses CPU instructions this machine lacks (killed by SIGILL, signal 4)"
    )
    segv = results.classify(outcome(-signal.SIGSEGV, tail="boom"), 60)
    assert segv is not None and segv["reason"] == "killed by SIGSEGV (signal 11)"
    assert segv["stderr_tail"] == "boom"
    tail = "Traceback (most recent call last):\n  ...\nImportError: numpy.core failed to import"
    imported = results.classify(outcome(1, None, tail), 60)
    assert imported is not None and imported["kind"] == "import"
    assert imported["reason"] == (
        "TensorFlow failed to import: ImportError: numpy.core failed to import"
    )
    crashed = results.classify(outcome(3, {"smoke": {}}, "RuntimeError: x"), 60)
    assert crashed is not None and crashed["reason"] == "exited with code 3: RuntimeError: x"
    numpy2 = (
        "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.2 as it may "
        "crash.\n...\nTypeError: Unable to convert function return value to a Python type! "
        "The signature was\n\t() -> handle"
    )
    diagnosed = results.classify(outcome(1, None, numpy2), 60)
    assert diagnosed is not None and 'add constraints: ["numpy<2"]' in diagnosed["reason"]
    late = RunOutcome(returncode=-9, result=None, stderr="", wall_s=61, timed_out=True)
    timeout = results.classify(late, 60)
    assert timeout is not None and timeout["kind"] == "timeout"
    assert results.classify(outcome(0, {"smoke": {}, "benchmarks": {}}), 60) is None


def test_child_env_scrubs_inherited_tuning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    monkeypatch.setenv("KMP_AFFINITY", "verbose")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("KEEP_ME", "yes")
    env = local_env({"OMP_NUM_THREADS": "1"})
    assert env["OMP_NUM_THREADS"] == "1"
    assert "TF_ENABLE_ONEDNN_OPTS" not in env and "KMP_AFFINITY" not in env
    assert "PYTHONPATH" not in env
    assert env["KEEP_ME"] == "yes" and env["PYTHONHASHSEED"] == "0"


def test_runtime_choice() -> None:
    m = load_matrix(REPO / "matrix.yaml")
    stock, built = m.variant("stock"), m.variant("mkl-avx2")
    assert runtime_kind(stock, "auto", engine_reachable=True) == "local"
    assert runtime_kind(built, "auto", engine_reachable=True) == "docker"
    assert runtime_kind(built, "auto", engine_reachable=False) == "local"
    assert runtime_kind(built, "local", engine_reachable=True) == "local"
    with pytest.raises(EngineUnavailable, match="no engine is reachable"):
        runtime_kind(stock, "docker", engine_reachable=False)


def test_payload_and_suite_agree() -> None:
    assert tuple(suite.BENCHMARKS) == payload.BENCHMARKS
    assert set(payload.ITERATIONS) == set(payload.BUILDERS) == set(payload.BENCHMARKS)
    assert suite.SUITE_VERSION == payload.SUITE_VERSION
    for contrast in suite.CONTRASTS:  # a ratio of throughputs needs one unit for both ways
        faster_if, than = suite.BENCHMARKS[contrast.faster_if], suite.BENCHMARKS[contrast.than]
        assert faster_if.unit == than.unit, contrast


def test_payload_imports_only_stdlib_numpy_tensorflow() -> None:
    tree = ast.parse(PAYLOAD.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    allowed = set(sys.stdlib_module_names) | {"numpy", "tensorflow", "__future__"}
    assert imported <= allowed, imported - allowed


def test_local_venv_is_cached_and_rebuilt_when_broken(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, package="tinypkg", version="1.0", cflags=[])
    artifact = Artifact("tiny", wheel, "0" * 64, (), {})
    venv = LocalVenv(artifact, tmp_path / "cache", INHERIT)
    assert venv.prepare() is True
    assert venv.prepare() is False  # reused
    again = LocalVenv(artifact, tmp_path / "cache", INHERIT)
    assert again.path == venv.path and again.prepare() is False
    (venv.path / "bin" / "python").unlink()  # broken
    assert venv.prepare() is True
    check = venv.interpreter
    assert check.exists()
    constrained = LocalVenv(
        Artifact("tiny", wheel, "0" * 64, ("numpy<2",), {}), tmp_path / "cache", INHERIT
    )
    assert constrained.path != venv.path  # constraints are part of the key


def synthetic_document(ratio: float = 1.0) -> dict[str, Any]:
    """A results document with known numbers, for the summary arithmetic."""

    def run(r: int, config: str, value: float) -> dict[str, Any]:
        samples = [{"wall_s": 1.0, "cpu_s": 1.0, "throughput": value * f} for f in (0.9, 1, 1.1)]
        entry = {"samples": samples, "build_s": 0.1, "trace_s": 0.2, "warmup_s": 0.05}
        return {
            "round": r,
            "config": config,
            "status": "ok",
            "failure": None,
            "wall_s": 5.0,
            "payload_s": 4.5,
            "import_s": 2.0,
            "smoke_s": 0.1,
            "benchmarks": {"matmul-fed": entry},
        }

    runs = []
    for r in range(4):
        runs += [run(r, "a:t", 100.0), run(r, "a:t~aa", 100.0 * ratio), run(r, "b:t", 50.0)]
    return {
        "session": {
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": "2026-01-01T00:10:00+00:00",
            "stop": {"reason": "fixed", "round": 4, "message": "the 4 rounds of a fixed design"},
        },
        "suite": {"benchmarks": ["matmul-fed"], "units": {"matmul-fed": "GFLOP/s"}},
        "baseline": {"config": "a:t", "aa_config": "a:t~aa"},
        "configs": [
            {"key": k, "peak": {"gflops": 200.0, "assumptions": "2 cores x 3.13 GHz x 16 x 2"}}
            for k in ("a:t", "b:t", "a:t~aa")
        ],
        "failures": [{"variant": "c", "stage": "plan", "reason": "needs AVX512F"}],
        "runs": runs,
    }


def test_summary_arithmetic() -> None:
    s = summarise(synthetic_document(ratio=1.02))
    assert s.cells[("a:t", "matmul-fed")].median == pytest.approx(100.0)
    assert s.cells[("b:t", "matmul-fed")].rounds == 4
    assert s.aa_ratio["matmul-fed"] == pytest.approx(1.02)
    assert s.phases == pytest.approx(
        {
            "start and exit": 0.5,
            "import": 2.0,
            "smoke check": 0.1,
            "build": 0.1,
            "trace": 0.2,
            "warm-up": 0.05,
            "timed": 3.0,
            "process": 5.0,
        }
    )
    assert s.stop == "the 4 rounds of a fixed design"
    assert s.elapsed_s == 600 and s.runs == 12
    assert s.failures == [("c", "plan: needs AVX512F")]
    assert s.peak["a:t"] == 200.0
    assert s.peak_note == (
        "pk = share of the theoretical FP32 peak, for a:t: "
        "200 GFLOP/s = 2 cores x 3.13 GHz x 16 x 2"
    )


def test_results_load_refuses_other_files(tmp_path: Path) -> None:
    from tfbuild.errors import ResultsError

    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"schema": "tfbuild.host/1"}))
    with pytest.raises(
        ResultsError, match=r"expected 'tfbuild\.results/2' or 'tfbuild\.results/1'"
    ):
        results.load(bad)
    bad.write_text("{")
    with pytest.raises(ResultsError, match="not a JSON results file"):
        results.load(bad)


def test_results_record_paths_below_the_session_folder_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel in the project's store is recorded as the user types it there (and as the
    "use this" block prints it); a path elsewhere stays absolute."""
    monkeypatch.chdir(tmp_path)
    wheel = tmp_path / "wheels" / "tf2.21-py3.11-stock" / "tf.whl"
    assert runner.portable(wheel) == "wheels/tf2.21-py3.11-stock/tf.whl"
    assert runner.portable(Path("/srv/store/tf.whl")) == "/srv/store/tf.whl"
