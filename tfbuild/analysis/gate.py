"""The regression gate: new results against old ones of the same machine class (unpaired: the
rounds are different), with a Holm-adjusted Welch test per (config, benchmark), and the configs
the old results measured that the new ones lost."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from tfbuild import stats
from tfbuild.analysis.estimates import ALPHA
from tfbuild.analysis.gaps import failures_of
from tfbuild.analysis.rounds import round_table
from tfbuild.analysis.sessions import (
    DIFFERENT_LEVELS,
    STARTED,
    Session,
    check_same_work,
    describe_work,
    work_of,
)
from tfbuild.results.model import is_aa


@dataclass(frozen=True)
class Change:
    host: str
    config: str
    benchmark: str
    ratio: float
    """new / old throughput: below 1 is slower."""
    low: float
    high: float
    p_holm: float
    regression: bool


@dataclass(frozen=True)
class Missing:
    """A config the old results measured that the new ones did not measure (all of it, or some
    benchmarks), although the new session planned it: a crash is a failure, not an absence."""

    host: str
    config: str
    benchmarks: tuple[str, ...]
    everything: bool
    why: str


@dataclass(frozen=True)
class Gate:
    changes: list[Change]
    missing: list[Missing]
    notes: list[str]
    """What was not compared and why (a machine class on one side only, a config the new
    matrix no longer has); none of these fail the gate."""
    strangers: tuple[tuple[str, ...], tuple[str, ...]] | None = None
    """The machine classes of the new and the old results when none is on both sides, so
    nothing at all was compared: that fails the gate."""
    other_work: str | None = None
    """Why nothing was compared when every old result measured other work (another model,
    other inputs, or the suite where the new session ran a workload): that fails the gate."""
    nothing: str | None = None
    """Why nothing was compared for any other reason (the old results all of another suite
    version, or of processes started the other way, or sharing no config and benchmark with
    the new ones): that fails the gate."""
    suite_change: bool = False
    """`nothing` is a suite change (every old result of another suite version): one a person
    may let pass (compare --new-suite-passes)."""
    suite_change_passes: bool = False
    """A person let the suite change pass: it is said, and does not fail the gate."""

    def compared(self) -> str:
        """What the gate compared, in a line: "compared N configs x M benchmarks", or why it
        compared nothing."""
        if not self.changes:
            why = self.nothing or self.other_work
            if why is None and self.strangers is not None:
                why = "the old and the new results are of different machine classes"
            passed = "; passed (--new-suite-passes)" if self.suite_change_passes else ""
            return f"compared nothing: {why or 'no old results'}{passed}"
        configs = len({c.config for c in self.changes})
        benchmarks = len({c.benchmark for c in self.changes})
        hosts = len({c.host for c in self.changes})
        where = f" on {hosts} machine classes" if hosts > 1 else ""
        return (
            f"compared {configs} config{'s' * (configs != 1)} x {benchmarks} "
            f"benchmark{'s' * (benchmarks != 1)}{where}"
        )

    def causes(self, fail_above: float) -> list[str]:
        """One line per reason the gate fails."""
        lines = []
        if self.nothing is not None and not self.suite_change_passes:
            passes = " (--new-suite-passes lets a suite change pass)" if self.suite_change else ""
            lines.append(f"nothing compared: {self.nothing}{passes}")
        if self.other_work is not None:
            lines.append(f"nothing compared: {self.other_work}")
        if self.strangers is not None:
            new, old = self.strangers
            lines.append(
                f"nothing compared: the old results are from {'; '.join(old)}, the new ones "
                f"from {'; '.join(new)}, another machine class (--allow-different-hosts "
                "compares them anyway)"
            )
        for m in self.missing:
            what = "no results" if m.everything else "no result for " + ", ".join(m.benchmarks)
            before = f"{len(m.benchmarks)} benchmarks" if m.everything else "them"
            lines.append(
                f"{m.config}: {what} in the new results ({m.why}); the old ones measured "
                f"{before} [{m.host}]"
            )
        lines += [
            f"{c.config} {c.benchmark} {c.ratio - 1:+.1%} (slower than {fail_above:.0%} allows, "
            f"Holm p {c.p_holm:.3g}) [{c.host}]"
            for c in self.changes
            if c.regression
        ]
        return lines


def gate(
    new: Sequence[Session],
    old: Sequence[Session],
    fail_above: float,
    allow_different_hosts: bool = False,
) -> Gate:
    """New results against old ones of the same machine class (see `host_key`), or all against
    all with `allow_different_hosts`. Every (config, benchmark) measured in both gets a verdict:
    slower by more than `fail_above` with a Holm-adjusted Welch test below 0.05 (one family
    over every machine class) is a regression; a config the old results measured and the new
    session planned but did not measure, wholly or in part, is missing."""
    notes: list[str] = []
    check_same_work(new)  # says what is mixed
    old, nothing, suite_change = _same_suite_and_start(new, old, notes)
    work = work_of(new[0].results) if new else None
    other_work = [s for s in old if work_of(s.results) != work]
    unlike: str | None = None
    if new and other_work:  # another model, other inputs, or the suite alone
        unlike = (
            f"{len(other_work)} old result file(s) measured other work and are not compared: "
            f"{other_work[0].path} ran {describe_work(other_work[0].results)}; the new session "
            f"ran {describe_work(new[0].results)}"
        )
        old = [s for s in old if work_of(s.results) == work]
        if old:
            notes.append(unlike)
            unlike = None
    if allow_different_hosts:
        pairs = [("any machine", list(new), list(old))]
    else:
        new_by, old_by = _by_host(new), _by_host(old)
        pairs = [(key, group, old_by[key]) for key, group in new_by.items() if key in old_by]
        notes += [f"no old results from {key}: nothing to compare" for key in new_by
                  if key not in old_by and unlike is None and nothing is None]  # fmt: skip
        notes += [f"no new results from {key}" for key in old_by if key not in new_by]
    keys, tests, missing = _tested(pairs, notes)
    adjusted = stats.holm([t.p for t in tests])
    changes = []
    for (host, config, bench), test, p in zip(keys, tests, adjusted, strict=True):
        ratio = math.exp(test.difference)
        changes.append(
            Change(
                host,
                config,
                bench,
                ratio,
                math.exp(test.low),
                math.exp(test.high),
                p,
                regression=p < ALPHA and ratio < 1 - fail_above,
            )
        )
    strangers = None
    if not pairs and old and not allow_different_hosts:
        strangers = (tuple(_by_host(new)), tuple(_by_host(old)))
    elif old and not keys and not missing and unlike is None:
        nothing = "the new and the old results share no config and benchmark"
    return Gate(changes, missing, notes, strangers, unlike, nothing, suite_change)


def _tested(
    pairs: Sequence[tuple[str, list[Session], list[Session]]], notes: list[str]
) -> tuple[list[tuple[str, str, str]], list[stats.TwoSampleTest], list[Missing]]:
    """For each machine class's new and old sessions: every (config, benchmark) the old ones
    measured, tested against the new ones (Welch, on log throughput), or missing from them."""
    keys: list[tuple[str, str, str]] = []
    tests = []
    missing: list[Missing] = []
    for host, new_group, old_group in pairs:
        new_table, old_table = round_table(new_group), round_table(old_group)
        planned = {c.key for s in new_group for c in s.results.configs}
        measured: dict[str, set[str]] = defaultdict(set)
        for config, bench in old_table:
            if not is_aa(config):
                measured[config].add(bench)
        for config, benches in sorted(measured.items()):
            if config not in planned:
                notes.append(f"{config}: not in the new session's matrix [{host}]")
                continue
            absent = sorted(b for b in benches if not new_table.get((config, b)))
            if absent:
                everything = len(absent) == len(benches)
                why = _why_missing(new_group, config)
                missing.append(Missing(host, config, tuple(absent), everything, why))
            for bench in sorted(benches - set(absent)):
                a = [math.log(v) for v in new_table[(config, bench)].values()]
                b = [math.log(v) for v in old_table[(config, bench)].values()]
                keys.append((host, config, bench))
                tests.append(stats.welch_test(a, b))
    return keys, tests, missing


def _same_suite_and_start(
    new: Sequence[Session], old: Sequence[Session], notes: list[str]
) -> tuple[list[Session], str | None, bool]:
    """The old results of the new ones' suite version whose processes started the same way
    (forked or fresh); the others are noted, or, when none is left, the reason nothing is
    compared, and whether it was a suite change (every old result of another version)."""
    nothing: str | None = None
    versions = {s.results.suite.version for s in new}
    other = sorted({s.results.suite.version for s in old} - versions)
    kept = [s for s in old if s.results.suite.version in versions]
    suite_change = bool(other) and not kept
    if other:  # after an upgrade: the old work is not this work, so nothing to compare with
        suites = ", ".join(f"v{v}" for v in other)
        if kept:
            notes.append(
                f"old results of suite {suites} are not compared with suite v{min(versions)}: "
                "they measured different work"
            )
        else:
            nothing = (
                f"every old result is of suite {suites}, the new ones of suite "
                f"v{min(versions)}: they measured different work"
            )
    started = {s.results.suite.processes for s in new}
    other_started = [s for s in kept if s.results.suite.processes not in started]
    if new and other_started:  # the other way of starting processes: the same work, other levels
        path = other_started[0].results.suite.processes
        (now,) = started
        why = (
            f"{len(other_started)} old result file(s) that {STARTED[path]} are not compared "
            f"with new ones that {STARTED[now]}: {DIFFERENT_LEVELS} ({other_started[0].path})"
        )
        kept = [s for s in kept if s.results.suite.processes in started]
        if kept:
            notes.append(why)
        else:
            nothing = why
    return kept, nothing, suite_change


def _by_host(sessions: Sequence[Session]) -> dict[str, list[Session]]:
    groups: dict[str, list[Session]] = defaultdict(list)
    for s in sessions:
        groups[s.host_key].append(s)
    return groups


def _why_missing(sessions: Sequence[Session], config: str) -> str:
    """What the sessions recorded about a config's missing results: its first failure."""
    for failure in failures_of(sessions):
        if config in failure.who.split(", ") or failure.who.startswith(config + " "):
            return failure.reason
    return "nothing recorded: the session may have stopped early"
