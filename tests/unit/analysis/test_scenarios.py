"""The answer a report leads with, against a known truth: sessions whose true speeds are set
(tfbuild.analysis.simulated) run through the session's own rounds, looks and stop, answered by
the report, scored as a person acts on it. At a smaller size than the committed run that
docs/reference.md shows (tests/fixtures/scenarios.json), with fixed seeds: each statistical test
holds enough sessions that a 10 % wrong rate fails it (SESSIONS, ALLOWED). The hardest
scenarios' sessions are committed evidence (tests/fixtures/looks.json, support/looks.py, shown
current by test_looks.py); one is also run live on fresh seeds."""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from support.cli import RESULTS, run_tfbuild
from support.env import FIXTURES
from support.looks import HARD, evidence

from tfbuild import stats
from tfbuild.analysis.estimates import OVERALL, Estimate
from tfbuild.analysis.scenarios import (
    MARGIN,
    SCENARIOS,
    SimulatedAnswer,
    Tally,
    by_name,
    run_scenarios,
    score,
    simulate,
    tally,
    with_truth,
)
from tfbuild.analysis.scenarios import benchmark_wrong as count_wrong
from tfbuild.analysis.simulated import GAUSSIAN, Truth
from tfbuild.results.model import AA_SUFFIX, Design, Results
from tfbuild.results.rules import CURRENT_RULES

SESSIONS = 100
ALLOWED = 4
"""At most this many wrong answers (or sessions with a wrong per-benchmark verdict) of
SESSIONS: a scenario whose true wrong rate were 10 % would pass with probability 2.4 %
(binomial), one at the 2.5 % target with probability 89 %."""


def test_the_allowance_fails_a_ten_percent_wrong_rate() -> None:
    """The numbers ALLOWED's docstring states, from the binomial distribution."""

    def at_most(k: int, p: float) -> float:
        return sum(math.comb(SESSIONS, i) * p**i * (1 - p) ** (SESSIONS - i) for i in range(k + 1))

    assert at_most(ALLOWED, 0.10) < 0.025
    assert at_most(ALLOWED, 0.025) > 0.88


def test_a_wrong_answer_is_scored_wrong() -> None:
    """The scoring itself, on answers whose truth is known without a session: "Use X" is right
    only for a config truly faster than the baseline and the fastest or within the margin."""
    ahead = Truth({"c01:default": 1.10, "c02:default": 1.07})
    assert score(ahead, "use", "c01:default", MARGIN) is True
    assert score(ahead, "use", "c02:default", MARGIN) is True  # 2.7 % behind: within
    assert score(ahead, "use", "c03:default", MARGIN) is False  # 10 % behind
    assert score(ahead, "keep", None, MARGIN) is False
    assert score(ahead, "keep", None, 0.12) is True  # at a 12 % margin nothing is beyond it
    assert score(Truth({"c01:default": 1.05}), "keep", None, MARGIN) is True
    equal = Truth({})
    assert score(equal, "use", "c01:default", MARGIN) is False  # a switch for nothing
    assert score(equal, "keep", None, MARGIN) is True
    assert score(Truth({"c01:default": 0.9}), "use", "c02:default", MARGIN) is False
    assert score(Truth({"c01:default": 1.02}), "use", "c01:default", MARGIN) is True
    assert score(ahead, "inconclusive", None, MARGIN) is None


def _verdict(config: str, verdict: str, margin: float = MARGIN) -> dict[tuple[str, str], Estimate]:
    e = Estimate(config, "gru-keras", 1.0, 0.9, 1.1, 0.99, 0.5, 10, 0.05, margin, verdict)
    return {(config, "gru-keras"): e, (config, OVERALL): replace(e, verdict="slower")}


def test_a_wrong_benchmark_verdict_is_counted_wrong() -> None:
    """Per-benchmark verdicts against a truth known without a session (the overall estimate is
    not a benchmark's, and not counted)."""
    ahead = Truth({"c01:default": 1.10, "c02:default": 1.03})
    assert count_wrong(ahead, _verdict("c01:default", "faster")) == 0
    assert count_wrong(ahead, _verdict("c01:default", "equivalent")) == 1
    assert count_wrong(ahead, _verdict("c01:default", "slower")) == 1
    assert count_wrong(ahead, _verdict("c01:default", "equivalent", 0.12)) == 0
    assert count_wrong(ahead, _verdict("c02:default", "faster")) == 1
    assert count_wrong(ahead, _verdict("c02:default", "equivalent")) == 0
    assert count_wrong(ahead, _verdict("c02:default", "undecided")) == 0
    biased = Truth({}, aa_bias=1.08)
    assert count_wrong(biased, _verdict("base:default" + AA_SUFFIX, "faster")) == 0
    assert count_wrong(biased, _verdict("base:default" + AA_SUFFIX, "equivalent")) == 1


def test_every_scenario_can_score_an_answer_wrong() -> None:
    """Where every config is as fast as the baseline any "Use" is wrong; where the best is just
    beyond the margin "Keep" is wrong; where it is at the margin "Use" of another is wrong. The
    one exception: the baseline and one config exactly at the margin (margin-2), where both
    answers are right by definition."""
    for scenario in SCENARIOS:
        truth = scenario.truth
        wrong = [
            score(truth, "use", f"c{i:02d}:default", MARGIN) is False
            for i in range(1, scenario.configs)
        ] + [score(truth, "keep", None, MARGIN) is False]
        assert any(wrong) == (scenario.name != "margin-2"), scenario.name
        if scenario.kind == "null":
            assert all(wrong[:-1]), scenario.name
        if scenario.name.startswith("beyond"):
            assert wrong[-1], scenario.name


def committed_tally(name: str) -> Tally:
    """The scenario's committed evidence (support/looks.py's study of that name), tallied."""
    study = evidence()[name]
    assert study["kind"] == "answer" and study["sessions"] == SESSIONS, study["name"]
    (scenario,) = by_name([name])
    return tally(scenario, [SimulatedAnswer(**o) for o in study["outcomes"]])


def _seldom_wrong(found: Tally) -> None:
    assert found.sessions == SESSIONS, found
    assert found.wrong <= ALLOWED, found
    assert found.benchmark_wrong <= ALLOWED, found
    assert found.margins == (MARGIN,), found


@pytest.mark.parametrize("name", HARD)
def test_answers_are_seldom_wrong_where_they_can_be(name: str) -> None:
    """The least favourable truths for 2, 6 and 16 configs, with noise as rough as the
    committed real sessions, and a zygote's children alike at ICC 0.3 (the committed
    sessions, seeds 10000 on): wrong answers, and sessions holding a per-benchmark verdict
    the truth contradicts, in at most ALLOWED of SESSIONS; every answer names the 5 % margin
    asked."""
    _seldom_wrong(committed_tally(name))


@pytest.mark.slow
def test_answers_are_seldom_wrong_on_fresh_sessions() -> None:
    """The same, live, on sessions no committed file holds: the best config just beyond the
    margin among 6 (where "Keep" is wrong, and "Use" of any other)."""
    (found,) = run_scenarios(by_name(["beyond-6"]), SESSIONS, workers=1, first_seed=30_000)
    _seldom_wrong(found)


def test_one_config_twice_the_margin_ahead_is_found_where_zygotes_resemble() -> None:
    """Twice the margin ahead with a zygote's children alike at ICC 0.3, in the default design:
    right in at least 85 of the 100 committed sessions (seeds 20000 on; the committed run
    holds it to 90 %)."""
    found = committed_tally("twice-6-icc30")
    assert found.wrong <= ALLOWED and found.right >= 85, found


@pytest.mark.slow
def test_the_margin_named_is_the_one_asked_whatever_the_noise() -> None:
    """Every scenario, its processes made as noisy as 8 % (a spread 1.6 times the committed
    sessions'): the answer names the 5 % margin asked, in every session (noise changes the
    rounds an answer takes, never its question)."""
    named = set()
    for scenario in SCENARIOS:
        noisy = with_truth(scenario, scale=1.6)
        for seed in range(2):
            _, report = simulate(noisy, seed)
            named.add(report.answer.margin)
            assert f"{MARGIN:.1%} margin" in report.answer.lines[0], report.answer.lines[0]
    assert named == {MARGIN}


def _between_zygotes(icc: float, overall: bool) -> float:
    """The share of a config's log throughput variance (its overall speed, or per benchmark)
    between the zygotes its processes name, over three fixed sessions of 60 rounds of equally
    fast configs with normal noise (a one-way analysis of variance over the zygotes, each
    config on its own; not held at 0, so that the mean is not biased up)."""
    truth = Truth({}, noise=GAUSSIAN, zygote=icc if overall else 0.0,
                  zygote_bench=0.0 if overall else icc)  # fmt: skip
    scenario = replace(by_name(["null-6"])[0], truth=truth, own=Design(kind="fixed", rounds=60))
    shares = []
    for seed in range(3):
        results, _ = simulate(scenario, seed)
        names = results.suite.benchmarks
        for config in {r.config for r in results.runs}:
            runs = [r for r in results.runs if r.config == config]
            for name in ["speed"] if overall else names:
                groups: dict[str | None, list[float]] = {}
                for r in runs:
                    logs = [math.log(r.benchmarks[b].samples[0].throughput) for b in names]
                    value = sum(logs) / len(logs) if overall else logs[names.index(name)]
                    groups.setdefault(r.zygote, []).append(value)
                values = [x for g in groups.values() for x in g]
                mean, n, k = sum(values) / len(values), len(values), len(groups)
                within = sum((x - sum(g) / len(g)) ** 2 for g in groups.values() for x in g)
                between = sum(len(g) * (sum(g) / len(g) - mean) ** 2 for g in groups.values())
                m0 = (n - sum(len(g) ** 2 for g in groups.values()) / n) / (k - 1)
                msb, msw = between / (k - 1), within / (n - k)
                shares.append((msb - msw) / (msb + (m0 - 1) * msw))
    return sum(shares) / len(shares)


def test_the_children_of_a_simulated_zygote_resemble_each_other_as_set() -> None:
    """The simulated processes name the zygote they came from, and a zygote's children resemble
    each other at about the intraclass correlation set, on the overall speed or per benchmark,
    and not at all when none is set."""
    assert abs(_between_zygotes(0.0, True)) < 0.08
    assert 0.18 < _between_zygotes(0.3, True) < 0.42
    assert 0.18 < _between_zygotes(0.3, False) < 0.42
    assert _between_zygotes(0.8, False) > 0.6


def test_a_simulated_process_costs_what_a_forked_one_measured() -> None:
    """PROCESS_S is the session seconds per process (zygote starts included) of the committed
    zygote measurement: a fixed session of the A/A matrix with the default processes."""
    from support.env import REPO

    from tfbuild.analysis.simulated import PROCESS_S
    from tfbuild.results.codec import load

    measured = load(REPO / "docs" / "measurements" / "zygotes-aa-2.21.json.gz")
    assert measured.suite.processes == "forked" and len(measured.runs) >= 180
    assert round((measured.session.elapsed_s or 0) / len(measured.runs), 1) == PROCESS_S


def test_a_simulated_session_draws_its_zygotes_as_the_runtime_does() -> None:
    """Each config's processes come from several zygotes at once, in turns (runtime.forked.
    Turns), each serving CHILDREN, never two in a row; a session of fresh processes names
    none."""
    from tfbuild.runtime.forked import CHILDREN, LIVE

    results, _ = simulate(replace(by_name(["null-6"])[0], own=Design(kind="fixed", rounds=9)), 1)
    for config in {r.config for r in results.runs}:
        named = [
            r.zygote for r in sorted(results.runs, key=lambda r: r.round) if r.config == config
        ]
        assert len(set(named[:LIVE])) == LIVE, named  # the first rounds hold LIVE zygotes
        assert {named.count(z) for z in named} == {CHILDREN}, named
        assert all(a != b for a, b in itertools.pairwise(named)), named
    fresh, _ = simulate(by_name(["null-6-fresh"])[0], 1)
    assert {r.zygote for r in fresh.runs} == {None}


@pytest.mark.slow
def test_a_session_that_stops_on_its_answer_is_answered_as_it_stopped() -> None:
    """Rules 6: the session stops at the look that decides the answer; its report answers from
    that very look (the same config, the same intervals for the configs still running), the
    looks replay without a difference, and the stop message names what the answer says."""
    stopped = 0
    for seed in range(10):
        for name in ("twice-6", "margin-6", "two-leaders"):
            results, report = simulate(by_name([name])[0], seed)
            stop = results.session.stop
            assert stop is not None and not report.course.replay, report.course.replay
            if stop.reason != "resolved":
                continue
            stopped += 1
            last, base = (results.looks or ())[-1], results.baseline.config
            assert last.round == stop.round == report.measured.rounds
            assert last.answer is not None and last.answer == report.decision.config, seed
            assert report.answer.kind == ("keep" if last.answer == base else "use")
            assert last.answer in stop.message, stop.message
            for config in last.active:
                if (
                    config in report.measured.configs
                    and not report.measured.configs[config].aa
                    and config != base
                ):
                    recorded = last.estimates[config]
                    mine = report.figures.estimates[(config, OVERALL)]
                    assert (mine.ratio, mine.low, mine.high) == pytest.approx(
                        (recorded.ratio, recorded.low, recorded.high), rel=1e-9
                    )
    assert stopped >= 20, stopped


def test_use_is_said_only_of_a_config_shown_faster_and_keep_quotes_its_own_bound() -> None:
    """A config 4 % ahead of the baseline, measured for 10 rounds at a 5 % margin: "Use X" only
    with X's lower bound against the baseline above 1; "Keep" only when every config that could
    be the fastest has its upper bound within the margin, and the line quotes the largest of
    those bounds as its "at most", with the interval it comes from."""
    kept = used = 0
    for seed in range(20):
        scenario = with_truth(by_name(["fixed-10"])[0], effects={"c01:default": 1.04})
        _, report = simulate(scenario, seed)
        said = report.answer
        by_config = {e.config: e for e in report.figures.ranking}
        if said.kind == "use":
            used += 1
            assert by_config[report.decision.config or ""].low > 1.0
        if said.kind != "keep":
            continue
        kept += 1
        highs = [by_config[c].high for c in report.decision.contenders]
        assert max(highs) <= 1.0 + said.margin + 1e-9
        widest = max((by_config[c] for c in report.decision.contenders), key=lambda e: e.high)
        interval = f"({widest.ratio:.3f}x [{widest.low:.3f}, {widest.high:.3f}])"
        assert (
            f"{interval} reaches highest, at most {widest.high:.3f}x the baseline" in said.lines[1]
        )
    assert kept + used < 20


@pytest.mark.slow
def test_the_rounds_an_inconclusive_answer_names_decide_it_in_about_half_of_the_sessions() -> None:
    """ "To settle it: about N rounds ... decide the answer in half of the sessions like this
    one": sessions of six equally fast configs, inconclusive after 6 rounds, each followed by a
    new session of the N rounds its answer names (other processes of the same truth). About
    half of those decide (between 20 % and 80 %: the planner draws from each session's own
    estimates, whose noise spreads the figure); where one config is 10 % ahead, most do."""
    decided = named = 0
    for seed in range(24):
        null = with_truth(by_name(["null-6"])[0], noise=GAUSSIAN)
        _, first = simulate(replace(null, own=Design(kind="fixed", rounds=6)), seed, power=True)
        plan = first.answer.settle
        if first.answer.decided or plan is None:
            continue
        rounds, processes = plan
        assert processes == rounds * 7  # five configs, the baseline and its A/A copy
        said = f"`--rounds={rounds}`) decide the answer at the {first.answer.margin:.1%} margin"
        assert said in " ".join(first.answer.lines)
        _, again = simulate(replace(null, own=Design(kind="fixed", rounds=rounds)), 500 + seed)
        decided += again.answer.decided
        named += 1
    assert named >= 15 and 0.2 * named <= decided <= 0.8 * named, (decided, named)
    ahead = with_truth(by_name(["fixed-2"])[0], noise=GAUSSIAN)
    later = []
    for seed in range(8):
        _, first = simulate(replace(ahead, own=Design(kind="fixed", rounds=3)), seed, power=True)
        if not first.answer.decided and first.answer.settle is not None:
            rounds = first.answer.settle[0]
            again = simulate(replace(ahead, own=Design(kind="fixed", rounds=rounds)), 500 + seed)[1]
            later.append(again.answer.decided)
    assert len(later) >= 6 and sum(later) >= 0.5 * len(later), later


def test_one_round_decides_nothing_and_keeps_every_config() -> None:
    """--rounds 1: no spread is known, so every config stays among those that could be the
    fastest, and the answer is inconclusive (it was "Keep the baseline", from no data)."""
    results, report = simulate(by_name(["fixed-1"])[0], 0)
    assert len(results.runs) == 7
    assert report.figures.tiers == [
        sorted(report.figures.tiers[0], key=report.figures.tiers[0].index)
    ]
    assert set(report.figures.tiers[0]) == {c.key for c in results.configs if not c.aa}
    assert report.answer.kind == "inconclusive"
    assert report.answer.lines[0].startswith("Inconclusive at the 5.0% margin: 1 round gives")


def test_an_aa_control_that_shows_the_build_unlike_itself_decides_nothing() -> None:
    """The baseline's copy 5 % faster than the baseline itself (a machine that favours one of
    two processes of a build, say): in a fixed design of 10 rounds the A/A control shows it, and
    whatever else is shown, the answer is inconclusive; a sequential session that sees it at
    its looks does not stop on its data."""
    twice = by_name(["twice-6"])[0]
    quiet = replace(GAUSSIAN, spreads={b: 0.005 for b in GAUSSIAN.spreads})
    biased = replace(twice.truth, noise=quiet, aa_bias=1.05, processes="fresh")
    _, report = simulate(replace(by_name(["fixed-10"])[0], truth=biased), 0)
    assert report.figures.aa[OVERALL].low > 1.0
    assert report.answer.kind == "inconclusive", report.answer.lines
    assert report.answer.lines[0].startswith("Inconclusive at the 5.0% margin: the A/A control")
    results, _ = simulate(replace(twice, truth=biased), 0)
    stop = results.session.stop
    assert stop is not None and stop.reason in ("budget", "max_rounds"), stop
    assert all(not look.aa_fit for look in results.looks or ())


@pytest.mark.slow
def test_nothing_is_put_out_while_the_aa_control_cannot_tell_the_baseline_from_itself() -> None:
    """Rules 6: while the A/A control's interval reaches beyond ANSWER_SPAN margins either way
    a look holds: it puts nothing out and answers nothing, and says so. Two configs, one 30 %
    ahead: the early looks hold, and the session goes on until the control is settled; the
    look it stops at answers "Use" the one ahead."""
    from tfbuild.analysis.estimates import ANSWER_SPAN

    assert ANSWER_SPAN == 3.0
    scenario = with_truth(by_name(["twice-2"])[0], effects={"c01:default": 1.30})
    held = answered = 0
    for seed in range(10):
        results, _ = simulate(scenario, seed)
        looks = results.looks or ()
        for look in looks:
            assert not (look.held and (look.eliminated or look.answer)), (seed, look.round)
            held += look.held
        assert looks[0].held, seed  # after round 3 nothing is known yet
        assert not looks[-1].held and looks[-1].answer == "c01:default", (seed, looks[-1])
        answered += 1
    assert held >= 10 and answered == 10, (held, answered)


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
        split = host["alpha_split"]
        sure = 1 - split["ranking"] - split["selection"]
        if host["answer"]["decided"]:
            assert f"({sure:.1%} confidence)" in first, first


@pytest.mark.slow  # 2000 simulated sessions
def test_the_committed_run_is_current() -> None:
    """The table docs/reference.md shows is rendered from tests/fixtures/scenarios.json: made
    under today's rules, at least 2000 sessions of each scenario of today's catalogue, every
    answer naming the margin asked, every rate's bound the one its counts give; and the
    cheapest scenario, run again at its full size and seeds, gives the same counts (the
    simulation is seeded)."""
    committed = json.loads((FIXTURES / "scenarios.json").read_text())
    assert committed["rules"] == CURRENT_RULES and committed["margin"] == MARGIN
    assert committed["sessions"] >= 2000
    assert [t["scenario"] for t in committed["scenarios"]] == [s.name for s in SCENARIOS]
    for t in committed["scenarios"]:
        assert t["margins"] == [MARGIN], t["scenario"]
        assert t["wrong_upper"] == pytest.approx(stats.binomial_upper(t["wrong"], t["sessions"]))
    (saved,) = [t for t in committed["scenarios"] if t["scenario"] == "fixed-2"]
    (again,) = run_scenarios(by_name(["fixed-2"]), committed["sessions"], 2)
    assert again.to_json() == saved


def test_the_committed_run_meets_the_targets() -> None:
    """Wrong decided answers in at most 2.5 % of the sessions of every scenario (their
    one-sided 95 % bound at most 3.5 %); where one config leads by twice the margin in the
    default design, right in at least 90 %; under every null, "Keep" or "Inconclusive" in at
    least 97.5 %."""
    committed = json.loads((FIXTURES / "scenarios.json").read_text())
    for t in committed["scenarios"]:
        n = t["sessions"]
        assert t["wrong"] <= 0.025 * n and t["wrong_upper"] <= 0.035, t
        if t["kind"] == "clear":
            assert t["right"] >= 0.90 * n, t
        if t["kind"] == "null":
            assert t["right"] + t["inconclusive"] >= 0.975 * n, t
        assert not t["misses"], t


def _roughness(results: list[Results]) -> dict[str, float]:
    """How rough sessions' noise is, by what the analysis sees: each (config, benchmark)'s log
    throughput less its config's mean and its round's effect; per benchmark its spread (the
    median over configs), the correlation between a process's benchmarks, the skew and excess
    kurtosis of the cells with 20 processes or more, and how far apart the configs' spreads of
    their overall speed are (the widest over the narrowest, per session)."""
    spreads: dict[str, list[float]] = {}
    correlations, skews, kurtoses, ratios = [], [], [], []
    for doc in results:
        names = doc.suite.benchmarks
        by: dict[tuple[str, str], dict[int, float]] = {}
        for run in doc.runs:
            for name, value in run.values().items():
                by.setdefault((run.config, name), {})[run.round] = math.log(value)
        configs = sorted({c for c, _ in by})
        speeds = {}
        for c in configs:
            rounds = sorted(set.intersection(*(set(by.get((c, b), {})) for b in names)))
            if len(rounds) < 8:
                continue
            grid = np.array([[by[(c, b)][r] for r in rounds] for b in names])
            speeds[c] = dict(zip(rounds, grid.mean(axis=0), strict=True))
            grid -= grid.mean(axis=1, keepdims=True)
            for name, row in zip(names, grid, strict=True):
                spreads.setdefault(name, []).append(float(row.std(ddof=1)))
                if len(row) >= 20:
                    z = (row - row.mean()) / row.std()
                    skews.append(float((z**3).mean()))
                    kurtoses.append(float((z**4).mean() - 3))
            corr = np.corrcoef(grid)
            correlations.append(float(corr[np.triu_indices(len(names), 1)].mean()))
        shock = {}  # the round's effect: the mean over configs of their speeds' deviations
        for r in {r for v in speeds.values() for r in v}:
            here = [v[r] - np.mean(list(v.values())) for v in speeds.values() if r in v]
            shock[r] = float(np.mean(here))
        sds = [float(np.std([v[r] - shock[r] for r in v], ddof=1)) for v in speeds.values()]
        if len(sds) >= 3:
            ratios.append(max(sds) / min(sds))
    medians = {name: float(np.median(v)) for name, v in spreads.items()}
    return {
        "narrowest": min(medians.values()),
        "widest": max(medians.values()),
        "correlation": float(np.median(correlations)),
        "skew": min(skews),
        "kurtosis": max(kurtoses),
        "ratio": max(ratios),
    }


def test_simulated_noise_is_as_rough_as_the_committed_real_sessions() -> None:
    """The scenarios' noise against the committed real sessions (fresh processes of real
    builds): benchmarks as far apart in spread (as narrow and as wide), correlated as much,
    tails as skewed and heavy, configs' spreads as unequal."""
    from tfbuild.results.codec import load

    real = [load(p) for p in SESSION_FILES if "workload" not in p.name]
    fixed = Design(kind="fixed", rounds=30)
    simulated = [simulate(replace(by_name(["null-6"])[0], own=fixed), seed)[0] for seed in range(4)]
    mine, theirs = _roughness(simulated), _roughness(real)
    assert mine["narrowest"] <= theirs["narrowest"] + 0.01, (mine, theirs)
    assert mine["widest"] >= 0.8 * theirs["widest"], (mine, theirs)
    assert abs(mine["correlation"] - theirs["correlation"]) <= 0.15, (mine, theirs)
    assert mine["skew"] <= 0.5 * theirs["skew"], (mine, theirs)
    assert mine["kurtosis"] >= 0.5 * theirs["kurtosis"], (mine, theirs)
    assert mine["ratio"] >= 0.8 * theirs["ratio"], (mine, theirs)
