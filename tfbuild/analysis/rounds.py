"""Rounds: per-round values of every (config, benchmark), as log throughput, and the paired
per-round differences every comparison is made on (rounds pair the configs, so drift of the
machine cancels)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Run, sample_values

RoundKey = tuple[str, int]  # (session id, round)


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


class Rounds:
    """Per-round log throughput of every (config, benchmark), and the levels computed from it,
    cached: every comparison at a look asks for the baseline's level again."""

    def __init__(self, table: Mapping[tuple[str, str], Mapping[RoundKey, float]]) -> None:
        self.table: dict[tuple[str, str], dict[RoundKey, float]] = {
            key: {k: math.log(v) for k, v in rounds.items()} for key, rounds in table.items()
        }
        self._levels: dict[tuple[str, tuple[str, ...], int | None], dict[RoundKey, float]] = {}

    def get(self, key: tuple[str, str]) -> Mapping[RoundKey, float]:
        return self.table.get(key, {})

    def add(self, session: str, run: Run) -> None:
        """One more finished run (its median sample throughput per benchmark)."""
        for bench, value in run.values().items():
            self.table.setdefault((run.config, bench), {})[(session, run.round)] = math.log(value)
        self._levels.clear()

    def level(
        self, config: str, benchmarks: Sequence[str], upto: int | None
    ) -> dict[RoundKey, float]:
        """round -> mean log throughput over `benchmarks`, for rounds that measured them all
        (before round `upto` only)."""
        key = (config, tuple(benchmarks), upto)
        if key not in self._levels:
            per_round: dict[RoundKey, list[float]] = defaultdict(list)
            for bench in benchmarks:
                for k, value in self.get((config, bench)).items():
                    if upto is None or k[1] < upto:
                        per_round[k].append(value)
            self._levels[key] = {  # in round order, which differences() relies on
                k: sum(v) / len(v)
                for k, v in sorted(per_round.items())
                if len(v) == len(benchmarks)
            }
        return self._levels[key]


def differences(
    logs: Rounds,
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None = None,
) -> list[float]:
    """Per round: the config's level minus the reference's (the mean of the reference configs
    that ran in that round), over `benchmarks`, in round order; rounds before `upto` only."""
    mine = logs.level(config, benchmarks, upto)  # in round order
    theirs = [logs.level(r, benchmarks, upto) for r in reference]
    if len(theirs) == 1:  # one reference (a pair of configs): the hot path of every look
        (only,) = theirs
        return [value - only[key] for key, value in mine.items() if key in only]
    out = []
    for key, value in mine.items():
        present = [t[key] for t in theirs if key in t]
        if present:
            out.append(value - sum(present) / len(present))
    return out
