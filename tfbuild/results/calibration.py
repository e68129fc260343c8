"""A calibration session's results (`tfbuild calibrate`): a session like a bench session, whose
processes time every step of every benchmark on its own. Records, and their one JSON reader and
writer (schema tfbuild.calibration/1: a results document with step-timed runs)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfbuild.errors import ResultsError
from tfbuild.jsonrecords import record
from tfbuild.results import codec, documents
from tfbuild.results.model import SCHEMA as RESULTS_SCHEMA
from tfbuild.results.model import ProcessRecord, Results

SCHEMA = "tfbuild.calibration/1"


@dataclass(frozen=True, kw_only=True)
class StepTimes:
    """One benchmark in one calibration process: every timed step on its own, or the error
    the benchmark raised (no steps)."""

    unit: str | None = None
    work: float | None = None
    """What one step does, in the benchmark's unit (examples, GFLOP, steps)."""
    build_s: float | None = None
    trace_s: float | None = None
    warmup_s: float | None = None
    steps_s: tuple[float, ...] = ()
    total_s: float | None = None
    error: str | None = None
    traceback: str | None = None

    @property
    def per_step(self) -> float:
        """The work of one step (a benchmark that timed its steps has it)."""
        if self.work is None:
            raise ValueError(f"no steps were timed ({self.error})")
        return self.work


@dataclass(frozen=True, kw_only=True)
class CalibrationRun(ProcessRecord[StepTimes]):
    """A calibration's process: every benchmark's timed steps."""

    @property
    def ok(self) -> bool:
        """Finished, with every benchmark's steps timed."""
        return self.status == "ok" and all(b.error is None for b in self.benchmarks.values())


@dataclass(frozen=True, kw_only=True)
class CalibrationResults:
    session: Results
    """The session's machine, configs and variants (its runs are the calibration's)."""
    benchmarks: tuple[str, ...]
    steps: Mapping[str, int]
    """Steps timed per benchmark per process."""
    runs: tuple[CalibrationRun, ...] = ()


def _steps(data: Mapping[str, Any]) -> StepTimes:
    return record(StepTimes, {**data, "steps_s": tuple(data.get("steps_s") or ())})


def _run(data: Mapping[str, Any]) -> CalibrationRun:
    return CalibrationRun(**codec.process_fields(data, _steps))


def load(path: Path) -> CalibrationResults:
    document = documents.read_json(path, SCHEMA)
    try:
        # tfbuild.calibration/1 holds its session as tfbuild.results/2 writes one
        session = codec.from_json({**document, "schema": RESULTS_SCHEMA, "runs": []})
        recorded = document["calibration"]
        return CalibrationResults(
            session=session,
            benchmarks=tuple(recorded["benchmarks"]),
            steps=dict(recorded["steps"]),
            runs=tuple(_run(r) for r in document["runs"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsError(f"{path}: not a calibration file tfbuild can read ({exc})") from exc


def _steps_json(entry: StepTimes) -> dict[str, Any]:
    return {
        key: list(value) if key == "steps_s" else value
        for key, value in vars(entry).items()
        if value is not None and not (key == "steps_s" and entry.error is not None)
    }


def step_times(data: Mapping[str, Any]) -> StepTimes:
    """A benchmark's entry as the payload writes it in calibration mode."""
    return _steps(data)


def save(path: Path, calibration: CalibrationResults) -> CalibrationResults:
    """Write the calibration atomically; returns it as written (stamped with the time)."""
    session = calibration.session
    stamped = replace(session, session=replace(session.session, updated_at=codec.now()))
    document = {
        **codec.to_json(stamped),
        "schema": SCHEMA,
        "calibration": {
            "benchmarks": list(calibration.benchmarks),
            "steps": dict(calibration.steps),
        },
        "runs": [codec.process_json(run, _steps_json) for run in calibration.runs],
    }
    documents.write_json(path, document)
    return replace(calibration, session=stamped)
