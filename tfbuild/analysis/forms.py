"""What the sessions' processes found when they checked each model form's outputs against the
as-given form's (results.forms.FormCheck), per build and form: the largest errors any process
saw, how many processes failed the check, whether the outputs varied enough for the check to
mean anything, and what made and ran the form."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfbuild.analysis.sessions import Session
from tfbuild.results.forms import FormCheck


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
        made_by += (
            f"'s converter, {last.interpreter} {last.interpreter_version or '(version unknown)'}"
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
