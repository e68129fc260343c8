"""What today's decision rules would have done with a recorded sequential session: the session's
own processes, round by round, through the session loop (tfbuild.bench.schedule) with today's
looks, so the look it would have stopped at and the processes it would have run by then can be
set beside what was recorded. A config the replay keeps running after the recorded session had
put it out (or a round after the recorded session stopped) has no process of that round to
replay: one of its recorded processes is drawn at random in its place (seeded by the session,
round and config), and counted as not recorded."""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast

from tfbuild.analysis.answer import Answer
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.looks import SequentialLooks
from tfbuild.analysis.sessions import Session
from tfbuild.bench.schedule import RoundRunner
from tfbuild.errors import ResultsError
from tfbuild.progress import QuietReporter
from tfbuild.results.model import ConfigEntry, Results, Run
from tfbuild.results.rules import CURRENT_RULES
from tfbuild.runtime.base import RuntimeEnv

NOT_RECORDED = (
    "not recorded: the session replayed had put this config out or rested it by then, or had "
    "stopped"
)


@dataclass(frozen=True)
class Replayed:
    """A recorded session and what today's rules make of its processes."""

    recorded: Results
    replayed: Results
    missing: int
    """Processes the replay would have run that the session had not recorded (each replaced
    by one of the config's recorded processes, drawn at random)."""
    answers: tuple[Answer, Answer] | None = None
    """What today's report answers for the recorded session and for its replay."""

    @property
    def processes(self) -> int:
        return len(self.replayed.runs)

    @property
    def seconds(self) -> float:
        """Benchmarking time of the processes replayed (their recorded wall time)."""
        return float(self.replayed.session.elapsed_s or 0.0)


class _Clock:
    """Session time: each process replayed adds its recorded wall time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class _RecordedRounds(RoundRunner):
    """The session loop with each process taken from the recording instead of started."""

    def __init__(self, results: Results, recorded: Sequence[Run], clock: _Clock) -> None:
        runtimes = {name: cast(RuntimeEnv, None) for name in results.variants or {}}
        looks = SequentialLooks(forecast=False)  # what the rules decide, not when they expected to
        super().__init__(results, runtimes, QuietReporter(), lambda r: r, clock, looks)
        self.recorded = {(run.round, run.config): run for run in recorded}
        self.of_config: dict[str, list[Run]] = defaultdict(list)
        for run in recorded:
            self.of_config[run.config].append(run)
        self.missing = 0
        self.time = clock

    def _run_one(self, runtime: RuntimeEnv, config: ConfigEntry, r: int, pos: int) -> Run:
        run = self.recorded.get((r, config.key))
        if run is None:
            self.missing += 1
            seed = f"{self.results.id}:{r}:{config.key}"
            run = random.Random(seed).choice(self.of_config[config.key])
        self.time.now += run.wall_s
        return replace(run, round=r, position=pos)


def replay(recorded: Results, first: int | None = None) -> Replayed:
    """The recorded sequential session's processes through today's rules (results.model
    CURRENT_RULES), its first look after `first` rounds (the recorded one when None)."""
    design = recorded.design
    if not design.sequential or design.horizon is None:
        raise ResultsError(
            f"session {recorded.id} has a fixed design: it took no looks, so there is nothing "
            "to replay (only sequential sessions stop on their data)"
        )
    chosen = first if first is not None else design.first
    if not 2 <= chosen <= design.horizon:
        raise ResultsError(
            f"--min-rounds {chosen}: a look needs at least 2 rounds and comes by the horizon "
            f"({design.horizon} rounds)"
        )
    today = replace(design, first=chosen, rules=CURRENT_RULES)
    empty = replace(
        recorded,
        session=replace(
            recorded.session,
            design=today,
            stop=None,
            complete=False,
            finished_at=None,
            elapsed_s=0.0,
        ),
        looks=(),
        order=(),
        runs=(),
    )
    schedule = _RecordedRounds(empty, recorded.runs, _Clock())
    replayed = schedule.run()
    answers = tuple(
        analyse_host([Session(Path(f"{results.id}.json"), results)]).answer
        for results in (recorded, replayed)
    )
    return Replayed(recorded, replayed, schedule.missing, (answers[0], answers[1]))
