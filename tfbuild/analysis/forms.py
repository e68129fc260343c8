"""What the sessions' processes found when they checked each model form's outputs against the
as-given form's (results.forms.FormCheck), per build and form: the largest errors any process
saw, how many processes failed the check, whether the outputs varied enough for the check to
mean anything, and what made and ran the form."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfbuild.analysis.answer import Answer
from tfbuild.analysis.sessions import Session
from tfbuild.config.values import QUANTIZED
from tfbuild.results.forms import FormCheck
from tfbuild.results.model import ConfigEntry


@dataclass(frozen=True)
class FormFigures:
    """One build's form, over every process that checked it."""

    variant: str
    form: str
    processes: int
    failed: int
    """Processes whose outputs were outside the tolerances: the config is then never ranked
    on them (they measured nothing)."""
    max_abs: float | None
    max_rel: float | None
    nonfinite: int
    """The most NaN/Inf elements one process saw where the as-given form has none."""
    uniform: bool
    """Some process saw outputs that are all one value: agreeing with them proves little."""
    atol: float
    rtol: float
    made_by: str
    """What made and ran the form: the TensorFlow that converted it, the interpreter."""


def form_figures(sessions: Sequence[Session]) -> tuple[FormFigures, ...]:
    """Every (variant, form) some process checked, in the order the sessions list configs."""
    checks: dict[tuple[str, str], list[FormCheck]] = {}
    for s in sessions:
        for c in s.results.configs:  # in the sessions' order of configs
            checks.setdefault((c.variant, c.form), [])
        variant_of = {c.key: c.variant for c in s.results.configs}
        for run in s.results.runs:
            if run.form_check is not None and run.config in variant_of:
                key = (variant_of[run.config], run.form_check.form)
                checks.setdefault(key, []).append(run.form_check)
    return tuple(_figures(v, form, found) for (v, form), found in checks.items() if found)


def _figures(variant: str, form: str, checks: list[FormCheck]) -> FormFigures:
    worst_abs = [c.max_abs for c in checks if c.max_abs is not None]
    worst_rel = [c.max_rel for c in checks if c.max_rel is not None]
    last = checks[-1]
    made_by = f"TensorFlow {last.tensorflow or 'unknown'}"
    if last.interpreter:
        quantized = " (int8, calibrated on the workload's inputs)" if form in QUANTIZED else ""
        made_by += (
            f"'s converter{quantized}, "
            f"{last.interpreter} {last.interpreter_version or '(version unknown)'}"
        )
    return FormFigures(
        variant=variant,
        form=form,
        processes=len(checks),
        failed=sum(not c.ok for c in checks),
        max_abs=max(worst_abs) if worst_abs else None,
        max_rel=max(worst_rel) if worst_rel else None,
        nonfinite=max(sum(o.nonfinite for o in c.outputs) for c in checks),
        uniform=any(c.uniform for c in checks),
        atol=last.atol,
        rtol=last.rtol,
        made_by=made_by,
    )


def with_accuracy_cost(
    said: Answer,
    config: str | None,
    configs: Mapping[str, ConfigEntry],
    forms: Sequence[FormFigures],
) -> Answer:
    """The answer, and when it tells a person to switch to a quantized form, what the form's
    outputs cost in accuracy right beneath it: a speedup is never shown without its errors."""
    entry = configs.get(config or "")
    if said.kind != "use" or entry is None or entry.form not in QUANTIZED:
        return said
    found = next((f for f in forms if (f.variant, f.form) == (entry.variant, entry.form)), None)
    if found is None or found.max_abs is None:
        cost = "its outputs were never compared with the as-given form's"
    else:
        cost = (
            f"its outputs differ from the as-given form's by up to {found.max_abs:.2g} "
            f"(max abs), {found.max_rel or 0:.2g} (max rel), allowed {found.atol:g} + "
            f"{found.rtol:g} x |as-given| (--atol, --rtol)"
        )
    line = (
        f"{config} is quantized to int8: {cost}; its speed is bought with that, so check it "
        "on your own data before you switch."
    )
    lines = (*said.lines[:1], line, *said.lines[1:])
    return dataclasses.replace(said, lines=lines)
