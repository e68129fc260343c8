"""Each config against the baseline, on per-round log ratios set here and on synthetic sessions
whose true speeds are set: a verdict against the margin from an interval; the trimmed mean
interval of the per-round log ratios (Student's t, Yuen's when values are trimmed); each config
against the baseline containing its true ratio, wider with more noise, at a per-comparison
level between Bonferroni's and the family's, overall and per benchmark; a config measured too
little for an interval; the spread of one process the A/A control shows; the setup's
significance levels under the rules of a session and what a pair of configs is taken over."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from support.synthetic import BASELINE, BENCHMARKS, session, setup_of

from tfbuild import stats
from tfbuild.analysis.estimates import (
    MIN_MARGIN,
    Estimate,
    Setup,
    aa_control,
    aa_rounds,
    aa_too_wide,
    benchmark_estimates,
    estimate,
    held,
    indifference,
    noise_margin,
    ranking_estimates,
    unknown,
    verdict,
    widened,
    widening,
    widest,
)
from tfbuild.analysis.rounds import Rounds
from tfbuild.analysis.sessions import Timeline
from tfbuild.results.model import AA_SUFFIX, Design, Results
from tfbuild.results.rules import SPLIT_6

AA = BASELINE + AA_SUFFIX
FAST, MID, SLOW = "fast:default", "mid:default", "slow:default"
PART, DEAD = "part:default", "dead:default"
M = math.log1p(0.05)
"""The 5 % margin in log."""


def paired_log_ratios(results: Results, config: str) -> np.ndarray:
    """Per round, from the raw samples: the config's mean log throughput over the benchmarks
    minus the mean of the baseline's two processes' (the baseline and its copy)."""

    def speed(key: str, r: int) -> float:
        (run,) = [x for x in results.runs if x.config == key and x.round == r]
        medians = [np.median([s.throughput for s in run.benchmarks[b].samples]) for b in BENCHMARKS]
        return float(np.mean(np.log(medians)))

    rounds = sorted({run.round for run in results.runs})
    return np.array([speed(config, r) - (speed(BASELINE, r) + speed(AA, r)) / 2 for r in rounds])


def test_a_verdict_needs_the_whole_interval_beyond_or_within_the_margin() -> None:
    assert verdict(0.06, 0.2, 0.05) == "faster"
    assert verdict(-0.2, -0.06, 0.05) == "slower"
    assert verdict(-0.03, 0.03, 0.05) == "equivalent"
    assert verdict(-0.03, 0.06, 0.05) == "undecided"  # within on one side, beyond on the other
    assert verdict(M, 0.2, 0.05) == "undecided"  # touching the margin is not beyond it
    assert verdict(0.03, 0.04, 0.02) == "faster"  # log(1.02) is 0.0198


def test_a_few_rounds_give_the_mean_with_students_interval() -> None:
    """Five rounds (none trimmed): mean 0.1, sd 0.0158, the 95 % interval by Student's t with 4
    degrees of freedom; p is the one-sample t-test's."""
    logs = [0.10, 0.12, 0.08, 0.11, 0.09]
    e = estimate(FAST, "overall", logs, 0.05, 0.05)
    assert e is not None
    sd = float(np.std(logs, ddof=1))
    half = scipy_stats.t.ppf(0.975, 4) * sd / math.sqrt(5)
    assert e.ratio == pytest.approx(math.exp(0.1))
    assert (e.low, e.high) == pytest.approx((math.exp(0.1 - half), math.exp(0.1 + half)))
    assert e.p == pytest.approx(scipy_stats.ttest_1samp(logs, 0.0).pvalue, rel=1e-4)
    assert (e.rounds, e.df, e.level, e.margin, e.verdict) == (5, 4.0, 0.05, 0.05, "faster")
    assert e.sd == pytest.approx(sd) and e.se == pytest.approx(sd / math.sqrt(5))
    assert estimate(FAST, "overall", [0.1], 0.05, 0.05) is None  # one round: no interval
    assert estimate(FAST, "overall", logs, 0.0, 0.05) is None  # no level to judge at yet


def test_twelve_rounds_trim_one_each_end_and_take_yuens_interval() -> None:
    """n 12, g 1: the mean of the middle ten, its standard error from the winsorized sd times
    sqrt(12) / 10, and 9 degrees of freedom; an outlying round moves it little."""
    logs = [0.05, 0.07, 0.06, 0.04, 0.08, 0.05, 0.06, 0.07, 0.05, 0.06, 0.9, -0.5]
    e = estimate(FAST, "overall", logs, 0.05, 0.05)
    assert e is not None
    ordered = np.sort(logs)
    kept = ordered[1:-1]
    winsorized = np.concatenate([[ordered[1]], kept, [ordered[-2]]])
    se = float(np.std(winsorized, ddof=1)) * math.sqrt(12) / 10
    half = scipy_stats.t.ppf(0.975, 9) * se
    assert e.ratio == pytest.approx(math.exp(kept.mean()))
    assert e.high == pytest.approx(math.exp(kept.mean() + half))
    assert (e.df, e.se) == pytest.approx((9.0, se))


def test_an_estimates_half_width_is_its_farther_reach() -> None:
    def e(ratio: float, low: float, high: float) -> Estimate:
        return Estimate(FAST, "overall", ratio, low, high, 0.05, 0.01, 10, 0.02, 0.05, "faster")

    assert e(1.2, 1.1, 1.5).half_width == pytest.approx(0.25)
    assert e(1.2, 0.9, 1.3).half_width == pytest.approx(0.25)
    assert e(1.2, 1.1, math.inf).half_width == math.inf
    assert e(0.0, 0.0, 1.0).half_width == math.inf


def test_each_config_against_the_baseline_holds_its_true_ratio() -> None:
    """fast 1.25x and slow 0.8x with 1 % noise, 12 rounds: each interval holds the truth, the
    estimate is the trimmed mean of the paired log ratios worked out from the raw samples, and
    the A/A copy (the baseline's build) comes out equivalent to it."""
    results = session({FAST: 1.25, SLOW: 0.8}, noise=0.01, rounds=12, seed=3)
    setup = setup_of(results)
    found, aa = ranking_estimates(setup, 0.05)
    assert set(found) == {FAST, SLOW}
    for config, truth, said in ((FAST, 1.25, "faster"), (SLOW, 0.8, "slower")):
        e = found[config]
        assert e.low < truth < e.high, (config, e)
        assert e.verdict == said and e.rounds == 12
        d = np.sort(paired_log_ratios(results, config))
        assert e.ratio == pytest.approx(math.exp(d[1:-1].mean()))  # 12 rounds: one trimmed each end
    assert aa is not None and aa.config == AA
    assert aa.low < 1.0 < aa.high and aa.verdict == "equivalent"


def test_more_noise_widens_the_intervals() -> None:
    quiet = session({FAST: 1.25, SLOW: 0.8}, noise=0.01, rounds=12, seed=3)
    noisy = session({FAST: 1.25, SLOW: 0.8}, noise=0.08, rounds=12, seed=3)
    widths = []
    for results in (quiet, noisy):
        setup = setup_of(results)
        found, _ = ranking_estimates(setup, 0.05)
        assert found[FAST].low < 1.25 < found[FAST].high
        widths.append(found[FAST].half_width)
    assert widths[1] > 3 * widths[0]


def test_the_per_comparison_level_lies_between_bonferronis_and_the_familys() -> None:
    """Three comparisons (fast, slow and the A/A check) share the ranking's 1.5 %: max-t gives
    each more than 1.5 % / 3, less than 1.5 %; under rules 1 it is Bonferroni's exactly, and
    the selection's 1 % over the k - 1 = 2 rivals likewise."""
    results = session({FAST: 1.25, SLOW: 0.8}, noise=0.01, rounds=12, seed=3)
    setup = setup_of(results)
    alpha = SPLIT_6["ranking"]
    found, _ = ranking_estimates(setup, 0.05)
    assert (setup.family, setup.rivals) == (3, 2)
    assert alpha / 3 < found[FAST].level == found[SLOW].level < alpha
    selection_alpha = SPLIT_6["selection"]
    assert selection_alpha / 2 < setup.against_best(selection_alpha) < selection_alpha
    first = Design(kind="sequential", first=2, horizon=12, resolve=0.05, rules=1)
    old = setup_of(results, first)
    assert old.against_baseline(0.025) == pytest.approx(0.025 / 3)
    assert old.against_best(0.015) == pytest.approx(0.015 / 2)


def test_a_config_is_compared_over_what_it_and_the_baseline_measured() -> None:
    """part raised on gru-keras every round: compared over the other two benchmarks, and not
    whole; dead measured nothing: not compared, though it counts in the family."""
    results = session({FAST: 1.2, PART: 1.1, DEAD: 1.0}, noise=0.01, rounds=6,
                      failing={PART: ["gru-keras"], DEAD: list(BENCHMARKS)})  # fmt: skip
    setup = setup_of(results)
    assert setup.compared == (FAST, PART)
    assert setup.measured[PART] == ("matmul-pinned", "input-fed")
    assert setup.measured[FAST] == tuple(BENCHMARKS)
    assert setup.whole(FAST) and not setup.whole(PART)
    assert (setup.family, setup.rivals) == (4, 3)
    assert setup.reference == (BASELINE, AA)
    assert setup.everyone == (FAST, PART, BASELINE, AA)
    found, _ = ranking_estimates(setup, 0.05)
    assert found[PART].low < 1.1 < found[PART].high
    assert setup.pair(FAST, BASELINE) == ((BASELINE, AA), tuple(BENCHMARKS))
    assert setup.pair(PART, FAST) == ((FAST,), ("matmul-pinned", "input-fed"))
    with pytest.raises(ValueError, match="second of a pair"):
        setup.pair(BASELINE, FAST)
    per_benchmark, aa = benchmark_estimates(setup, dict.fromkeys(BENCHMARKS, 0.05))
    assert {b for c, b in per_benchmark if c == PART} == {"matmul-pinned", "input-fed"}
    assert {b for c, b in per_benchmark if c == FAST} == set(BENCHMARKS) == set(aa)
    assert all(e.benchmark == b for (_, b), e in per_benchmark.items())
    assert per_benchmark[(FAST, "input-fed")].low < 1.2 < per_benchmark[(FAST, "input-fed")].high
    assert per_benchmark[(FAST, "input-fed")].level < found[FAST].level  # Bonferroni across


def test_a_config_without_an_interval_is_unknown_with_its_estimate() -> None:
    """Two rounds: fast's estimate is the mean of its paired log ratios; its interval holds
    anything, and it is undecided."""
    setup = setup_of(session({FAST: 1.2}, noise=0.01, rounds=2, seed=3))
    e = unknown(setup, FAST, 0.05)
    assert e.ratio == pytest.approx(1.2, rel=0.05) and e.rounds == 2
    assert (e.low, e.high, e.verdict) == (0.0, math.inf, "undecided")
    assert unknown(setup, "never:ran", 0.05).ratio == 1.0


def fastest_of_four() -> Setup:
    results = session({FAST: 1.3, MID: 1.0, SLOW: 0.7}, noise=0.01, rounds=12, seed=5)
    return setup_of(results)


def aa_estimate(low: float, high: float) -> Estimate:
    return Estimate(AA, "overall", 1.0, low, high, 0.05, 0.5, 10, 0.02, 0.05, "undecided")


def test_the_a_a_control_is_too_wide_beyond_two_margins_and_holds_beyond_three() -> None:
    """At 5 %: two margins reach log 1.05 x 2 = 0.098, three 0.146; [0.9, 1.08] reaches 0.105."""
    wide = aa_estimate(0.9, 1.08)
    assert aa_too_wide(wide, 0.05) and not held(wide, 0.05)
    assert not aa_too_wide(aa_estimate(0.95, 1.05), 0.05)
    assert held(aa_estimate(0.85, 1.1), 0.05)  # log(1 / 0.85) = 0.163
    assert held(None, 0.05) and not aa_too_wide(None, 0.05)
    assert aa_too_wide(aa_estimate(0.0, 1.1), 0.05)  # no interval below


def hand_rounds(step: float) -> Rounds:
    """Six rounds of one benchmark: the copy step above, then below, the baseline in turn."""
    base = {("s", r): 100.0 for r in range(6)}
    copy = {("s", r): 100.0 * math.exp(step if r % 2 == 0 else -step) for r in range(6)}
    return Rounds({(BASELINE, "x"): base, (AA, "x"): copy, (FAST, "x"): base})


def hand_setup(
    version: int = 6, aa: str | None = AA, step: float = 0.1, design: Design | None = None
) -> Setup:
    """A setup on hand_rounds(step) (a sequential design of rules `version` looking at round
    6, unless `design`)."""
    design = design or Design(kind="sequential", first=2, horizon=12, resolve=0.03, rules=version)
    measured = {BASELINE: ("x",), FAST: ("x",)}
    return Setup(logs=hand_rounds(step), baseline=BASELINE, aa=aa, benchmarks=("x",),
                 compared=(FAST,), design=design, measured=measured, family=2,
                 timeline=Timeline((6,)))  # fmt: skip


def test_the_a_a_rounds_and_control_compare_the_copy_with_the_baseline_alone() -> None:
    """Log ratios +-0.1 in turn: mean 0, sd sqrt(6 x 0.01 / 5); at a level of 0.05 the
    interval reaches 2.571 standard errors either way."""
    setup = hand_setup()
    assert aa_rounds(setup, ["x"], None) == pytest.approx([0.1, -0.1] * 3)
    assert aa_rounds(setup, ["x"], 3) == pytest.approx([0.1, -0.1, 0.1])
    assert aa_rounds(hand_setup(aa=None), ["x"], None) == []
    fixed = hand_setup(design=Design(kind="fixed", rounds=6))
    e = aa_control(fixed, "overall", ["x"], 0.05, 0.05)
    assert e is not None and e.ratio == pytest.approx(1.0) and e.rounds == 6
    half = scipy_stats.t.ppf(0.975, 5) * math.sqrt(0.012) / math.sqrt(6)
    assert e.low == pytest.approx(math.exp(-half)) and e.verdict == "undecided"
    assert aa_control(hand_setup(aa=None), "overall", ["x"], 0.05, 0.05) is None


def test_the_spread_of_one_process_comes_from_the_a_a_control() -> None:
    """sd of the copy's log ratios 0.1095, over sqrt(2): 7.75 % in log, 8.05 % as a ratio; its
    90 % lower bound divides by the chi-square quantile of 5 degrees of freedom; a quiet machine's
    spread, a session without a copy and one of a single round are floored at 2 %."""
    setup = hand_setup()
    sd = math.sqrt(0.012)
    assert noise_margin(setup, ["x"]) == pytest.approx(math.expm1(sd / math.sqrt(2)))
    lower = sd * math.sqrt(5 / scipy_stats.chi2.ppf(0.9, 5))  # the 90 % upper quantile
    assert noise_margin(setup, ["x"], lower=True) == pytest.approx(
        math.expm1(lower / math.sqrt(2)), rel=0.01
    )
    assert noise_margin(hand_setup(step=0.001), ["x"]) == MIN_MARGIN
    assert noise_margin(hand_setup(aa=None), ["x"]) == MIN_MARGIN
    assert noise_margin(setup, ["x"], upto=1) == MIN_MARGIN


def test_the_margin_is_the_designs_under_rules_6_and_never_below_the_spread_before() -> None:
    assert indifference(hand_setup(6), 0.04) == 0.03
    assert indifference(hand_setup(5), 0.04) == 0.04
    assert indifference(hand_setup(5), 0.01) == 0.03


def test_fresh_processes_or_rules_before_6_widen_nothing() -> None:
    """Each fresh process is its own zygote: nothing alike to widen for; under rules 5 the
    zygotes are not looked at."""
    setup = fastest_of_four()
    assert widening(setup, FAST, 12) == pytest.approx(1.0)
    assert widest(setup, [FAST, MID, SLOW]) == pytest.approx(1.0)
    loc = stats.trimmed([0.1, 0.12, 0.08])
    assert widened(setup, loc, FAST, setup.reference, BENCHMARKS, 12) == loc
    assert widening(hand_setup(5), FAST, 6) == 1.0
    assert widened(hand_setup(5), loc, FAST, (BASELINE,), ["x"], 6) is loc
