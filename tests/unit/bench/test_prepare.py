"""A session told which builds failed just before it (`tfbuild run` builds, then benches)
records each of those variants as failed at its build, with the build's own message and log,
not as a variant that has no wheel yet; the others are prepared as ever."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.env import FIXTURES, TOY

from tfbuild.bench.options import SessionOptions, Workspace
from tfbuild.bench.prepare import prepare
from tfbuild.bench.session import new_results
from tfbuild.config.load import load_matrix
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.plan.make import make_plan
from tfbuild.progress import QuietReporter
from tfbuild.store import WheelStore


@pytest.mark.parametrize(
    ("cpuinfo", "avx512"),
    [("haswell-xeon-e5-2680v3", False), ("sapphirerapids-xeon-platinum-8488c", True)],
)
def test_a_failed_build_is_recorded_as_such(tmp_path: Path, cpuinfo: str, avx512: bool) -> None:
    """On a saved profile with AVX-512 and on one without, whatever this machine has."""
    matrix = load_matrix(TOY / "matrix.yaml")
    plan = make_plan(matrix, profile_from_cpuinfo(FIXTURES / "cpuinfo" / f"{cpuinfo}.cpuinfo"))
    message = (
        "avx2-fma: the build script exited with code 128\n"
        f"--- last lines of {tmp_path / 'build.log'} ---\n"
        "fatal: unable to access 'https://github.com/tensorflow/tensorflow.git/'"
    )
    options = SessionOptions(suite=matrix.suite.preset(None), build_failures={"avx2-fma": message})
    workspace = Workspace(
        store=WheelStore(tmp_path / "wheels"),
        cache_dir=tmp_path / "cache",
        results_dir=tmp_path / "results",
        engine_reachable=False,
    )
    results, runtimes = prepare(
        new_results(plan, options), plan, options, workspace, QuietReporter(), lambda r: r
    )
    assert runtimes == {}
    failures = {f.variant: f for f in results.failures}
    built = failures["avx2-fma"]
    assert built.stage == "build"
    assert built.reason == (
        "its build failed: the build script exited with code 128; the log: "
        f"{tmp_path / 'build.log'}"
    )
    assert "fatal: unable to access" in built.details["log_tail"]
    assert results.variant("avx2-fma").status == "failed"
    never = failures["avx512"]  # not built at all: the store has no wheel for it
    if avx512:
        assert never.stage == "fetch" and "tfbuild build --variant avx512" in never.reason
    else:
        assert (never.stage, never.reason) == (
            "plan",
            "cannot run here: needs AVX512F; this CPU has up to AVX2",
        )
