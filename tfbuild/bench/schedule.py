"""The rounds of a session: which config runs next, and when the session stops.

A round runs every config still in contention once, each in a fresh process (or one forked from
its config's zygote, when the session's suite says so), in an order
shuffled from the session's seed and the round number (so a resumed session draws the same
orders). The baseline runs twice per round under two labels (the A/A control). A fixed design
stops after its rounds; a sequential one looks at its data after the scheduled rounds (the
Looker it is handed, from tfbuild.analysis) and stops when the leading tier is resolved, when
the budget would run out during the next round, or at the horizon. Every finished run is
recorded at once, so an interrupted session keeps it.
"""

from __future__ import annotations

import random
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from tfbuild.bench.failures import form_check_of, recorded
from tfbuild.bench.options import payload_config
from tfbuild.progress import Reporter
from tfbuild.results.codec import Record, benchmark_result, now
from tfbuild.results.model import ConfigEntry, Design, Failure, Look, Results, Run, Stop
from tfbuild.results.rules import rules
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.forked import live_zygotes
from tfbuild.wording import duration, half_width


class Looker(Protocol):
    """Takes a look at a sequential session's data after a scheduled round: which configs are
    out, the leading tier and its resolution (tfbuild.analysis.looks.SequentialLooks)."""

    def __call__(
        self, results: Results, active: Sequence[str], round_: int, elapsed: float
    ) -> Look: ...


class Clock:
    """Seconds the session has spent benchmarking, across resumes (the budget counts all of
    them; preparing runtimes is not counted)."""

    def __init__(self, already: float = 0.0) -> None:
        self.already = already
        self.started = time.monotonic()

    def __call__(self) -> float:
        return self.already + time.monotonic() - self.started


def _ratio(look: Look, config: str) -> float:
    """A config's estimate against the baseline at a look (0 without one)."""
    e = look.estimates.get(config)
    return e.ratio if e else 0.0


def _certified(look: Look, baseline: str) -> str | None:
    """Rules 5: of the configs known within the margin of the fastest, the one the answer
    names: the baseline (keep it), else the one furthest ahead of the baseline."""
    known = look.certified
    if baseline in known:
        return baseline
    return max(known, key=lambda c: _ratio(look, c), default=None)


def round_order(results: Results, round_: int, keys: Sequence[str]) -> tuple[str, ...]:
    """Round `round_`'s order of `keys`: a shuffle drawn from the session's seed and the round
    number, so a resumed session draws the same orders."""
    order = sorted(keys)
    random.Random(f"{results.session.seed}:{round_}").shuffle(order)
    return tuple(order)


def _describe(design: Design) -> str:
    if not design.sequential:
        return "fixed rounds"
    parts = [f"at least {design.first} rounds"]
    if rules(design.decisions).answer_decides:
        parts.append(f"until the answer is decided at the {design.margin:.1%} margin")
    elif design.resolve is not None:
        parts.append(f"until resolved to ±{design.resolve:.0%}")
    if design.budget_s is not None:
        parts.append(f"within {duration(design.budget_s)}")
    return ", ".join(parts)


class Schedule:
    """A session's rounds as they run: the results so far, which configs still run, and the
    decision to stop. Each finished run and look is recorded at once."""

    def __init__(
        self,
        results: Results,
        runtimes: Mapping[str, RuntimeEnv],
        reporter: Reporter,
        record: Record,
        clock: Callable[[], float],
        looker: Looker,
    ) -> None:
        self.results = results
        self.runtimes = runtimes
        self.reporter = reporter
        self.record = record
        self.clock = clock
        self.looker = looker
        self.design = results.design
        self.done = results.finished()
        ready = results.ready
        refused = {k for f in results.failures if f.stage == "form" for k in f.configs}
        runnable = [c.key for c in results.configs if c.variant in ready]
        self.active = [c for c in runnable if c not in refused]
        self.refused: dict[str, str] = {}
        """Configs whose process said their model form cannot be made, and why."""
        memory = results.host.memory
        self.live = live_zygotes(len(runnable), memory.available_bytes if memory else None)
        """Zygotes each config keeps alive at once (forked processes)."""
        for look in results.looks or ():
            self.active = [c for c in self.active if c not in look.stopped]

    @property
    def order(self) -> tuple[tuple[str, ...], ...]:
        return self.results.order or ()

    @property
    def rounds_started(self) -> int:
        return len(self.order)

    def limit(self) -> int:
        if not self.design.sequential:
            return int(self.design.rounds or 0)
        return self.design.horizon or self.design.first

    def _save(self, results: Results) -> None:
        self.results = self.record(results)

    def _round_done(self, r: int) -> bool:
        return all((r, key) in self.done for key in self.order[r])

    def run(self) -> Results:
        """Run rounds until the design says stop; the results, complete. The runtimes' zygotes
        (forked processes) are stopped at the end, also when interrupted."""
        try:
            return self._rounds()
        finally:
            for runtime in filter(None, self.runtimes.values()):  # simulations run none
                runtime.close()

    def _rounds(self) -> Results:
        design = self.design
        stop: Stop | None = None
        if not self.active:
            stop = Stop(reason="nothing_runs", round=0, message="no config can run here")
        else:
            self.reporter.start(
                self._expected_runs(self.clock()),
                f"benchmarking {len(self.active)} configs ({_describe(design)})",
            )
        looked = {look.round for look in self.results.looks or ()}
        last = self.rounds_started
        if stop is None and last and last not in looked and self._round_done(last - 1):
            stop = self.look()  # stopped after a round, before its look
        while stop is None:
            r = self.rounds_started
            if r == len(self.order) and r > 0 and not self._round_done(r - 1):
                r -= 1  # an interrupted round: finish it first
            elif r >= self.limit():
                stop = self._stop_at_limit(r)
                break
            elif design.sequential and r >= 2 and not self._fits(self.clock()):
                stop = Stop(
                    reason="budget",
                    round=r,
                    message=f"the budget of {duration(design.budget_s or 0)} would run out "
                    f"during round {r + 1}; stopped after {r} rounds",
                )
                break
            else:
                order = round_order(self.results, r, self.active)
                self.results = replace(self.results, order=(*self.order, order))
            self._run_round(r)
            stop = self.look()
            self.reporter.retotal(self._expected_runs(self.clock()))
            self._save(self.results)
        session = replace(
            self.results.session,
            stop=stop,
            complete=True,
            finished_at=now(),
            elapsed_s=round(self.clock(), 1),
        )
        self.reporter.note(f"stopped: {stop.message}")
        self._save(replace(self.results, session=session))
        return self.results

    def _run_round(self, r: int) -> None:
        configs = {c.key: c for c in self.results.configs}
        for pos, key in enumerate(self.order[r]):
            if (r, key) in self.done:
                continue
            label = f"round {r + 1}: {key}"
            self.reporter.running(label)
            config = configs[key]
            run = self._run_one(self.runtimes[config.variant], config, r, pos)
            refused = self.refused.pop(key, None)
            session = replace(self.results.session, elapsed_s=round(self.clock(), 1))
            results = replace(self.results.with_run(run), session=session)
            if refused is not None and key in self.active:  # the same in every process
                self.active.remove(key)
                failure = Failure(variant=config.variant, configs=(key,), stage="form",
                                  reason=refused, details={"kind": "form"})  # fmt: skip
                results = replace(results, failures=(*results.failures, failure))
                self.reporter.note(f"[red]fail[/] {key}: {refused}; it runs no more")
            self._save(results)
            self.done.add((r, key))
            self.reporter.advance(label)

    def _run_one(self, runtime: RuntimeEnv, config: ConfigEntry, r: int, pos: int) -> Run:
        """The config's process in round r (why its model form cannot be made, if the process
        says so, goes to `refused`)."""
        session = self.results.session
        started = now()
        outcome = runtime.run(
            payload_config(self.results.suite.benchmarks, config, self.results.suite.workload),
            config.env,
            session.cpus,
            session.timeout_s,
            zygote=config.key if self.results.suite.processes == "forked" else None,
            live=self.live,
        )
        fields = recorded(outcome, session.timeout_s, benchmark_result)
        checked = form_check_of((outcome.result or {}).get("form_check"))
        run = Run(
            round=r, position=pos, config=config.key, started_at=started, form_check=checked,
            **fields,
        )  # fmt: skip
        if run.failure:
            self.reporter.note(f"[red]fail[/] round {r + 1}: {config.key}: {run.failure.reason}")
        refused = (outcome.result or {}).get("form_refused")
        if refused:
            self.refused[config.key] = str(refused)
        return run

    def look(self) -> Stop | None:
        """After a finished round: record the look the design schedules there, stop the configs
        it puts out, and stop the session when the leading tier is resolved."""
        design, r = self.design, self.rounds_started
        aa = self.results.baseline.aa_config
        if not design.sequential or aa is None or r not in design.schedule:
            return None
        baseline = self.results.baseline.config
        look = self.looker(self.results, self.active, r, self.clock())
        self.results = replace(self.results, looks=(*(self.results.looks or ()), look))
        out = {e.config for e in look.eliminated}
        self.active = [c for c in self.active if c not in look.stopped]
        lead = [c for c in look.leading if c != baseline and c not in out]
        for e in look.eliminated:
            self.reporter.note(
                f"out after round {r}: {e.config} trails {e.slower_than} ({e.ratio:.3f}x paired "
                "by round, beyond the one-sided bound); the configs left still hold the fastest"
            )
        for c in look.rested:
            self.reporter.note(
                f"resting after round {r}: {c} is known to the target "
                f"{half_width(design.resolve)}: it runs no more rounds and stays in the leading "
                "tier, judged at this look"
            )
        if not lead:
            summary = f"only the baseline {baseline} can be the fastest"
        else:
            summary = (
                f"{len(lead)} {'config' if len(lead) == 1 else 'configs'} besides the baseline "
                f"could be the fastest, known to {half_width(look.resolution)} (target "
                f"{half_width(design.resolve)})"
            )
        left = look.rounds_left
        if rules(design.decisions).answer_decides:
            return self._decided(look, lead, left)
        self.reporter.note(
            f"after round {r}: {summary}; {len(self.active)} configs run"
            + (f"; about {left} more rounds" if left else "")
        )
        resolved = design.resolve is not None and look.resolution <= design.resolve
        if (resolved or not lead) and not look.aa_fit:
            self.reporter.note(
                f"the A/A control{self._control(look)} is still too wide for an answer at the "
                f"{look.margin:.1%} margin: running on until it is not"
            )
            return None
        if not lead:
            return Stop(
                reason="resolved",
                round=r,
                message=f"every other config is shown slower than the baseline {baseline} "
                f"after {r} rounds",
            )
        if resolved:
            return Stop(
                reason="resolved",
                round=r,
                message=f"the leading tier is resolved to {half_width(look.resolution)} (target "
                f"{half_width(design.resolve)}) after {r} rounds",
            )
        return None

    def _decided(self, look: Look, lead: Sequence[str], left: int | None) -> Stop | None:
        """Stop when the look decides the answer (rules 6: the config it names, Look.answer;
        rules 5: a leading config known to be within the margin of the fastest) and the A/A
        control does not show the baseline unlike its own copy."""
        r, baseline = look.round, self.results.baseline.config
        margin = f"the {look.margin:.1%} margin"
        if rules(self.design.decisions).standard:
            named = look.answer
            if named == baseline:
                state = f"no config can be faster than the baseline by more than {margin}"
            elif named is not None:
                state = f"{named} is faster than the baseline and within {margin} of the fastest"
            else:
                state = f"neither answer is shown at {margin} yet"
        else:
            named = _certified(look, baseline)
            floors = {c: f for c, f in look.floors.items() if f is not None}
            closest = max(floors, key=lambda c: floors[c], default=None)
            if named is not None:
                state = f"{named} is within {margin} of the fastest"
            elif closest is not None:
                state = (
                    f"none is known within {margin} of the fastest yet (closest: {closest}, at "
                    f"least {min(1.0, floors[closest]):.3f} of it)"
                )
            else:
                state = "nothing is measured yet"
        leaders = len(lead) + (baseline in look.leading)
        held = (
            " (the A/A control cannot tell the baseline from itself yet: only configs far behind "
            "are put out)"
            if look.held
            else ""
        )
        self.reporter.note(
            f"after round {r}: {leaders} could be the fastest{held}; {state}; "
            f"{len(self.active)} configs run" + (f"; about {left} more rounds" if left else "")
        )
        if named is None:
            return None
        if not look.aa_fit:
            why = (
                "cannot tell the baseline from itself yet"
                if look.held
                else "shows the baseline unlike its own copy"
            )
            self.reporter.note(f"the A/A control{self._control(look)} {why}: running on")
            return None
        return Stop(
            reason="resolved",
            round=r,
            message=f"the answer is decided after {r} rounds: {state}",
        )

    def _control(self, look: Look) -> str:
        """The A/A control's interval at a look, as a parenthesis (empty without one)."""
        control = look.estimates.get(self.results.baseline.aa_config or "")
        return f" ({control.ratio:.3f}x [{control.low:.3f}, {control.high:.3f}])" if control else ""

    def _stop_at_limit(self, r: int) -> Stop:
        if not self.design.sequential:
            return Stop(reason="fixed", round=r, message=f"the {r} rounds of a fixed design")
        return Stop(
            reason="max_rounds",
            round=r,
            message=f"the horizon of {r} rounds (max_rounds) is reached",
        )

    def _fits(self, elapsed: float) -> bool:
        """Whether one more round of the configs still running fits in the budget."""
        budget = self.design.budget_s
        if budget is None:
            return True
        walls: dict[str, list[float]] = defaultdict(list)
        for run in self.results.runs:
            walls[run.config].append(run.wall_s)
        every = [w for ws in walls.values() for w in ws] or [0.0]
        typical = statistics.median(every)
        needed = sum(statistics.median(walls[c][-3:]) if walls[c] else typical for c in self.active)
        return elapsed + needed <= budget

    def _expected_runs(self, elapsed: float) -> int:
        """Runs done plus the runs still expected (for the ETA): the rest of the current round,
        then the rounds to the first look, or after it the rounds the planner gave at the last
        look (the horizon when it could not tell), capped by what the budget allows."""
        results, design = self.results, self.design
        done = len(results.runs)
        looks = results.looks or ()
        started = self.rounds_started
        if not design.sequential:
            left_rounds = self.limit() - started
        else:
            planned = looks[-1].rounds_left if looks else None
            if not looks:
                left_rounds = max(0, design.first - started)
            else:
                left_rounds = planned if planned is not None else self.limit() - started
            left_rounds = min(left_rounds, self.limit() - started)
            budget = design.budget_s
            walls = [run.wall_s for run in results.runs]
            if budget is not None and walls:
                per_round = statistics.median(walls) * max(1, len(self.active))
                fits = int(max(0.0, budget - elapsed) // per_round)
                left_rounds = min(left_rounds, max(fits, 2 - started))
        current = self.order[-1] if self.order else ()
        unfinished = sum(1 for key in current if (started - 1, key) not in self.done)
        return done + unfinished + max(0, left_rounds) * len(self.active)
