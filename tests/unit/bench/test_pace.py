"""How long a session has run and will run: the clock counts the seconds of earlier runs of a
resumed session; one more round fits the budget by each running config's recent processes;
the runs expected (the ETA) follow the design, the last look's plan and the budget."""

from __future__ import annotations

import time
from dataclasses import replace

from support.synthetic import session

from tfbuild.bench.pace import Clock, expected_runs, fits
from tfbuild.results.model import Design, Look, Results

KEYS = ("base:default", "fast:x", "base:default~aa")


def with_design(results: Results, **design: object) -> Results:
    made = Design(**design)  # type: ignore[arg-type]
    return replace(results, session=replace(results.session, design=made))


def test_a_resumed_sessions_clock_counts_what_it_had_spent() -> None:
    clock = Clock(already=100.0)
    time.sleep(0.05)
    assert 100.05 <= clock() < 110.0


def test_a_round_fits_by_each_configs_last_three_processes() -> None:
    """Three rounds of three configs, 6.5 s a process: one more round of all three takes
    19.5 s; a config that never ran counts as the median process."""
    results = with_design(session({"fast:x": 1.2}, rounds=3), kind="sequential", budget_s=100.0)
    assert fits(results, KEYS, elapsed=80.5)  # 80.5 + 19.5 = 100
    assert not fits(results, KEYS, elapsed=80.6)
    assert fits(results, (*KEYS, "new:x"), elapsed=74.0)  # 4 x 6.5 = 26
    assert not fits(results, (*KEYS, "new:x"), elapsed=74.1)
    slow = [replace(r, wall_s=20.0) if r.config == "fast:x" and r.round == 2 else r
            for r in results.runs]  # fmt: skip
    slower = replace(results, runs=tuple(slow))
    # fast:x's last three now have a median of 6.5 still (6.5, 6.5, 20): one slow process
    assert fits(slower, KEYS, elapsed=80.5)
    unbounded = with_design(results, kind="sequential", budget_s=None)
    assert fits(unbounded, KEYS, elapsed=1e9)


def test_the_runs_expected_follow_the_design_the_looks_and_the_budget() -> None:
    results = session({"fast:x": 1.2}, rounds=3)  # 9 runs done, 3 rounds started
    fixed = with_design(results, kind="fixed", rounds=10)
    assert expected_runs(fixed, KEYS, unfinished=0, limit=10, elapsed=0.0) == 9 + 7 * 3
    assert expected_runs(fixed, KEYS, unfinished=2, limit=10, elapsed=0.0) == 9 + 2 + 7 * 3
    before = with_design(results, kind="sequential", first=5, horizon=40)
    assert expected_runs(before, KEYS, 0, limit=40, elapsed=0.0) == 9 + 2 * 3  # to the look
    look = Look(round=3, elapsed_s=0.0, active=KEYS, eliminated=(), leading=KEYS[:2],
                resolution=0.1, margin=0.05, estimates={}, rounds_left=6)  # fmt: skip
    planned = replace(before, looks=(look,))
    assert expected_runs(planned, KEYS[:2], 0, limit=40, elapsed=0.0) == 9 + 6 * 2
    unknown = replace(before, looks=(replace(look, rounds_left=None),))
    assert expected_runs(unknown, KEYS[:2], 0, limit=40, elapsed=0.0) == 9 + 37 * 2
    # a budget of 100 s with 60 s spent: 40 s left, a round of two configs 13 s: 3 rounds
    budgeted = with_design(results, kind="sequential", first=5, horizon=40, budget_s=100.0)
    budgeted = replace(budgeted, looks=(replace(look, rounds_left=None),))
    assert expected_runs(budgeted, KEYS[:2], 0, limit=40, elapsed=60.0) == 9 + 3 * 2
