"""How a report judges each config against the baseline: the margin it answers at and the
spread of one process beside it, from the A/A control, on synthetic sessions whose noise is
set; the warning of an A/A control that shows the baseline unlike its own copy; the estimates
overall and per benchmark at the margins, with the A/A control's; a config rested under rules 4
as the look it rested at judged it; and how it was judged (the method)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from support.replay import SEQUENTIAL, replay_session
from support.synthetic import BASELINE, BENCHMARKS, session

from tfbuild.analysis.basis import basis_of
from tfbuild.analysis.estimates import OVERALL, verdict
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.judging import judged_of
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Results
from tfbuild.results.rules import CURRENT_RULES, SPLIT_6


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


def test_each_config_is_judged_overall_and_per_benchmark_at_the_margin_given() -> None:
    """A margin given (--margin) is every benchmark's and the answer's, and the method says so;
    the A/A control is judged overall and on each benchmark; a fixed session is judged by
    today's rules, which widen for zygotes (fresh processes here: nothing to say of them)."""
    results = session({"fast:default": 1.3}, noise=0.01, rounds=8, seed=2)
    judged = judged_of(basis_of([Session(Path("s.json"), results)], None), 0.1)
    method = judged.method
    assert method.margins == dict.fromkeys([*BENCHMARKS, OVERALL], 0.1)
    assert method.margin_source == "10.0% (given with --margin)"
    assert (method.rules, method.maxt, method.zygotes_widen) == (CURRENT_RULES, True, True)
    assert method.split == SPLIT_6 and method.weights == {}
    assert judged.overall["fast:default"].verdict == "faster"
    assert judged.overall["fast:default"].margin == 0.1
    assert set(judged.per_benchmark) == {("fast:default", b) for b in BENCHMARKS}
    assert set(judged.aa) == {OVERALL, *BENCHMARKS}
    assert judged.zygotes is None and judged.warnings == []


def test_a_rested_config_is_judged_as_the_look_it_rested_at() -> None:
    """Rules 4: the interval a config rested with is its overall estimate in the report, its
    verdict drawn from that interval at the report's margin."""
    results = replay_session(4, replace(SEQUENTIAL, rules=4), 80_001)
    basis = basis_of([Session(Path("s.json"), results)], None)
    judged = judged_of(basis, None)
    margin = judged.method.margins[OVERALL]
    assert basis.rested and BASELINE not in basis.rested
    for config, rested in basis.rested.items():
        e = judged.overall[config]
        assert (e.ratio, e.low, e.high) == (rested.ratio, rested.low, rested.high)
        assert e.verdict == verdict(math.log(e.low), math.log(e.high), margin)
