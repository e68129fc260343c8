"""What a session did not measure: a config that failed a benchmark in every round is flagged
with what it missed, and every failure is listed with who and why."""

from __future__ import annotations

from pathlib import Path

from support.synthetic import session

from tfbuild.analysis.estimates import make_setup
from tfbuild.analysis.gaps import failures_of, gaps_of
from tfbuild.analysis.rounds import Rounds, round_table
from tfbuild.analysis.sessions import Session, Timeline


def test_a_config_that_failed_a_benchmark_is_flagged_with_it() -> None:
    results = session(
        {"x:default": 1.0, "y:default": 1.0}, rounds=4, failing={"x:default": ["input-fed"]}
    )
    sessions = [Session(Path("s.json"), results)]
    logs = Rounds(round_table(sessions))
    setup = make_setup(
        results, ["x:default", "y:default"], logs, results.design, results.baseline.aa_config,
        Timeline((4,)),
    )  # fmt: skip
    gaps = gaps_of(sessions, setup)
    assert gaps["x:default"].missing == ("input-fed",)
    assert gaps["x:default"].failed_benchmarks == ("input-fed",)
    assert not gaps["x:default"].clean and gaps["y:default"].clean
    assert "no results for input-fed (overall over the rest)" in gaps["x:default"].text()
    listed = failures_of(sessions)
    assert len(listed) == 4
    assert all(t.who == "x:default input-fed" for t in listed)
    assert listed[0].reason == "round 1: RuntimeError: boom"
