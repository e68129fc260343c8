"""What the sessions did not measure: the configs that failed a round or a benchmark, and every
failure with who and why, for the report's warnings and the gate; and the report's problems
(Problems): those, with the warnings of the steps before and the software the builds differ
in."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tfbuild.analysis.estimates import Setup
from tfbuild.analysis.sessions import Session
from tfbuild.analysis.software import software_differences
from tfbuild.results.model import VariantRecord


@dataclass(frozen=True)
class Trouble:
    """One line of the report's failures: who failed, and where and why."""

    who: str
    reason: str


@dataclass(frozen=True)
class Gaps:
    """What a config did not measure: it stays in the report with what it did."""

    rounds: int
    failed_rounds: int
    missing: tuple[str, ...]
    """Benchmarks without any result, so its overall speed is over the others."""
    failed_benchmarks: tuple[str, ...]
    """Benchmarks that failed in at least one round."""

    @property
    def clean(self) -> bool:
        return not (self.failed_rounds or self.missing or self.failed_benchmarks)

    def text(self) -> str:
        parts = []
        if self.failed_rounds:
            parts.append(f"failed in {self.failed_rounds} of {self.rounds} rounds")
        if self.missing:
            parts.append(f"no results for {', '.join(self.missing)} (overall over the rest)")
        if self.failed_benchmarks and set(self.failed_benchmarks) != set(self.missing):
            parts.append(f"{', '.join(self.failed_benchmarks)} failed in some rounds")
        return "; ".join(parts)


@dataclass(frozen=True, kw_only=True)
class Problems:
    """What went wrong or differs: warnings, the configs that missed measurements, and what
    failed to build, install or run."""

    warnings: list[str]
    flags: dict[str, Gaps]
    failures: list[Trouble]


def problems_of(
    sessions: Sequence[Session],
    setup: Setup,
    variants: Mapping[str, VariantRecord],
    warnings: Sequence[str],
) -> Problems:
    """The `warnings` so far, then the software the `variants` differ in and each config that
    missed measurements; what failed."""
    flags = gaps_of(sessions, setup)
    failures = failures_of(sessions)
    said = [*warnings, *software_differences(variants)]
    said += [
        f"{config}: {f.text()}; it is ranked on what it measured"
        for config, f in flags.items()
        if not f.clean
    ]
    return Problems(warnings=said, flags=flags, failures=failures)


def gaps_of(sessions: Sequence[Session], setup: Setup, upto: int | None = None) -> dict[str, Gaps]:
    """What each config (and the baseline) did not measure, where it measured anything (in the
    rounds before `upto`)."""
    rounds: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    bench_failed: dict[str, set[str]] = defaultdict(set)
    for s in sessions:
        for run in s.results.runs:
            if upto is not None and run.round >= upto:
                continue
            rounds[run.config] += 1
            if run.failure is not None:
                failed[run.config] += 1
            for bench, entry in run.benchmarks.items():
                if entry.error is not None:
                    bench_failed[run.config].add(bench)
    return {
        c: Gaps(
            rounds=rounds[c],
            failed_rounds=failed[c],
            missing=tuple(b for b in setup.benchmarks if b not in setup.measured.get(c, ())),
            failed_benchmarks=tuple(sorted(bench_failed[c])),
        )
        for c in [*setup.compared, setup.baseline]
        if rounds[c]
    }


def flagged(sessions: Sequence[Session], setup: Setup, upto: int | None = None) -> dict[str, str]:
    """The configs that failed a round or a benchmark (before round `upto`), with what they
    missed: never the one to use."""
    return {c: g.text() for c, g in gaps_of(sessions, setup, upto).items() if not g.clean}


def failures_of(sessions: Sequence[Session]) -> list[Trouble]:
    """Every failure the sessions recorded: variants that could not be measured, runs that
    failed, and benchmarks that raised, each with who and why. A config's benchmarks that
    raised the same error are one line, with the rounds it was raised in (a form the model
    cannot take fails every benchmark of every round it runs, in the same words)."""
    failures = []
    raised: dict[tuple[str, str], tuple[set[int], list[str]]] = {}
    for s in sessions:
        for f in s.results.failures:
            failures.append(Trouble(", ".join(f.configs) or f.variant, f"{f.stage}: {f.reason}"))
        for run in s.results.runs:
            if run.failure is not None:
                failures.append(Trouble(run.config, f"round {run.round + 1}: {run.failure.reason}"))
            for bench, entry in run.benchmarks.items():
                if entry.error is not None:
                    rounds, benches = raised.setdefault((run.config, entry.error), (set(), []))
                    rounds.add(run.round + 1)
                    if bench not in benches:
                        benches.append(bench)
    formless = {
        k for s in sessions for f in s.results.failures if f.stage == "form" for k in f.configs
    }
    for (config, error), (rounds, benches) in raised.items():
        if config in formless:  # its form's failure above says why, once
            continue
        who = f"{config} {benches[0]}" if len(benches) == 1 else f"{config} ({', '.join(benches)})"
        failures.append(Trouble(who, f"{rounds_text(sorted(rounds))}: {error}"))
    return failures


def rounds_text(rounds: Sequence[int]) -> str:
    """round 3; rounds 1-4; rounds 1, 3, 5-7."""
    spans: list[list[int]] = []
    for r in rounds:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    said = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans)
    return f"round {said}" if len(rounds) == 1 else f"rounds {said}"
