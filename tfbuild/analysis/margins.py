"""The margin a report answers at (the design's, or the one asked; under rules 5 and before
never below the spread of one process), that spread beside it, and the warnings of an A/A
control that shows the baseline unlike its own copy."""

from __future__ import annotations

from collections.abc import Mapping

from tfbuild.analysis.estimates import (
    MIN_MARGIN,
    OVERALL,
    Estimate,
    Setup,
    indifference,
    noise_margin,
)
from tfbuild.analysis.rounds import Rounds


def margins_of(
    setup: Setup, logs: Rounds, given: float | None
) -> tuple[dict[str, float], dict[str, float], str, list[str]]:
    """The spread of one process (the A/A control's robust sd(A - A') / sqrt(2), at its 90 %
    lower bound) per benchmark and overall, and the margins: `given`, else the design's
    indifference margin (estimates.indifference: under rules 5 and before never below that
    spread)."""
    spreads = {b: MIN_MARGIN for b in [*setup.benchmarks, OVERALL]}
    warnings = []
    if setup.aa is None:
        warnings.append(
            "no A/A control in these results: the spread of one process of this machine is unknown"
        )
    else:
        for bench in [OVERALL, *setup.benchmarks]:
            benches = setup.benchmarks if bench == OVERALL else (bench,)
            spreads[bench] = noise_margin(setup, logs, benches, setup.timeline.last, True)
    margins = {
        b: given if given is not None else indifference(setup, spread)
        for b, spread in spreads.items()
    }
    wanted = "the design's" if setup.design.resolve is not None else "the default"
    spread = f"{spreads[OVERALL]:.1%} here by the A/A control" if setup.aa else "unknown"
    if given is not None:
        source = f"{given:.1%} (given with --margin)"
    elif setup.rulebook.standard:
        source = (
            f"{margins[OVERALL]:.1%}: a config within it of the fastest counts as the fastest "
            f"({wanted}; the spread of one process of the same build is at least {spread})"
        )
    else:
        source = (
            f"{margins[OVERALL]:.1%}: a config within it of the fastest counts as the fastest "
            f"({wanted}, never below the spread of one process of the same build"
            + (f", at least {spread})" if setup.aa else ")")
        )
    return spreads, margins, source, warnings


def aa_warnings(aa: Mapping[str, Estimate]) -> list[str]:
    """A warning for each A/A control (overall, per benchmark) that shows the baseline unlike
    its own copy."""
    warnings = []
    for bench, e in aa.items():
        if not e.low <= 1.0 <= e.high:
            where = "overall" if bench == OVERALL else f"on {bench}"
            warnings.append(
                f"the A/A control (the baseline against its own copy) is {e.ratio:.3f}x "
                f"[{e.low:.3f}, {e.high:.3f}] {where}: this machine showed one build unlike "
                "itself; rerun it on a quieter machine"
            )
    return warnings
