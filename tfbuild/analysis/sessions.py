"""Results files read for analysis: the sessions, the machine class each comes from (which decides
what compares with what), and the looks at which comparisons are judged."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild import sequential
from tfbuild.errors import ResultsError
from tfbuild.machine.cpu import level_name
from tfbuild.machine.profile import HostProfile
from tfbuild.results.codec import load
from tfbuild.results.model import Design, Look, LookEstimate, ProcessPath, Results
from tfbuild.results.rules import CURRENT_RULES, rules


@dataclass(frozen=True)
class Timeline:
    """The looks comparisons were judged at, for alpha spending: their rounds, the horizon
    (None for a fixed design: one look at the full alpha), and whether the last look spent
    what was left (the session ended there on its budget, not on the data)."""

    rounds: tuple[int, ...]
    horizon: int | None = None
    spend_rest: bool = False
    rules: int = CURRENT_RULES
    """The decision rules (results.model.CURRENT_RULES): from 2 on, the one-sided comparisons that
    put configs out early spend alpha as Pocock (early), the two-sided intervals judged when
    the session stops along t^2 (late); under 1 both as Pocock."""

    def level(self, alpha: float, look: int, one_sided: bool = False) -> float:
        """The nominal level of a comparison at the look after `look` rounds: two-sided, or
        one-sided for a one-sided comparison."""
        if self.horizon is None:
            return alpha
        if look not in self.rounds:
            return 0.0
        k = self.rounds.index(look)
        last = k == len(self.rounds) - 1
        spending = "power" if rules(self.rules).maxt and not one_sided else "pocock"
        levels = sequential.sequential_levels(
            alpha,
            self.rounds[: k + 1],
            self.horizon,
            self.spend_rest and last,
            one_sided,
            spending=spending,
        )
        return levels[-1]

    @property
    def last(self) -> int:
        return self.rounds[-1] if self.rounds else 0


@dataclass(frozen=True)
class Session:
    """A results file and what it holds."""

    path: Path
    results: Results

    @property
    def id(self) -> str:
        return self.results.id

    @property
    def host_key(self) -> str:
        return self.results.session.host_key or host_key(self.results.host)

    @property
    def design(self) -> Design:
        return self.results.design


def host_key(host: HostProfile) -> str:
    """The class of machine results come from, which decides what compares with what: the CPU
    model, the instruction sets TensorFlow uses (level and a digest of the set), the CPUs the
    session could use, the memory class (total or cgroup limit, to the next power of two GiB)
    and the GPUs. Never the hostname: hosted CI runners get a new one every job."""
    isa = sorted(name for name, have in host.cpu.tf_flags.items() if have)
    digest = hashlib.sha256(" ".join(isa).encode()).hexdigest()[:6]
    topology = host.topology
    parts = [
        host.cpu.model_name,
        f"{level_name(host.cpu.level) or 'x86-64'} isa:{digest}",
        f"{topology.usable_cpus or topology.logical_cpus} CPUs",
    ]
    memory = host.memory
    limits = [b for b in (memory.total_bytes, memory.cgroup_limit_bytes) if b] if memory else []
    if limits:
        parts.append(f"{2 ** max(0, math.ceil(math.log2(min(limits) / 2**30 * 0.98)))} GiB")
    gpus = [d.name for d in host.gpus.devices] if host.gpus else []
    parts.append(" + ".join(gpus) if gpus else "no GPU")
    return " / ".join(parts)


def work_of(results: Results) -> tuple[Any, ...]:
    """What a session measured: its suite's version, how it started its benchmark processes
    and its workload (None: the suite alone)."""
    suite = results.suite
    return (suite.version, suite.processes, suite.workload.identity() if suite.workload else None)


STARTED: dict[ProcessPath, str] = {
    "fresh": "ran each process fresh (a new interpreter importing TensorFlow)",
    "forked": "forked each from a process of its config that had imported TensorFlow",
}
"""How a session started its benchmark processes, said after the session's name."""

DIFFERENT_LEVELS = "their levels differ by a few percent per benchmark"
"""Why sessions that started their processes differently are not compared, although they time
the same work (docs/measurements/process-cost-*)."""


def describe_work(results: Results) -> str:
    workload = results.suite.workload
    return f"workload {workload.describe()}" if workload else "the fixed suite alone"


def load_sessions(paths: Iterable[Path], same_work: bool = True) -> list[Session]:
    """The results files as sessions; ResultsError when they measured different work (unless
    `same_work` is False: old results for the gate, which compares only the same work)."""
    sessions = [Session(p, load(p)) for p in paths]
    if same_work:
        check_same_work(sessions)
    return sessions


def check_same_work(sessions: Sequence[Session]) -> None:
    """ResultsError naming what differs when the sessions are not one comparison: their suite
    versions, how they started their benchmark processes, or their workloads."""
    versions = {s.results.suite.version for s in sessions}
    if len(versions) > 1:
        raise ResultsError(
            f"these results come from suite versions {sorted(versions)}; "
            "results of different suites measure different things and are not compared"
        )
    started: dict[ProcessPath, list[str]] = {}
    for s in sessions:
        started.setdefault(s.results.suite.processes, []).append(str(s.path))
    if len(started) > 1:
        said = "; ".join(f"{', '.join(files)} {STARTED[path]}" for path, files in started.items())
        raise ResultsError(
            "these results started their benchmark processes differently and are not ranked "
            f"together: {said}. Both time the same work, but {DIFFERENT_LEVELS}, so one ranking "
            "of both would measure the path as much as the builds: compare each path's sessions "
            "on their own"
        )
    first = sessions[0] if sessions else None
    for s in sessions[1:]:
        if first is not None and work_of(s.results) != work_of(first.results):
            raise ResultsError(
                f"these results measured different work and are not compared: {first.path} "
                f"ran {describe_work(first.results)}; {s.path} ran {describe_work(s.results)}"
            )


def final_timeline(
    results: Results, design: Design, rounds: int
) -> tuple[Timeline, dict[str, int], list[str]]:
    """When each comparison of a session is judged, at the end: a fixed design at its one
    look; a sequential one at the looks it took, a config stopped early at the look that
    stopped it (put out, or rested), and, when the session ended on its budget or horizon
    rather than on the data, a last look at the final round that spends what alpha is left."""
    if not design.sequential:
        return Timeline((rounds,)), {}, []
    looks = results.looks or ()
    taken = [look.round for look in looks]
    at = {c: look.round for look in looks for c in look.stopped}
    stop = results.session.stop.reason if results.session.stop else None
    notes: list[str] = []
    if stop in ("budget", "max_rounds", "fixed"):
        if not taken or taken[-1] != rounds:
            taken.append(rounds)
        return (
            Timeline(tuple(taken), design.horizon, spend_rest=True, rules=design.rules),
            at,
            notes,
        )
    if stop not in ("resolved", "nothing_runs"):
        notes.append(
            "the session has not finished: what it claims so far is what its last look knew"
            if taken
            else "the session has not finished and has not looked at its data yet: it makes no "
            "claims until then"
        )
    return Timeline(tuple(taken), design.horizon, rules=design.rules), at, notes


def rested_at(looks: Sequence[Look] | None) -> dict[str, int]:
    """config -> the look it rested at (rules 4: resolved to the target while another leading
    config was not): from then on it runs no more rounds and is judged there."""
    return {c: look.round for look in looks or () for c in look.rested}


def rest_estimates(looks: Sequence[Look] | None) -> dict[str, LookEstimate]:
    """The leading configs that rested at earlier looks, each with its interval as the look it
    rested at recorded it: what later looks count them by (never judged again while the
    session runs, so a resolved config stays resolved and its pairs are not tested anew)."""
    return {c: look.estimates[c] for look in looks or () for c in look.rested}
