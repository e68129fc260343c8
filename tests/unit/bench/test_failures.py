"""Why a benchmark process failed, as a user reads it: signals, exit codes, imports, timeouts, and
a CUDA build that would run on the CPU."""

from __future__ import annotations

import signal
from typing import Any

from tfbuild.bench.failures import classify, gpu_fallback
from tfbuild.runtime.base import RunOutcome


def outcome(code: int, result: dict[str, Any] | None = None, tail: str = "") -> RunOutcome:
    return RunOutcome(returncode=code, result=result, stderr=tail, wall_s=1.0)


def test_classify_failures() -> None:
    sigill = classify(outcome(-signal.SIGILL), 60)
    assert sigill is not None and sigill.kind == "sigill"
    assert sigill.reason == (
        "this build uses CPU instructions this machine lacks (killed by SIGILL, signal 4)"
    )
    segv = classify(outcome(-signal.SIGSEGV, tail="boom"), 60)
    assert segv is not None and segv.reason == "killed by SIGSEGV (signal 11)"
    assert segv.stderr_tail == "boom"
    tail = "Traceback (most recent call last):\n  ...\nImportError: numpy.core failed to import"
    imported = classify(outcome(1, None, tail), 60)
    assert imported is not None and imported.kind == "import"
    assert imported.reason == (
        "TensorFlow failed to import: ImportError: numpy.core failed to import"
    )
    crashed = classify(outcome(3, {"smoke": {}}, "RuntimeError: x"), 60)
    assert crashed is not None and crashed.reason == "exited with code 3: RuntimeError: x"
    numpy2 = (
        "A module that was compiled using NumPy 1.x cannot be run in\nNumPy 2.0.2 as it may "
        "crash.\n...\nTypeError: Unable to convert function return value to a Python type! "
        "The signature was\n\t() -> handle"
    )
    diagnosed = classify(outcome(1, None, numpy2), 60)
    assert diagnosed is not None and 'add constraints: ["numpy<2"]' in diagnosed.reason
    late = RunOutcome(returncode=-9, result=None, stderr="", wall_s=61, timed_out=True)
    timeout = classify(late, 60)
    assert timeout is not None and timeout.kind == "timeout"
    assert classify(outcome(0, {"smoke": {}, "benchmarks": {}}), 60) is None


def test_a_cuda_build_that_sees_no_gpu_is_a_failure() -> None:
    """The smoke test's record decides (no GPU here, so the records are written out: a CPU
    build, a CUDA build without a device, a CUDA build that sees one)."""
    cpu_only = gpu_fallback({"cuda_build": False, "gpus": []})
    assert cpu_only is not None and "not a CUDA build" in cpu_only
    no_device = gpu_fallback({"cuda_build": True, "gpus": []})
    assert no_device is not None and "sees no GPU" in no_device
    assert gpu_fallback({"cuda_build": True, "gpus": ["/physical_device:GPU:0"]}) is None
