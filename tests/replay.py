"""Bench sessions replayed from real recorded runs: the runner's own loop (looks, eliminations,
stopping, budget) with each benchmark process drawn from a pool of real processes of one build
instead of started. Under the null every config draws from the same pool; an effect scales a
config's throughputs. No TensorFlow runs here: the pool is a real session in tests/fixtures."""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conftest import FIXTURES
from synthetic import config_entry

from tfbuild.bench import runner
from tfbuild.bench.results import load_any
from tfbuild.compare import HostReport, Session, analyse_host
from tfbuild.fetch import Artifact
from tfbuild.progress import QuietReporter
from tfbuild.runtime import RunOutcome, RuntimeEnv

POOL_FILE = FIXTURES / "results" / "null-6copies-12rounds.json"


def pool(path: Path = POOL_FILE) -> list[dict[str, Any]]:
    """Every finished process of a real session whose configs are all the same build."""
    document = load_any(path, "tfbuild.results/2")
    return [r for r in document["runs"] if r["status"] == "ok"]


class SimClock:
    """Seconds of simulated session time: each replayed process adds its real wall time."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ReplayRuntime(RuntimeEnv):
    kind = "replay"

    def __init__(
        self,
        runs: Sequence[Mapping[str, Any]],
        rng: random.Random,
        effect: float,
        clock: SimClock,
    ) -> None:
        super().__init__(Artifact("replay", Path("replay.whl"), "0" * 64, (), {}))
        self.runs, self.rng, self.effect, self.clock = runs, rng, effect, clock

    def prepare(self) -> bool:
        return False

    def run(
        self,
        config: Mapping[str, Any],
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
    ) -> RunOutcome:
        real = self.rng.choice(self.runs)
        benchmarks = copy.deepcopy(real["benchmarks"])
        for entry in benchmarks.values():
            for sample in entry.get("samples") or []:
                sample["throughput"] *= self.effect
        self.clock.now += real["wall_s"]
        result = {k: real[k] for k in ("import_s", "smoke_s", "payload_s", "threads")}
        return RunOutcome(0, {**result, "benchmarks": benchmarks}, "", real["wall_s"])

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind}


def document(
    configs: int,
    design: Mapping[str, Any],
    seed: int,
    template: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An empty results document like `tfbuild bench` makes: the baseline `base:default` and
    `configs - 1` more configs, every variant ready."""
    base = template or load_any(POOL_FILE, "tfbuild.results/2")
    keys = ["base:default", *(f"c{i:02d}:default" for i in range(1, configs))]
    return {
        "schema": base["schema"],
        "session": {
            "id": f"replay-{seed}",
            "started_at": "2026-01-01T00:00:00+00:00",
            "finished_at": None,
            "complete": False,
            "seed": seed,
            "design": dict(design),
            "stop": None,
            "elapsed_s": 0.0,
            "cpus": None,
            "timeout_s": 600.0,
        },
        "host": base["host"],
        "suite": base["suite"],
        "baseline": {
            "variant": "base",
            "tuning": "default",
            "config": "base:default",
            "aa_config": None,
        },
        "variants": {
            k.split(":")[0]: {"definition": {"source": "pypi"}, "status": "ready"} for k in keys
        },
        "configs": [config_entry(k) for k in keys],
        "failures": [],
        "order": [],
        "looks": [],
        "runs": [],
    }


def replay_session(
    configs: int,
    design: Mapping[str, Any],
    seed: int,
    effects: Mapping[str, float] | None = None,
    runs: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run the runner's loop on replayed processes; returns the finished results document."""
    rng = random.Random(seed)
    runs = runs if runs is not None else pool()
    doc = document(configs, design, seed)
    clock = SimClock()
    runner.add_aa(doc)
    runtimes: dict[str, RuntimeEnv] = {
        variant: ReplayRuntime(runs, rng, (effects or {}).get(f"{variant}:default", 1.0), clock)
        for variant in doc["variants"]
    }
    runner.run_rounds(doc, runtimes, QuietReporter(), lambda: None, clock)
    return doc


def report(doc: dict[str, Any]) -> HostReport:
    return analyse_host([Session(Path(f"{doc['session']['id']}.json"), doc)])


def false_claims(r: HostReport) -> list[str]:
    """Every faster or slower verdict in a report: overall, per benchmark and the A/A check.
    (Putting a config out of the leading tier says only that the tier holds a config at least
    as fast, true whenever all are the same: the selection is checked on its own.)"""
    out = [f"{e.config} {e.verdict}" for e in r.ranking if e.verdict in ("faster", "slower")]
    out += [
        f"{e.config} {e.benchmark} {e.verdict}"
        for e in [*r.estimates.values(), *r.aa.values()]
        if e.verdict in ("faster", "slower")
    ]
    return out
