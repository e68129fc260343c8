"""Bench sessions replayed from real recorded runs: the runner's own loop (looks, eliminations,
stopping, budget) with each benchmark process drawn from a pool of real processes of one build
instead of started. Under the null every config draws from the same pool; an effect scales a
config's throughputs. No TensorFlow runs here: the pool is a real session in tests/fixtures."""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from support.env import FIXTURES
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.looks import SequentialLooks
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.bench.schedule import RoundRunner
from tfbuild.bench.session import add_aa
from tfbuild.progress import QuietReporter, Reporter
from tfbuild.results.codec import load, run_json
from tfbuild.results.model import (
    BaselineRecord,
    Design,
    Results,
    Run,
    SessionInfo,
    VariantRecord,
    config_entry,
)
from tfbuild.runtime.base import RunOutcome, RuntimeEnv
from tfbuild.runtime.records import PayloadConfig, RuntimeRecord
from tfbuild.store import Artifact

POOL_FILE = FIXTURES / "results" / "null-6copies-12rounds.json"
SEQUENTIAL = Design(kind="sequential", first=3, horizon=30, budget_s=None, resolve=0.05)
"""The default matrix's sequential design: looks from round 3, error control over 30 rounds,
until the leading tier is resolved to 5 %."""


def fixed(rounds: int) -> Design:
    return Design(kind="fixed", rounds=rounds)


@functools.lru_cache(maxsize=4)
def recorded_session(path: Path = POOL_FILE) -> Results:
    """A recorded session, read once (the records are frozen)."""
    return load(path)


def pool(path: Path = POOL_FILE) -> list[Run]:
    """Every finished process of a real session whose configs are all the same build."""
    return [r for r in recorded_session(path).runs if r.ok]


class SimClock:
    """Seconds of simulated session time: each replayed process adds its real wall time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


_PAYLOADS: dict[int, tuple[Run, dict[str, Any]]] = {}


def _payload(run: Run) -> dict[str, Any]:
    """What the payload wrote for a recorded run (made once per run of the pool)."""
    if id(run) not in _PAYLOADS:
        _PAYLOADS[id(run)] = (run, run_json(run))
    return _PAYLOADS[id(run)][1]


class ReplayRuntime(RuntimeEnv):
    kind = "replay"

    def __init__(
        self,
        runs: Sequence[Run],
        rng: random.Random,
        effect: float,
        clock: SimClock,
    ) -> None:
        super().__init__(Artifact("replay", Path("replay.whl"), "0" * 64, (), None))
        self.runs, self.rng, self.effect, self.clock = runs, rng, effect, clock
        self.zygotes: list[str | None] = []
        """The zygote each process was asked of (None: a fresh process)."""
        self.closed = 0

    def prepare(self) -> bool:
        return False

    def run(
        self,
        config: PayloadConfig,
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
        zygote: str | None = None,
        live: int | None = None,
    ) -> RunOutcome:
        self.zygotes.append(zygote)
        real = self.rng.choice(self.runs)
        recorded = _payload(real)
        benchmarks = {
            name: {
                **entry,
                "samples": [
                    {**x, "throughput": x["throughput"] * self.effect} for x in entry["samples"]
                ],
            }
            if "samples" in entry
            else entry
            for name, entry in recorded["benchmarks"].items()
        }
        self.clock.now += real.wall_s
        result = {k: recorded[k] for k in ("import_s", "smoke_s", "payload_s", "threads")}
        return RunOutcome(0, {**result, "benchmarks": benchmarks}, "", real.wall_s)

    def close(self) -> None:
        self.closed += 1

    def _save_traces(self, jit: bool) -> str:
        return "replay"

    def describe(self) -> RuntimeRecord:
        return RuntimeRecord(
            kind=self.kind, wheel=self.artifact.wheel.name, sha256=self.artifact.sha256
        )


def session(configs: int, design: Design, seed: int, template: Results | None = None) -> Results:
    """An empty session like `tfbuild bench` starts: the baseline `base:default` and
    `configs - 1` more configs, every variant ready."""
    base = template or recorded_session()
    keys = ["base:default", *(f"c{i:02d}:default" for i in range(1, configs))]
    return replace(
        base,
        session=SessionInfo(
            id=f"replay-{seed}",
            started_at="2026-01-01T00:00:00+00:00",
            updated_at="2026-01-01T00:00:00+00:00",
            finished_at=None,
            complete=False,
            tfbuild_version="0.1.0",
            argv=(),
            matrix="matrix.yaml",
            seed=seed,
            design=design,
            elapsed_s=0.0,
            timeout_s=600.0,
            pip=base.session.pip,
        ),
        baseline=BaselineRecord(variant="base", tuning="default", config="base:default"),
        variants={
            k.split(":")[0]: VariantRecord(definition={"source": "pypi"}, status="ready")
            for k in keys
        },
        tunings={},
        configs=tuple(config_entry(k) for k in keys),
        failures=(),
        order=(),
        looks=(),
        runs=(),
    )


def replay_session(
    configs: int,
    design: Design,
    seed: int,
    effects: Mapping[str, float] | None = None,
    runs: Sequence[Run] | None = None,
    forecast: bool = False,
    reporter: Reporter | None = None,
) -> Results:
    """Run the session's own rounds on replayed processes; returns the finished results. Its
    looks forecast the rounds left (the ETA, which decides nothing) only with `forecast`; what
    the session says goes to `reporter` (nowhere when None)."""
    rng = random.Random(seed)
    runs = runs if runs is not None else pool()
    results = add_aa(session(configs, design, seed))
    clock = SimClock()
    runtimes: dict[str, RuntimeEnv] = {
        variant: ReplayRuntime(runs, rng, (effects or {}).get(f"{variant}:default", 1.0), clock)
        for variant in results.variants or {}
    }
    looks = SequentialLooks(forecast)
    told = reporter or QuietReporter()
    schedule = RoundRunner(results, runtimes, told, lambda r: r, clock, looks)
    return schedule.run()


def report(results: Results) -> HostReport:
    return analyse_host([Session(Path(f"{results.id}.json"), results)])


def false_claims(r: HostReport) -> list[str]:
    """Every faster or slower verdict in a report: overall, per benchmark and the A/A check.
    (Putting a config out of the leading tier says only that the tier holds a config at least
    as fast, true whenever all are the same: the selection is checked on its own.)"""
    out = [
        f"{e.config} {e.verdict}" for e in r.figures.ranking if e.verdict in ("faster", "slower")
    ]
    out += [
        f"{e.config} {e.benchmark} {e.verdict}"
        for e in [*r.figures.estimates.values(), *r.figures.aa.values()]
        if e.verdict in ("faster", "slower")
    ]
    return out
