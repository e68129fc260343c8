"""The rounds of a session as they run: which config runs next, each run recorded, and the
stop the analysis's Looker decides acted on.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from tfbuild.bench.failures import form_check_of, recorded
from tfbuild.bench.options import payload_config
from tfbuild.bench.pace import expected_runs, fits
from tfbuild.progress import Reporter
from tfbuild.results.codec import Record, benchmark_result, now
from tfbuild.results.model import ConfigEntry, Design, Failure, Look, Results, Run, Stop
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.forked import live_zygotes
from tfbuild.wording import duration


@dataclass(frozen=True)
class Looked:
    """A look at a sequential session's data after a scheduled round, what it decides and the
    words for it: the look as the results record it, the stop (None: run on) and the lines a
    person reads as the session runs, in order."""

    look: Look
    stop: Stop | None
    notes: tuple[str, ...]


class Looker(Protocol):
    """Looks at a sequential session's data after a scheduled round and decides whether it
    stops (tfbuild.analysis.looks.SequentialLooks): which configs are out, the leading tier and
    its resolution, the stop; and says how long a design runs."""

    def __call__(
        self, results: Results, active: Sequence[str], round_: int, elapsed: float
    ) -> Looked: ...

    def describe(self, design: Design) -> str: ...


def round_order(results: Results, round_: int, keys: Sequence[str]) -> tuple[str, ...]:
    """Round `round_`'s order of `keys`: a shuffle drawn from the session's seed and the round
    number, so a resumed session draws the same orders."""
    order = sorted(keys)
    random.Random(f"{results.session.seed}:{round_}").shuffle(order)
    return tuple(order)


class RoundRunner:
    """Runs a session's rounds: the results so far, which configs still run, and the looks
    (each with the stop the Looker decided). Each finished run and look is recorded at once."""

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
                self._expected(),
                f"benchmarking {len(self.active)} configs ({self.looker.describe(design)})",
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
            elif design.sequential and r >= 2 and not fits(self.results, self.active, self.clock()):
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
            self.reporter.retotal(self._expected())
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
        it puts out, say what it found, and stop the session when it says so."""
        design, r = self.design, self.rounds_started
        aa = self.results.baseline.aa_config
        if not design.sequential or aa is None or r not in design.schedule:
            return None
        looked = self.looker(self.results, self.active, r, self.clock())
        self.results = replace(self.results, looks=(*(self.results.looks or ()), looked.look))
        self.active = [c for c in self.active if c not in looked.look.stopped]
        for note in looked.notes:
            self.reporter.note(note)
        return looked.stop

    def _expected(self) -> int:
        """Runs done plus the runs still expected, for the ETA (bench.pace.expected_runs)."""
        current = self.order[-1] if self.order else ()
        unfinished = sum(1 for key in current if (self.rounds_started - 1, key) not in self.done)
        return expected_runs(self.results, self.active, unfinished, self.limit(), self.clock())

    def _stop_at_limit(self, r: int) -> Stop:
        if not self.design.sequential:
            return Stop(reason="fixed", round=r, message=f"the {r} rounds of a fixed design")
        return Stop(
            reason="max_rounds",
            round=r,
            message=f"the horizon of {r} rounds (max_rounds) is reached",
        )
