"""The decision layer's committed evidence on sessions replayed from real processes
(support/replay.py): what each replayed session did, seed by seed, for each study below, in
tests/fixtures/looks.json. tests/unit/analysis/test_looks.py judges every study from the file
(hundreds of sessions each) and replays a few of each study's seeds to show the file is
current. `scripts/looks-evidence` writes it (about 1.5 minutes on 2 vCPUs)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from support.env import FIXTURES
from support.replay import POOL_FILE, SEQUENTIAL, false_claims, fixed, replay_session, report
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Run
from tfbuild.results.rules import DECISIONS

EVIDENCE = FIXTURES / "looks.json"
SCHEMA = "tfbuild.looks-evidence/1"


@dataclass(frozen=True)
class Study:
    """Replayed sessions of `configs` configs of one build (the null), seeds `first_seed` on.

    kind "null": each session's false claims (support.replay.false_claims), the configs it
    put out of the leading tier and its rounds, under a fixed 10-round design or the default
    sequential one. "eta": each look's forecast of the rounds left and the round the session
    stopped on its answer (None: it did not). "fixed-equivalent": the fixed design the report
    of a sequential session names, and whether a fixed session of that many rounds (other
    processes) resolved its leading tier as well."""

    name: str
    kind: str
    configs: int
    design: str
    sessions: int
    first_seed: int

    @property
    def seeds(self) -> range:
        return range(self.first_seed, self.first_seed + self.sessions)


STUDIES = (
    Study("null-fixed-4", "null", 4, "fixed", 200, 0),
    Study("null-sequential-4", "null", 4, "sequential", 200, 0),
    Study("null-fixed-16", "null", 16, "fixed", 200, 0),
    Study("null-sequential-16", "null", 16, "sequential", 200, 0),
    Study("eta-4", "eta", 4, "sequential", 200, 50_000),
    Study("eta-16", "eta", 16, "sequential", 40, 50_000),
    Study("fixed-equivalent", "fixed-equivalent", 4, "sequential", 200, 60_000),
)
FIXED_ROUNDS = 10
"""The fixed design of the null studies."""


def outcome(study: Study, seed: int, runs: Sequence[Run]) -> Any:
    """What one replayed session of `study` did (JSON-ready)."""
    if study.kind == "null":
        chosen = fixed(FIXED_ROUNDS) if study.design == "fixed" else SEQUENTIAL
        doc = replay_session(study.configs, chosen, seed, runs=runs)
        r = report(doc)
        assert not r.replay, r.replay
        return {
            "claims": len(false_claims(r)),
            "out": len({c.config for c in r.out}),
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
    if sequential.fixed_equivalent is None:
        return {"rounds": None, "processes": None, "as_well": None}
    rounds, processes = sequential.fixed_equivalent
    again = report(replay_session(study.configs, fixed(rounds), seed + 10_000, runs=runs))
    return {
        "rounds": rounds,
        "processes": processes,
        "as_well": again.resolution <= sequential.resolution,
    }


def pool_sha256(path: Path = POOL_FILE) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def document(outcomes: dict[str, list[Any]]) -> dict[str, Any]:
    """The evidence file: the pool it replays, the rules it ran under, every study with its
    outcomes in seed order."""
    return {
        "schema": SCHEMA,
        "pool": {"file": POOL_FILE.name, "sha256": pool_sha256()},
        "rules": DECISIONS,
        "studies": [{**asdict(s), "outcomes": outcomes[s.name]} for s in STUDIES],
    }
