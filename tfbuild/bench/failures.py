"""What a finished benchmark process records, and why it failed, in words a user can act on:
from how it ended (a signal, an exit code, a timeout) and the last lines it printed."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tfbuild.results.codec import Fields
from tfbuild.results.forms import FormCheck, OutputCheck
from tfbuild.results.model import RunFailure
from tfbuild.runtime.base import RunOutcome

T = TypeVar("T")

_NUMPY2 = "compiled using NumPy 1.x cannot be run in NumPy 2"


def recorded(
    outcome: RunOutcome, timeout: float, entry: Callable[[Mapping[str, Any]], T]
) -> Fields:
    """The fields a finished process gives its ProcessRecord: how it ended, the payload's
    phases and every benchmark's entry, read by `entry` (samples, or timed steps)."""
    failure = classify(outcome, timeout)
    result = outcome.result or {}
    return {
        "status": "failed" if failure else "ok",
        "wall_s": outcome.wall_s,
        "import_s": result.get("import_s"),
        "smoke_s": result.get("smoke_s"),
        "payload_s": result.get("payload_s"),
        "threads": result.get("threads"),
        "benchmarks": {name: entry(e) for name, e in (result.get("benchmarks") or {}).items()},
        "failure": failure,
        "zygote": outcome.zygote,
    }


def classify(outcome: RunOutcome, timeout: float) -> RunFailure | None:
    """Why a payload run failed; None when it did not fail."""
    tail = outcome.stderr_tail
    if outcome.timed_out:
        return RunFailure(
            kind="timeout",
            reason=f"did not finish within {timeout:.0f} s; killed",
            stderr_tail=tail,
        )
    code = outcome.returncode
    if code < 0:
        number = -code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGILL:
            reason = (
                "this build uses CPU instructions this machine lacks "
                f"(killed by SIGILL, signal {number})"
            )
            return RunFailure(kind="sigill", signal=number, reason=reason, stderr_tail=tail)
        return RunFailure(
            kind="signal",
            signal=number,
            reason=f"killed by {name} (signal {number})",
            stderr_tail=tail,
        )
    result = outcome.result
    if code != 0 or result is None:
        last = _exception_line(outcome.stderr) or f"exit code {code}"
        if result is None or "smoke" not in result:
            if _NUMPY2 in " ".join(outcome.stderr.split()):
                last = (
                    "it was built against NumPy 1.x and NumPy 2 is installed; "
                    'add constraints: ["numpy<2"] to this variant'
                )
            return RunFailure(
                kind="import",
                exit_code=code,
                reason=f"TensorFlow failed to import: {last}",
                stderr_tail=tail,
            )
        return RunFailure(
            kind="exit",
            exit_code=code,
            reason=f"exited with code {code}: {last}",
            stderr_tail=tail,
        )
    return None


def _exception_line(stderr: str) -> str | None:
    """The last 'SomeError: message' line of a traceback, else the last line."""
    lines = stderr.splitlines()
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line.strip()
    return next((line.strip() for line in reversed(lines) if line.strip()), None)


def gpu_fallback(smoke: Mapping[str, Any]) -> str | None:
    """Why a CUDA build's smoke test shows it would run on the CPU; None when TensorFlow sees
    a GPU. A CUDA variant measured on the CPU is a failure, never a result."""
    if smoke.get("gpus"):
        return None
    if not smoke.get("cuda_build"):
        return "built for CUDA, but this TensorFlow is not a CUDA build: it would run on the CPU"
    return (
        "TensorFlow sees no GPU (no device passed through, or the and-cuda libraries or the "
        "driver are missing): it would run on the CPU"
    )


def form_check_of(answer: Mapping[str, Any] | None) -> FormCheck | None:
    """A form's check as a process answered it (workload_forms.compare_outputs and versions),
    as a record; None where it answered none (the as-given form, a form that was not made)."""
    if not answer:
        return None
    outputs = []
    for o in answer["outputs"]:
        problem = None
        if "missing" in o:
            problem = (
                "the as-given form lacks it" if o["missing"] == "as-given" else "the form lacks it"
            )
        elif "form_shape" in o:
            problem = (
                f"{o['form_dtype']} {tuple(o['form_shape'])}, not {o['dtype']} {tuple(o['shape'])}"
            )
        outputs.append(
            OutputCheck(
                output=str(o["output"]),
                ok=bool(o["ok"]),
                max_abs=o.get("max_abs"),
                max_rel=o.get("max_rel"),
                nonfinite=int(o.get("nonfinite") or 0),
                varies=o.get("varies"),
                problem=problem,
            )
        )
    return FormCheck(
        form=str(answer["form"]),
        ok=bool(answer["ok"]),
        atol=float(answer["atol"]),
        rtol=float(answer["rtol"]),
        uniform=bool(answer["uniform"]),
        outputs=tuple(outputs),
        tensorflow=answer.get("tensorflow"),
        interpreter=answer.get("interpreter"),
        interpreter_version=answer.get("interpreter_version"),
    )
