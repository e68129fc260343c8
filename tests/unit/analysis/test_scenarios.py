"""The answer a report leads with, against a known truth: sessions whose true speeds are set
(tfbuild.analysis.scenarios) run through the session's own rounds, looks and stop, answered by
the report, scored at the margin the answer names. At a smaller size than the committed run
that docs/reference.md shows (tests/fixtures/scenarios.json), with fixed seeds."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.cli import RESULTS, run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.analysis.estimates import OVERALL, Estimate
from tfbuild.analysis.scenarios import (
    MARGIN,
    PROCESS_S,
    Truth,
    benchmark_wrong,
    by_name,
    run_scenarios,
    score,
    simulate,
)
from tfbuild.results.model import AA_SUFFIX, DECISIONS, Design
from tfbuild.runtime.forked import CHILDREN

SESSIONS = 30
CLEAR = {"twice", "two-leaders", "single", "heavy-tails", "drift"}
"""Sequential sessions of the default design whose fastest config is ahead of the baseline by
twice the margin or more: decided and right in at least 80 % of them."""
CHECKED = [
    "null-2",
    "null-6",
    "half",
    "margin",
    "beyond",
    "twice",
    "two-leaders",
    "quiet-noisy",
    "slower",
    "single",
    "heavy-tails",
    "drift",
    "fixed-2",
    "fixed-10",
    "zygote-null",
    "zygote-twice",
    "zygote-all",
]


def test_a_wrong_answer_is_scored_wrong() -> None:
    """The scoring itself, on answers whose truth is known without a session."""
    ahead = Truth({"c01:default": 1.10, "c02:default": 1.07})
    assert score(ahead, "use", "c01:default", MARGIN) is True
    assert score(ahead, "use", "c02:default", MARGIN) is True  # 2.7 % behind: within
    assert score(ahead, "use", "c03:default", MARGIN) is False  # 10 % behind
    assert score(ahead, "keep", None, MARGIN) is False
    assert score(ahead, "keep", None, 0.12) is True  # at a 12 % margin nothing is beyond it
    assert score(Truth({"c01:default": 1.05}), "keep", None, MARGIN) is True
    assert score(Truth({"c01:default": 0.9}), "use", "c02:default", MARGIN) is True
    assert score(ahead, "inconclusive", None, MARGIN) is None


def _verdict(config: str, verdict: str, margin: float = MARGIN) -> dict[tuple[str, str], Estimate]:
    e = Estimate(config, "gru-keras", 1.0, 0.9, 1.1, 0.99, 0.5, 10, 0.05, margin, verdict)
    return {(config, "gru-keras"): e, (config, OVERALL): replace(e, verdict="slower")}


def test_a_wrong_benchmark_verdict_is_counted_wrong() -> None:
    """Per-benchmark verdicts against a truth known without a session (the overall estimate is
    not a benchmark's, and not counted)."""
    ahead = Truth({"c01:default": 1.10, "c02:default": 1.03})
    assert benchmark_wrong(ahead, _verdict("c01:default", "faster")) == 0
    assert benchmark_wrong(ahead, _verdict("c01:default", "equivalent")) == 1
    assert benchmark_wrong(ahead, _verdict("c01:default", "slower")) == 1
    assert benchmark_wrong(ahead, _verdict("c01:default", "equivalent", 0.12)) == 0
    assert benchmark_wrong(ahead, _verdict("c02:default", "faster")) == 1
    assert benchmark_wrong(ahead, _verdict("c02:default", "equivalent")) == 0
    assert benchmark_wrong(ahead, _verdict("c02:default", "undecided")) == 0
    biased = Truth({}, aa_bias=1.08)
    assert benchmark_wrong(biased, _verdict("base:default" + AA_SUFFIX, "faster")) == 0
    assert benchmark_wrong(biased, _verdict("base:default" + AA_SUFFIX, "equivalent")) == 1


@pytest.mark.slow
@pytest.mark.parametrize("name", CHECKED)
def test_answers_are_seldom_wrong_and_decided_when_the_truth_is_clear(name: str) -> None:
    """Also the per-benchmark verdicts: a session with one the truth contradicts is as rare as
    a wrong answer, also where the children of a zygote resemble each other."""
    (tally,) = run_scenarios(by_name([name]), SESSIONS)
    assert tally.wrong <= 0.05 * SESSIONS, tally
    assert tally.benchmark_wrong <= 0.05 * SESSIONS, tally
    if name in CLEAR:
        assert tally.right >= 0.8 * SESSIONS, tally


def _between_zygotes(icc: float, overall: bool) -> float:
    """The share of a config's per-benchmark log throughput variance between its zygotes, in
    one fixed session of 30 rounds (a one-way analysis of variance, groups of CHILDREN)."""
    truth = Truth({}, zygote=0.0 if overall else icc, zygote_overall=icc if overall else 0.0)
    scenario = replace(by_name(["null-6"])[0], truth=truth, design=Design(kind="fixed", rounds=30))
    results, _ = simulate(scenario, 0)
    shares = []
    for config in ("c01:default", "c02:default", "c03:default", "c04:default"):
        runs = sorted((r for r in results.runs if r.config == config), key=lambda r: r.round)
        for name in results.suite.benchmarks:
            logs = [math.log(r.benchmarks[name].samples[0].throughput) for r in runs]
            groups = [logs[k : k + CHILDREN] for k in range(0, len(logs), CHILDREN)]
            mean = sum(logs) / len(logs)
            within = sum((x - sum(g) / len(g)) ** 2 for g in groups for x in g) / (
                len(logs) - len(groups)
            )
            between = (
                CHILDREN * sum((sum(g) / len(g) - mean) ** 2 for g in groups) / (len(groups) - 1)
            )
            shares.append(max(0.0, (between - within) / (between + (CHILDREN - 1) * within)))
    return sum(shares) / len(shares)


def test_the_children_of_a_simulated_zygote_resemble_each_other_as_set() -> None:
    """The zygote scenarios draw what they say: a config's processes, in groups of CHILDREN
    in the order they ran, resemble each other at about the intraclass correlation set, per
    benchmark or as a whole, and not at all when none is set."""
    assert _between_zygotes(0.0, False) < 0.1
    assert 0.2 < _between_zygotes(0.3, False) < 0.45
    assert _between_zygotes(0.8, False) > 0.6
    assert _between_zygotes(0.8, True) > 0.6


def test_a_simulated_process_costs_what_a_forked_one_measured() -> None:
    """PROCESS_S is the session seconds per process of the default way (forked) in the
    committed local 2.21.0 run of scripts/process-cost."""
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "process-cost"), "--summary",
         str(REPO / "docs" / "measurements" / "process-cost-local-2.21.json.gz")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("2.21.0, local")]
    assert f"/ {PROCESS_S:.2f} s" in line, line


@pytest.mark.slow
def test_a_session_that_stops_on_its_answer_is_answered_as_it_stopped() -> None:
    """Rules 5: the session stops at the look that knows a config within the margin of the
    fastest; its report answers from that very look (the same configs within the margin, the
    same intervals for the configs that were still running), the looks replay without a
    difference, and the stop message names what the answer does."""
    stopped = 0
    for seed in range(12):
        for name in ("twice", "half", "quiet-noisy"):
            results, report = simulate(by_name([name])[0], seed)
            stop = results.session.stop
            assert stop is not None and not report.replay, report.replay
            if stop.reason != "resolved":
                continue
            stopped += 1
            last, base = (results.looks or ())[-1], results.baseline.config
            assert last.round == stop.round == report.rounds
            assert last.certified, seed
            assert sorted(report.decision.floors) == sorted(last.floors)
            assert report.decision.margin == pytest.approx(last.margin, abs=1e-12)
            chosen = report.decision.config
            assert chosen in last.certified and report.answer.kind in ("use", "keep")
            assert f"{chosen} is within the {last.margin:.1%} margin" in stop.message or (
                report.answer.kind == "use" and chosen in stop.message
            ), stop.message
            for config in last.active:
                if config in report.configs and not report.configs[config].aa and config != base:
                    recorded = last.estimates[config]
                    mine = report.estimates[(config, OVERALL)]
                    assert (mine.ratio, mine.low, mine.high) == pytest.approx(
                        (recorded.ratio, recorded.low, recorded.high), rel=1e-9
                    )
    assert stopped >= 30, stopped


def test_keep_is_never_said_while_a_leader_may_be_faster_by_more_than_the_margin() -> None:
    """A config 4 % ahead of the baseline, measured for 10 rounds at a 5 % margin: what its
    upper bound against the baseline allows decides; "Keep" only when the answer's own bound
    is within the margin, and it prints that bound."""
    kept = 0
    for seed in range(20):
        scenario = replace(by_name(["fixed-10"])[0], truth=Truth({"c01:default": 1.04}))
        results, report = simulate(scenario, seed)
        said = report.answer
        if said.kind != "keep":
            continue
        kept += 1
        floor = report.decision.floors[results.baseline.config]
        assert 1.0 / floor <= 1.0 + said.margin + 1e-9
        assert f"is at most {1.0 / floor:.3f}x the baseline" in " ".join(said.lines)
    assert kept < 20


@pytest.mark.slow
def test_the_rounds_an_inconclusive_answer_names_decide_it_in_about_half_of_the_sessions() -> None:
    """ "To settle it: about N rounds ... decide the answer in half of the sessions like this
    one": sessions of six equally fast configs, inconclusive after 6 rounds, each followed by a
    new session of the N rounds its answer names (other processes of the same truth). About
    half of those decide (between 20 % and 80 % of 24: the planner draws from each session's own
    estimates, whose noise spreads the figure); where one config is 10 % ahead, most do."""
    decided = named = 0
    for seed in range(24):
        null = by_name(["null-6"])[0]
        _, first = simulate(replace(null, design=Design(kind="fixed", rounds=6)), seed, power=True)
        plan = first.answer.settle
        if first.answer.decided or plan is None:
            continue
        rounds, processes = plan
        assert processes == rounds * 7  # five configs, the baseline and its A/A copy
        said = f"`--rounds={rounds}`) decide the answer at the {first.answer.margin:.1%} margin"
        assert said in " ".join(first.answer.lines)
        _, again = simulate(replace(null, design=Design(kind="fixed", rounds=rounds)), 500 + seed)
        decided += again.answer.decided
        named += 1
    assert named >= 20 and 0.2 * named <= decided <= 0.8 * named, (decided, named)
    ahead = by_name(["fixed-2"])[0]
    later = []
    for seed in range(8):
        _, first = simulate(replace(ahead, design=Design(kind="fixed", rounds=3)), seed, power=True)
        if not first.answer.decided and first.answer.settle is not None:
            rounds = first.answer.settle[0]
            again = simulate(
                replace(ahead, design=Design(kind="fixed", rounds=rounds)), 500 + seed
            )[1]
            later.append(again.answer.decided)
    assert len(later) >= 6 and sum(later) >= 0.5 * len(later), later


def test_one_round_decides_nothing_and_keeps_every_config() -> None:
    """--rounds 1: no spread is known, so every config stays among those that could be the
    fastest, and the answer is inconclusive (it was "Keep the baseline", from no data)."""
    results, report = simulate(by_name(["fixed-1"])[0], 0)
    assert len(results.runs) == 7
    assert report.tiers == [sorted(report.tiers[0], key=report.tiers[0].index)]
    assert set(report.tiers[0]) == {c.key for c in results.configs if not c.aa}
    assert report.answer.kind == "inconclusive"
    assert report.answer.lines[0].startswith("Inconclusive at the 5.0% margin: 1 round gives")


def test_an_aa_control_that_shows_the_build_unlike_itself_decides_nothing() -> None:
    """The baseline's copy 5 % faster than the baseline itself (a machine that favours one of
    two processes of a build, say): in a fixed design of 10 rounds the A/A control shows it, and
    whatever else is shown, the answer is inconclusive; a sequential session that sees it at
    its looks does not stop on its data."""
    twice = by_name(["twice"])[0]
    biased = replace(twice.truth, sigma=0.005, bench_sigma=0.005, aa_bias=1.05)
    _, report = simulate(replace(by_name(["fixed-10"])[0], truth=biased), 0)
    assert report.aa[OVERALL].low > 1.0
    assert report.answer.kind == "inconclusive", report.answer.lines
    assert report.answer.lines[0].startswith("Inconclusive at the 5.0% margin: the A/A control")
    results, _ = simulate(replace(twice, truth=biased), 0)
    stop = results.session.stop
    assert stop is not None and stop.reason in ("budget", "max_rounds"), stop
    assert all(not look.aa_fit for look in results.looks or ())


SESSION_FILES = [p for p in sorted(RESULTS.glob("*.json*")) if not p.name.startswith("calibration")]


@pytest.mark.parametrize("path", SESSION_FILES, ids=lambda p: p.name)
def test_compare_leads_with_an_answer_that_names_its_margin_and_confidence(path: Path) -> None:
    proc = run_tfbuild("compare", str(path), "--format", "json", cwd=RESULTS)
    assert proc.returncode == 0, proc.stderr
    for host in json.loads(proc.stdout)["hosts"]:
        first = host["answer"]["lines"][0]
        margin = host["answer"]["margin"]
        assert math.isfinite(margin) and f"{margin:.1%} margin" in first, first
        assert first.startswith(("Use ", "Keep the baseline ", "Inconclusive at the ")), first
        if host["answer"]["decided"]:
            assert "(98.5% confidence)" in first, first


@pytest.mark.slow
def test_the_committed_run_is_what_this_code_gives() -> None:
    """The table docs/reference.md shows is rendered from tests/fixtures/scenarios.json: the
    cheapest of its scenarios, run again at its full size and seeds, gives the same counts
    (the simulation is seeded), under today's rules."""
    committed = json.loads((FIXTURES / "scenarios.json").read_text())
    assert committed["rules"] == DECISIONS and committed["margin"] == MARGIN
    (saved,) = [t for t in committed["scenarios"] if t["scenario"] == "single"]
    (again,) = run_scenarios(by_name(["single"]), committed["sessions"], 2)
    assert again.to_json() == saved
