"""Per-round values of a tiny session built by hand (two configs, three rounds, two benchmarks,
one benchmark failing once): each process's value is the median of its samples, taken as log
throughput; a config's speed in a round is the (weighted) mean over the benchmarks, only in
rounds that measured them all; the paired differences are the config's speed minus its
reference's (the mean of the references present) round by round; and each forked process is
placed with the zygote it came from (named, or counted in blocks of five before names)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from support.synthetic import session

from tfbuild.analysis.rounds import (
    Rounds,
    differences,
    raw_samples,
    round_table,
    shared_rounds,
    zygote_table,
)
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import BenchmarkResult, ProcessPath, Run, Sample

BASE, FAST, OTHER = "base:default", "fast:default", "other:default"
log = math.log


def run(config: str, round_: int, values: Mapping[str, Sequence[float] | None],
        zygote: str | None = None) -> Run:  # fmt: skip
    """A process's samples per benchmark (None: the benchmark raised)."""
    benches = {
        b: BenchmarkResult(samples=tuple(Sample(wall_s=0.1, cpu_s=0.1, throughput=t) for t in v))
        if v is not None else BenchmarkResult(error="RuntimeError: boom")
        for b, v in values.items()
    }  # fmt: skip
    return Run(round=round_, position=0, config=config, status="ok", started_at=None,
               wall_s=1.0, benchmarks=benches, zygote=zygote)  # fmt: skip


def of(runs: Sequence[Run], sid: str = "s1", processes: ProcessPath = "fresh") -> Session:
    made = session({}, rounds=1, aa=False, session_id=sid)
    results = replace(made, runs=tuple(runs), suite=replace(made.suite, processes=processes))
    return Session(Path(f"{sid}.json"), results)


TINY = [
    run(BASE, 0, {"a": [100.0, 110.0, 90.0], "b": [50.0]}),
    run(FAST, 0, {"a": [200.0, 220.0, 180.0], "b": [75.0]}),
    run(BASE, 1, {"a": [120.0], "b": [60.0]}),
    run(FAST, 1, {"a": [150.0], "b": [90.0]}),
    run(BASE, 2, {"a": [80.0], "b": None}),
    run(FAST, 2, {"a": [160.0], "b": [40.0]}),
]
"""The baseline's and fast's processes, three rounds; the baseline's b raised in round 2."""


def tiny() -> Rounds:
    return Rounds(round_table([of(TINY)]))


def test_the_round_table_holds_each_processs_median_by_session_and_round() -> None:
    table = round_table([of(TINY)])
    assert table[(BASE, "a")] == {("s1", 0): 100.0, ("s1", 1): 120.0, ("s1", 2): 80.0}
    assert table[(BASE, "b")] == {("s1", 0): 50.0, ("s1", 1): 60.0}  # round 2 raised
    assert table[(FAST, "a")] == {("s1", 0): 200.0, ("s1", 1): 150.0, ("s1", 2): 160.0}


def test_raw_samples_are_every_sample_of_every_session_in_order() -> None:
    found = raw_samples([of(TINY), of(TINY[:2], sid="s2")])
    assert found[(BASE, "a")] == [100.0, 110.0, 90.0, 120.0, 80.0, 100.0, 110.0, 90.0]
    assert found[(FAST, "b")] == [75.0, 90.0, 40.0, 75.0]
    assert found[(BASE, "b")] == [50.0, 60.0, 50.0]  # nothing of round 2's, which raised


def test_rounds_hold_log_throughput_and_a_speed_only_where_every_benchmark_measured() -> None:
    logs = tiny()
    assert logs.get((BASE, "a")) == {("s1", 0): log(100), ("s1", 1): log(120), ("s1", 2): log(80)}
    assert logs.get(("missing", "a")) == {}
    assert logs.speed(BASE, ["a", "b"], None) == pytest.approx(
        {("s1", 0): (log(100) + log(50)) / 2, ("s1", 1): (log(120) + log(60)) / 2}
    )
    assert list(logs.speed(FAST, ["a", "b"], None)) == [("s1", 0), ("s1", 1), ("s1", 2)]
    assert list(logs.speed(FAST, ["a", "b"], 2)) == [("s1", 0), ("s1", 1)]  # before round 2


def test_weights_tilt_the_speed_towards_a_benchmark_and_none_at_all_weigh_equally() -> None:
    weighed = Rounds(round_table([of(TINY)]), weights={"a": 3.0})
    assert weighed.speed(BASE, ["a", "b"], None)[("s1", 0)] == pytest.approx(
        (3 * log(100) + log(50)) / 4
    )
    nothing = Rounds(round_table([of(TINY)]), weights={"a": 0.0, "b": 0.0})
    assert nothing.speed(BASE, ["a", "b"], None)[("s1", 0)] == pytest.approx(log(5000) / 2)


def test_differences_pair_the_configs_round_by_round() -> None:
    """Over both benchmarks only rounds 0 and 1 pair (the baseline has no speed in round 2):
    round 0 is half of log(2 x 1.5), round 1 half of log(1.25 x 1.5)."""
    logs = tiny()
    assert differences(logs, FAST, [BASE], ["a", "b"]) == pytest.approx(
        [log(3.0) / 2, log(1.875) / 2]
    )
    assert differences(logs, FAST, [BASE], ["a"]) == pytest.approx([log(2), log(1.25), log(2)])
    assert differences(logs, FAST, [BASE], ["a"], upto=1) == pytest.approx([log(2)])
    assert shared_rounds(logs, FAST, [BASE], ["a", "b"]) == [("s1", 0), ("s1", 1)]
    assert shared_rounds(logs, FAST, [], ["a", "b"]) == [("s1", 0), ("s1", 1), ("s1", 2)]


def test_against_several_references_a_round_takes_the_mean_of_those_present() -> None:
    """Another config ran in rounds 0 and 2 only: fast is compared with the mean of it and the
    baseline there, with the baseline alone in round 1."""
    other = [run(OTHER, 0, {"a": [400.0]}), run(OTHER, 2, {"a": [20.0]})]
    logs = Rounds(round_table([of([*TINY, *other])]))
    assert differences(logs, FAST, [BASE, OTHER], ["a"]) == pytest.approx(
        [log(200) - (log(100) + log(400)) / 2, log(150 / 120), log(160) - (log(80) + log(20)) / 2]
    )
    sparse = Rounds(round_table([of([TINY[1], TINY[2], TINY[3], TINY[5], *other])]))
    # the baseline in round 1 only: a round pairs with any reference present in it
    assert shared_rounds(sparse, FAST, [BASE, OTHER], ["a"]) == [("s1", 0), ("s1", 1), ("s1", 2)]
    assert shared_rounds(sparse, FAST, [OTHER], ["a"]) == [("s1", 0), ("s1", 2)]
    assert shared_rounds(sparse, FAST, [BASE], ["a"]) == [("s1", 1)]


def test_a_run_added_shows_in_the_speeds_asked_for_before() -> None:
    logs = tiny()
    assert ("s1", 3) not in logs.speed(FAST, ["a"], None)
    logs.memo[("anything",)] = 1
    logs.add("s1", run(FAST, 3, {"a": [300.0, 100.0, 500.0]}))
    assert logs.speed(FAST, ["a"], None)[("s1", 3)] == pytest.approx(log(300))
    assert logs.memo == {}  # what was computed from fewer rounds is forgotten
    assert logs.zygote(FAST, ("s1", 3)) == "fast:default@s1:3"  # a fresh process: its own


def test_forked_processes_without_names_come_five_to_a_zygote() -> None:
    """Seven processes of the baseline forked before results named zygotes: the first five
    from its first zygote, the next two from the second; named ones keep their names; fresh
    ones have none."""
    forked = [run(BASE, r, {"a": [100.0]}) for r in range(7)]
    table = zygote_table([of(forked, processes="forked")])
    assert [table[(BASE, ("s1", r))] for r in range(7)] == ["s1:base:default:0"] * 5 + [
        "s1:base:default:1"
    ] * 2
    named = [run(FAST, 0, {"a": [1.0]}, zygote="z7"), run(FAST, 1, {"a": [1.0]})]
    assert zygote_table([of(named)]) == {(FAST, ("s1", 0)): "z7"}
    logs = Rounds(round_table([of(named)]), zygote_table([of(named)]))
    assert logs.zygote(FAST, ("s1", 0)) == "z7"
    assert logs.zygote(FAST, ("s1", 1)) == "fast:default@s1:1"
