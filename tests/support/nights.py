"""Three nights of one machine class, as the nightly's bench jobs would write them: the baseline
(base, stock TensorFlow) and a build (mkl), ten rounds each. On the third night the baseline is
TensorFlow 2.22.0 instead of 2.21.0, and every config of it runs gru-keras 8% slower; mkl's wheel
is the same each night. Committed under tests/fixtures/nights/ (the history page's test input);
a test regenerates them and compares."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

from support.env import FIXTURES, REPO
from support.synthetic import session, write
from tfbuild.results.codec import to_json
from tfbuild.results.model import Results

NIGHTS = FIXTURES / "nights"
SLOWER = 0.92
"""gru-keras under TensorFlow 2.22.0, against 2.21.0 (the trend the page must show)."""


def night(n: int) -> Results:
    results = session({"mkl:default": 1.1}, seed=700 + n, session_id=f"night-{n}")
    day = f"2026-01-0{n}T03:00:00+00:00"
    runs = results.runs
    variants = dict(results.variants or {})
    if n == 3:
        runs = tuple(
            dataclasses.replace(run, benchmarks={
                name: dataclasses.replace(entry, samples=tuple(
                    dataclasses.replace(s, throughput=s.throughput * SLOWER)
                    for s in entry.samples
                )) if name == "gru-keras" else entry
                for name, entry in run.benchmarks.items()
            }) if run.config.startswith("base:") else run
            for run in runs
        )  # fmt: skip
    for name, record in variants.items():
        release = "2.22.0" if n == 3 and name == "base" else "2.21.0"
        artifact = record.artifact
        assert artifact is not None
        sha = hashlib.sha256(f"{name} {release}".encode()).hexdigest()
        variants[name] = dataclasses.replace(
            record,
            smoke={"tensorflow": release},
            artifact=dataclasses.replace(artifact, sha256=sha),
        )
    info = dataclasses.replace(results.session, started_at=day, updated_at=day, finished_at=day)
    source = results.host.source_path  # the same on every checkout: relative to the repository
    where = str(Path(source).relative_to(REPO)) if source else None
    host = dataclasses.replace(results.host, source_path=where)
    return dataclasses.replace(results, session=info, runs=runs, variants=variants, host=host)


def nights() -> dict[Path, Results]:
    return {NIGHTS / f"night-{n}.json": night(n) for n in (1, 2, 3)}


def written(folder: Path) -> list[Path]:
    return [write(folder / path.name, results) for path, results in nights().items()]


def text(results: Results) -> str:
    import json

    return json.dumps(to_json(results), indent=2) + "\n"
