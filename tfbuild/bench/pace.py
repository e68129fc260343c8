"""How long a session has run and will run: its clock (benchmarking seconds across resumes),
whether one more round fits the budget, and the runs it still expects (the ETA)."""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from collections.abc import Sequence

from tfbuild.results.model import Results


class Clock:
    """Seconds the session has spent benchmarking, across resumes (the budget counts all of
    them; preparing runtimes is not counted)."""

    def __init__(self, already: float = 0.0) -> None:
        self.already = already
        self.started = time.monotonic()

    def __call__(self) -> float:
        return self.already + time.monotonic() - self.started


def fits(results: Results, active: Sequence[str], elapsed: float) -> bool:
    """Whether one more round of the configs still running (`active`) fits in the budget: each
    takes the median of its last three processes, one not run yet the median of them all."""
    budget = results.design.budget_s
    if budget is None:
        return True
    walls: dict[str, list[float]] = defaultdict(list)
    for run in results.runs:
        walls[run.config].append(run.wall_s)
    every = [w for ws in walls.values() for w in ws] or [0.0]
    typical = statistics.median(every)
    needed = sum(statistics.median(walls[c][-3:]) if walls[c] else typical for c in active)
    return elapsed + needed <= budget


def expected_runs(
    results: Results, active: Sequence[str], unfinished: int, limit: int, elapsed: float
) -> int:
    """Runs done plus the runs still expected (for the ETA): the `unfinished` runs of the
    current round, then the rounds to the first look, or after it the rounds the planner gave
    at the last look (up to `limit`, the horizon, when it could not tell), capped by what the
    budget allows."""
    design = results.design
    looks = results.looks or ()
    started = len(results.order or ())
    if not design.sequential:
        left_rounds = limit - started
    else:
        planned = looks[-1].rounds_left if looks else None
        if not looks:
            left_rounds = max(0, design.first - started)
        else:
            left_rounds = planned if planned is not None else limit - started
        left_rounds = min(left_rounds, limit - started)
        budget = design.budget_s
        walls = [run.wall_s for run in results.runs]
        if budget is not None and walls:
            per_round = statistics.median(walls) * max(1, len(active))
            fits = int(max(0.0, budget - elapsed) // per_round)
            left_rounds = min(left_rounds, max(fits, 2 - started))
    return len(results.runs) + unfinished + max(0, left_rounds) * len(active)
