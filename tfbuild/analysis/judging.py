"""Each config against the baseline, as a report judges it: the margin it answers at (the
design's, or the one asked; under rules 5 and before never below the spread of one process),
that spread beside it, the estimates overall (a config rested under rules 4 as the look it
rested at judged it) and per benchmark, the A/A control (with a warning where it shows the
baseline unlike its own copy), and what the zygotes of a forked session did to the intervals;
how it was judged (Method) beside them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from tfbuild.analysis.basis import Basis
from tfbuild.analysis.estimates import (
    MIN_MARGIN,
    OVERALL,
    Estimate,
    Setup,
    benchmark_estimates,
    indifference,
    noise_margin,
    ranking_estimates,
    verdict,
    zygote_figures,
)
from tfbuild.analysis.reported import Method
from tfbuild.analysis.zygotes import ZygoteFigures


@dataclass(frozen=True, kw_only=True)
class Judged:
    """Each config against the baseline, overall and per benchmark, at the margins."""

    method: Method
    overall: dict[str, Estimate]
    per_benchmark: dict[tuple[str, str], Estimate]
    aa: dict[str, Estimate]
    """The A/A control overall and per benchmark, judged with the configs."""
    zygotes: ZygoteFigures | None
    """What a forked session's own data say of its zygotes (None for fresh processes)."""
    warnings: list[str]


def judged_of(basis: Basis, margin: float | None) -> Judged:
    """The margins (`margin`, else the design's), and each config against the baseline at
    them: overall (a config rested under rules 4 as the look it rested at judged it), per
    benchmark, and the A/A control."""
    setup = basis.setup
    spreads, margins, margin_source, warnings = margins_of(setup, margin)
    overall, control = ranking_estimates(setup, margins[OVERALL])
    per_benchmark, aa = benchmark_estimates(setup, margins)
    if basis.design.sequential:  # a rested config (rules 4) is judged as the look it rested at
        for config, rested in basis.rested.items():
            if config in overall:
                low, high = math.log(rested.low), math.log(rested.high)
                overall[config] = replace(
                    overall[config],
                    ratio=rested.ratio,
                    low=rested.low,
                    high=rested.high,
                    verdict=verdict(low, high, margins[OVERALL]),
                )
    zygotes = zygote_figures(setup, overall)
    if control is not None:
        aa = {OVERALL: control, **aa}
    warnings += aa_warnings(aa)
    method = Method(
        design=basis.design,
        rules=setup.rules,
        split=dict(setup.split),
        weights={b: w for b, w in basis.weights.items() if b in setup.benchmarks},
        margins=margins,
        spreads=spreads,
        margin_source=margin_source,
    )
    return Judged(
        method=method,
        overall=overall,
        per_benchmark=per_benchmark,
        aa=aa,
        zygotes=zygotes,
        warnings=warnings,
    )


def margins_of(
    setup: Setup, given: float | None
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
            spreads[bench] = noise_margin(setup, benches, setup.timeline.last, True)
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
