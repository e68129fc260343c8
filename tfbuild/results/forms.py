"""A model form's check as a benchmark process recorded it: its outputs on the workload's inputs
against the as-given form's (tfbuild/bench/workload_forms.py computes it inside the runtime;
bench/failures.py reads the process's answer), and what made and ran the form. Results keep it
under a run's `form_check`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class OutputCheck:
    """One output tensor of the form against the as-given form's."""

    output: str
    ok: bool
    max_abs: float | None = None
    """The largest absolute error over the elements both forms give finite values for; None
    for outputs compared as they are (strings) and outputs the check could not compare."""
    max_rel: float | None = None
    """The largest error relative to the as-given value, where that value is not 0."""
    nonfinite: int = 0
    """Elements where the form has NaN or Inf and the as-given form has not (or the other way
    round, or Inf of the other sign)."""
    varies: bool | None = None
    """Whether the as-given values differ at all (None where the check could not look)."""
    problem: str | None = None
    """Why the output could not be compared element by element: missing from one form, or
    another shape or dtype."""


@dataclass(frozen=True, kw_only=True)
class FormCheck:
    """A form's outputs against the as-given form's, with the tolerances applied (an element
    passes within atol + rtol x |as-given|) and what made and ran it."""

    form: str
    ok: bool
    atol: float
    rtol: float
    uniform: bool
    """No output varies: every value is one number, so agreeing proves little."""
    outputs: tuple[OutputCheck, ...]
    tensorflow: str | None = None
    """The TensorFlow that froze (and for litert converted) the form."""
    interpreter: str | None = None
    interpreter_version: str | None = None

    @property
    def max_abs(self) -> float | None:
        found = [o.max_abs for o in self.outputs if o.max_abs is not None]
        return max(found) if found else None

    @property
    def max_rel(self) -> float | None:
        found = [o.max_rel for o in self.outputs if o.max_rel is not None]
        return max(found) if found else None


def form_check(data: Mapping[str, Any]) -> FormCheck:
    """A check as results keep it (form_check_json)."""
    return FormCheck(
        form=str(data["form"]),
        ok=bool(data["ok"]),
        atol=float(data["atol"]),
        rtol=float(data["rtol"]),
        uniform=bool(data["uniform"]),
        outputs=tuple(_output(o, o.get("problem")) for o in data["outputs"]),
        tensorflow=data.get("tensorflow"),
        interpreter=data.get("interpreter"),
        interpreter_version=data.get("interpreter_version"),
    )


def _output(data: Mapping[str, Any], problem: str | None) -> OutputCheck:
    """One output's entry, with why it could not be compared element by element."""
    return OutputCheck(
        output=str(data["output"]),
        ok=bool(data["ok"]),
        max_abs=data.get("max_abs"),
        max_rel=data.get("max_rel"),
        nonfinite=int(data.get("nonfinite") or 0),
        varies=data.get("varies"),
        problem=problem,
    )


def form_check_json(check: FormCheck) -> dict[str, Any]:
    """The check's JSON form in results (what `form_check` reads back)."""
    outputs = []
    for o in check.outputs:
        entry: dict[str, Any] = {"output": o.output, "ok": o.ok}
        for name in ("max_abs", "max_rel", "varies", "problem"):
            if getattr(o, name) is not None:
                entry[name] = getattr(o, name)
        if o.nonfinite:
            entry["nonfinite"] = o.nonfinite
        outputs.append(entry)
    data: dict[str, Any] = {
        "form": check.form,
        "ok": check.ok,
        "atol": check.atol,
        "rtol": check.rtol,
        "uniform": check.uniform,
        "outputs": outputs,
    }
    for name in ("tensorflow", "interpreter", "interpreter_version"):
        if getattr(check, name) is not None:
            data[name] = getattr(check, name)
    return data
