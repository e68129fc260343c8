"""What a session did not measure: a config that failed a benchmark in every round is flagged
with what it missed, and every failure is listed with who and why; the report's problems put
the warnings before them, then the software the builds differ in, then each config flagged."""

from __future__ import annotations

from pathlib import Path

from support.synthetic import session

from tfbuild.analysis.estimates import make_setup
from tfbuild.analysis.gaps import failures_of, gaps_of, problems_of, rounds_text
from tfbuild.analysis.rounds import Rounds, round_table
from tfbuild.analysis.sessions import Session, Timeline
from tfbuild.results.model import VariantRecord


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
    (listed,) = failures_of(sessions)  # one error, four rounds: one line
    assert listed.who == "x:default input-fed"
    assert listed.reason == "rounds 1-4: RuntimeError: boom"
    numpy = {name: VariantRecord(definition={}, status="ready", smoke={"numpy": version})
             for name, version in (("x", "2.3.5"), ("y", "2.4.0"))}  # fmt: skip
    problems = problems_of(sessions, setup, numpy, ["said before"])
    assert problems.flags == gaps and problems.failures == [listed]
    assert problems.warnings[0] == "said before"
    assert problems.warnings[1].startswith("the builds ran different numpy: 2.3.5 (x); 2.4.0 (y)")
    assert problems.warnings[2:] == [
        "x:default: no results for input-fed (overall over the rest); it is ranked on what it "
        "measured"
    ]


def test_a_config_whose_every_benchmark_raised_the_same_is_one_line() -> None:
    """A form the model cannot take raises the same in every benchmark of every round it runs:
    one line names the config, its benchmarks and the rounds."""
    results = session(
        {"x:default:litert": 1.0, "y:default": 1.0}, rounds=3,
        failing={"x:default:litert": ["gru-keras", "input-fed"]},
    )  # fmt: skip
    (listed,) = failures_of([Session(Path("s.json"), results)])
    assert listed.who == "x:default:litert (gru-keras, input-fed)"
    assert listed.reason == "rounds 1-3: RuntimeError: boom"
    assert rounds_text([1, 3, 4, 5, 7]) == "rounds 1, 3-5, 7" and rounds_text([2]) == "round 2"
