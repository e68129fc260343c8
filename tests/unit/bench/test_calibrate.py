"""A calibration session's plan of work: the shuffled order of its rounds (every config once a
round, reproducible from the recorded seed), and the steps it times per benchmark, enough to
replay today's design and every earlier suite's on the same processes."""

from __future__ import annotations

from collections import Counter

from tfbuild.bench.calibrate import DESIGN_SINCE, EARLIER, STEPS, schedule
from tfbuild.bench.payload import ITERATIONS, SAMPLES
from tfbuild.config.suite import BENCHMARKS, SUITE_VERSION

CONFIGS = ["stock:default", "stock:tuned", "mkl-avx2:default", "mkl-avx2:tuned", "onednn:off"]


def test_every_round_runs_every_config_once() -> None:
    given = list(CONFIGS)
    orders = schedule(given, 12, seed=7)
    assert len(orders) == 12
    for order in orders:
        assert sorted(order) == sorted(CONFIGS)
    assert given == CONFIGS  # the caller's list is not shuffled in place


def test_the_same_seed_gives_the_same_order_and_another_seed_another() -> None:
    """A session records its seed: the order of its rounds can be made again from it."""
    assert schedule(CONFIGS, 8, seed=2024) == schedule(list(CONFIGS), 8, seed=2024)
    assert schedule(CONFIGS, 8, seed=2024) != schedule(CONFIGS, 8, seed=2025)


def test_rounds_are_shuffled_each_on_its_own() -> None:
    """Not one order repeated: over many rounds, each config is first in about a fifth of
    them and the rounds' orders vary (5! = 120 orders possible)."""
    orders = schedule(CONFIGS, 500, seed=1)
    assert len({tuple(o) for o in orders}) > 90
    firsts = Counter(order[0] for order in orders)
    assert set(firsts) == set(CONFIGS)
    assert all(60 <= n <= 140 for n in firsts.values()), firsts  # 100 expected each


def test_no_rounds_or_no_configs_schedule_nothing() -> None:
    assert schedule(CONFIGS, 0, seed=3) == []
    assert schedule([], 3, seed=3) == [[], [], []]
    assert schedule(["only:one"], 2, seed=3) == [["only:one"], ["only:one"]]


def test_the_steps_timed_replay_todays_design_and_every_earlier_suites() -> None:
    """A process times STEPS[b] steps of benchmark b: every design the calibration analysis
    compares (iterations per sample x samples per process) must fit in them, and no more are
    timed than the largest of those needs."""
    assert set(STEPS) == set(BENCHMARKS)
    designs: dict[str, tuple[dict[str, int], dict[str, int]]] = {"today": (ITERATIONS, SAMPLES)}
    for version, (iterations, per_process) in EARLIER.items():
        designs[f"v{version}"] = (iterations, dict.fromkeys(iterations, per_process))
    for name, (iterations, samples) in designs.items():
        for benchmark in BENCHMARKS:
            assert iterations[benchmark] * samples[benchmark] <= STEPS[benchmark], (name, benchmark)
    for benchmark in BENCHMARKS:
        largest = max(it[benchmark] * per[benchmark] for it, per in designs.values())
        assert STEPS[benchmark] == largest, benchmark


def test_the_earlier_designs_are_those_before_todays() -> None:
    """EARLIER holds each suite version before the one that brought today's iterations and
    samples, and each differs from today's design (else it would be today's, named twice)."""
    assert sorted(EARLIER) == list(range(1, DESIGN_SINCE))
    assert DESIGN_SINCE <= SUITE_VERSION
    for iterations, samples in EARLIER.values():
        assert (iterations, dict.fromkeys(iterations, samples)) != (ITERATIONS, SAMPLES)
