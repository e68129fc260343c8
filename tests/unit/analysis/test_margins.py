"""The margin a report answers at and the spread of one process beside it, from the A/A
control, on synthetic sessions whose noise is set; and the warning of an A/A control that shows
the baseline unlike its own copy."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from support.synthetic import session

from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Results


def analyse(results: Results) -> HostReport:
    return analyse_host([Session(Path("synthetic.json"), results)])


def test_a_slow_aa_copy_is_reported() -> None:
    report = analyse(session({}, aa_effect=1.15, noise=0.01, seed=4))
    assert report.figures.aa[OVERALL].verdict == "faster"
    assert any("showed one build unlike itself" in w for w in report.problems.warnings)
    assert report.answer.kind == "inconclusive" and report.decision.cause == "aa"


def test_the_margin_is_the_designs_whatever_the_spread_of_one_process() -> None:
    """The spread is the robust sd of one process (of the A/A log ratio, over sqrt 2; its 90 %
    lower bound), not the far end of the A/A interval, and never below 2 %; the margin is the
    design's 5 % however noisy the machine (today's rules: noise changes the rounds, never the
    question), and the header says the spread beside it."""
    quiet = analyse(session({}, noise=0.002, seed=1))
    assert quiet.method.spreads[OVERALL] == 0.02 and quiet.method.margins[OVERALL] == 0.05
    noisy = analyse(session({}, noise=0.06, rounds=40, seed=1))
    # per-round A/A log ratios have sd sqrt(2) * 6 % / sqrt(3 benchmarks): one process 3.5 %
    assert noisy.method.spreads[OVERALL] == pytest.approx(0.06 / math.sqrt(3), rel=0.3)
    assert noisy.method.margins[OVERALL] == 0.05
    shifted = analyse(session({}, noise=0.06, rounds=40, seed=1, aa_effect=1.04))
    assert shifted.method.spreads[OVERALL] == pytest.approx(noisy.method.spreads[OVERALL], rel=0.05)
    loud = analyse(session({}, noise=0.2, rounds=40, seed=1))
    assert loud.method.spreads[OVERALL] > 0.05 and loud.method.margins[OVERALL] == 0.05
    assert (
        f"at least {loud.method.spreads[OVERALL]:.1%} here by the A/A control"
        in loud.method.margin_source
    )
    assert loud.answer.margin == 0.05
