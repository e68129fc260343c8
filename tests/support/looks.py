"""The decision layer's committed evidence: what each session did, seed by seed, for each study
below, in tests/fixtures/looks.json. Sessions replayed from real processes (support/replay.py)
for the looks, and simulated sessions of the hardest scenarios (tfbuild.analysis.scenarios)
for the answer. tests/unit/analysis/test_looks.py replays a few of each study's seeds to show
the file is current; it and test_scenarios.py judge every study from the file (hundreds of
sessions each). `scripts/looks-evidence` writes it (about 2.5 minutes on 2 vCPUs)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from support.env import FIXTURES
from support.replay import POOL_FILE, SEQUENTIAL, false_claims, fixed, replay_session, report
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.scenarios import by_name
from tfbuild.analysis.scenarios import outcome as answered
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Run
from tfbuild.results.rules import CURRENT_RULES

EVIDENCE = FIXTURES / "looks.json"
SCHEMA = "tfbuild.looks-evidence/1"


@dataclass(frozen=True)
class Study:
    """Sessions of `configs` configs, seeds `first_seed` on: replayed sessions of one build
    (the null), or simulated sessions of the scenario named (kind "answer").

    kind "null": each session's false claims (support.replay.false_claims), the configs it
    put out of the leading tier and its rounds, under a fixed 10-round design or the default
    sequential one. "eta": each look's forecast of the rounds left and the round the session
    stopped on its answer (None: it did not). "fixed-equivalent": the fixed design the report
    of a sequential session names, and whether a fixed session of that many rounds (other
    processes) resolved its leading tier as well. "answer": what the report answered, scored
    against the scenario's truth (tfbuild.analysis.scenarios.SimulatedAnswer), in the
    scenario's own design."""

    name: str
    kind: str
    configs: int
    design: str
    sessions: int
    first_seed: int

    @property
    def seeds(self) -> range:
        return range(self.first_seed, self.first_seed + self.sessions)


HARD = ("null-2", "null-6-icc30", "null-16", "beyond-6", "beyond-6-icc30", "margin-16")
"""Scenarios that can score an answer wrong, at the least favourable truths and zygotes."""
STUDIES = (
    Study("null-fixed-4", "null", 4, "fixed", 200, 0),
    Study("null-sequential-4", "null", 4, "sequential", 200, 0),
    Study("null-fixed-16", "null", 16, "fixed", 200, 0),
    Study("null-sequential-16", "null", 16, "sequential", 200, 0),
    Study("eta-4", "eta", 4, "sequential", 200, 50_000),
    Study("eta-16", "eta", 16, "sequential", 40, 50_000),
    Study("fixed-equivalent", "fixed-equivalent", 4, "sequential", 200, 60_000),
    *(Study(s.name, "answer", s.configs, "default", 100, 10_000) for s in by_name(HARD)),
    Study("twice-6-icc30", "answer", 6, "default", 100, 20_000),
)
FIXED_ROUNDS = 10
"""The fixed design of the null studies."""


def outcome(study: Study, seed: int, runs: Sequence[Run]) -> Any:
    """What one session of `study` did (JSON-ready)."""
    if study.kind == "answer":
        (scenario,) = by_name([study.name])
        return asdict(answered(scenario, seed))
    if study.kind == "null":
        chosen = fixed(FIXED_ROUNDS) if study.design == "fixed" else SEQUENTIAL
        doc = replay_session(study.configs, chosen, seed, runs=runs)
        r = report(doc)
        assert not r.course.replay, r.course.replay
        return {
            "claims": len(false_claims(r)),
            "out": len({c.config for c in r.figures.out}),
            "rounds": len(doc.order or ()),
        }
    if study.kind == "eta":
        doc = replay_session(study.configs, SEQUENTIAL, seed, runs=runs, forecast=True)
        stop = doc.session.stop
        assert stop is not None
        return {
            "resolved": stop.round if stop.reason == "resolved" else None,
            "looks": [[look.round, look.rounds_left] for look in doc.looks or ()],
        }
    done = replay_session(study.configs, SEQUENTIAL, seed, runs=runs)
    sequential = analyse_host([Session(Path(f"{done.id}.json"), done)], power=True)
    if sequential.course.fixed_equivalent is None:
        return {"rounds": None, "processes": None, "as_well": None}
    rounds, processes = sequential.course.fixed_equivalent
    again = report(replay_session(study.configs, fixed(rounds), seed + 10_000, runs=runs))
    return {
        "rounds": rounds,
        "processes": processes,
        "as_well": again.figures.resolution <= sequential.figures.resolution,
    }


def pool_sha256(path: Path = POOL_FILE) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def committed() -> dict[str, Any]:
    """The evidence file as committed."""
    doc: dict[str, Any] = json.loads(EVIDENCE.read_text())
    assert doc["schema"] == SCHEMA
    return doc


def evidence() -> dict[str, dict[str, Any]]:
    """Each committed study by its name."""
    return {s["name"]: s for s in committed()["studies"]}


def document(outcomes: dict[str, list[Any]]) -> dict[str, Any]:
    """The evidence file: the pool it replays, the rules it ran under, every study with its
    outcomes in seed order."""
    return {
        "schema": SCHEMA,
        "pool": {"file": POOL_FILE.name, "sha256": pool_sha256()},
        "rules": CURRENT_RULES,
        "studies": [{**asdict(s), "outcomes": outcomes[s.name]} for s in STUDIES],
    }
