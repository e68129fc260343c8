"""Rounds: per-round values of every (config, benchmark), as log throughput, the zygote each
process was forked from, and the paired per-round differences every comparison is made on
(rounds pair the configs, so drift of the machine cancels)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Run, sample_values

RoundKey = tuple[str, int]  # (session id, round)
UNNAMED_CHILDREN = 5
"""How many processes a zygote forked, one zygote of a config at a time, when results did not
yet name each process's zygote."""


def round_table(sessions: Sequence[Session]) -> dict[tuple[str, str], dict[RoundKey, float]]:
    """(config, benchmark) -> {(session, round): the round's median sample throughput}."""
    table: dict[tuple[str, str], dict[RoundKey, float]] = defaultdict(dict)
    for s in sessions:
        for run in s.results.runs:
            for bench, value in run.values().items():
                table[(run.config, bench)][(s.id, run.round)] = value
    return table


def raw_samples(sessions: Sequence[Session]) -> dict[tuple[str, str], list[float]]:
    """(config, benchmark) -> every raw sample throughput, for distribution plots."""
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in sessions:
        for key, values in sample_values(s.results.runs).items():
            out[key] += values
    return out


def zygote_table(sessions: Sequence[Session]) -> dict[tuple[str, RoundKey], str]:
    """(config, (session, round)) -> the zygote its process was forked from (Rounds.add)."""
    rounds = Rounds({})
    for s in sessions:
        for run in s.results.runs:
            rounds.place(s.id, run, s.results.suite.processes == "forked")
    return rounds.zygotes


class Rounds:
    """Per-round log throughput of every (config, benchmark), and the speeds computed from it,
    cached: every comparison at a look asks for the baseline's speed again; a config's speed in
    a round is its mean log throughput over the benchmarks, weighted by `weights` (1 where not
    named). `zygotes` says which zygote each forked process came from (a fresh process is its
    own); `memo` keeps what the analysis computes from the rounds seen so far
    (analysis.zygotes), cleared with the speeds when a run is added."""

    def __init__(
        self,
        table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
        zygotes: Mapping[tuple[str, RoundKey], str] | None = None,
        weights: Mapping[str, float] | None = None,
    ) -> None:
        self.table: dict[tuple[str, str], dict[RoundKey, float]] = {
            key: {k: math.log(v) for k, v in rounds.items()} for key, rounds in table.items()
        }
        self.zygotes: dict[tuple[str, RoundKey], str] = dict(zygotes or {})
        self.weights: dict[str, float] = dict(weights or {})
        self._forked: dict[tuple[str, str], int] = {}
        self._speeds: dict[tuple[str, tuple[str, ...], int | None], dict[RoundKey, float]] = {}
        self.memo: dict[tuple[object, ...], object] = {}

    def get(self, key: tuple[str, str]) -> Mapping[RoundKey, float]:
        return self.table.get(key, {})

    def add(self, session: str, run: Run, forked: bool = False) -> None:
        """One more finished run (its median sample throughput per benchmark), forked or not."""
        for bench, value in run.values().items():
            self.table.setdefault((run.config, bench), {})[(session, run.round)] = math.log(value)
        self.place(session, run, forked)
        self._speeds.clear()
        self.memo.clear()

    def place(self, session: str, run: Run, forked: bool) -> None:
        """Record which zygote a run's process came from: the one it names, or for a forked
        process recorded before zygotes were, the one the runtime of the time forked it from
        (each config's processes in blocks of UNNAMED_CHILDREN, in the order they ran)."""
        key = (run.config, (session, run.round))
        if run.zygote is not None:
            self.zygotes[key] = run.zygote
        elif forked:
            count = self._forked.get((session, run.config), 0)
            self._forked[(session, run.config)] = count + 1
            self.zygotes[key] = f"{session}:{run.config}:{count // UNNAMED_CHILDREN}"

    def zygote(self, config: str, key: RoundKey) -> str:
        """The zygote of a config's process in a round (a fresh process: its own)."""
        return self.zygotes.get((config, key)) or f"{config}@{key[0]}:{key[1]}"

    def speed(
        self, config: str, benchmarks: Sequence[str], upto: int | None
    ) -> dict[RoundKey, float]:
        """round -> the config's speed: its weighted mean log throughput over `benchmarks`, for
        rounds that measured them all (before round `upto` only)."""
        key = (config, tuple(benchmarks), upto)
        if key not in self._speeds:
            per_round: dict[RoundKey, list[float]] = defaultdict(list)
            weight = [self.weights.get(b, 1.0) for b in benchmarks]
            if sum(weight) <= 0.0:  # every benchmark left out: equally weighted
                weight = [1.0] * len(benchmarks)
            total = sum(weight)
            for bench in benchmarks:
                for k, value in self.get((config, bench)).items():
                    if upto is None or k[1] < upto:
                        per_round[k].append(value)
            self._speeds[key] = {  # in round order, which differences() relies on
                k: sum(w * x for w, x in zip(weight, v, strict=True)) / total
                for k, v in sorted(per_round.items())
                if len(v) == len(benchmarks)
            }
        return self._speeds[key]


def shared_rounds(
    logs: Rounds,
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None = None,
) -> list[RoundKey]:
    """The rounds `differences` takes, in the same order (every round of the config's own, with
    no reference: a contrast within it)."""
    mine = logs.speed(config, benchmarks, upto)
    theirs = [logs.speed(r, benchmarks, upto) for r in reference]
    if not theirs:
        return list(mine)
    if len(theirs) == 1:
        (only,) = theirs
        return [key for key in mine if key in only]
    return [key for key in mine if any(key in t for t in theirs)]


def differences(
    logs: Rounds,
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None = None,
) -> list[float]:
    """Per round: the config's speed minus the reference's (the mean of the reference configs
    that ran in that round), over `benchmarks`, in round order; rounds before `upto` only."""
    mine = logs.speed(config, benchmarks, upto)  # in round order
    theirs = [logs.speed(r, benchmarks, upto) for r in reference]
    if len(theirs) == 1:  # one reference (a pair of configs): the hot path of every look
        (only,) = theirs
        return [value - only[key] for key, value in mine.items() if key in only]
    out = []
    for key, value in mine.items():
        present = [t[key] for t in theirs if key in t]
        if present:
            out.append(value - sum(present) / len(present))
    return out
