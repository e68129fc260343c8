"""Calibration files: a session whose processes are recorded as every process is (round,
position, phases, failure), with each benchmark's timed steps; read back as written."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from support.env import FIXTURES

from tfbuild.results.calibration import CalibrationRun, StepTimes, load, save
from tfbuild.results.documents import read_json
from tfbuild.results.model import ProcessRecord, Run

CALIBRATION = FIXTURES / "results" / "calibration-3configs-10rounds.json.gz"


def test_a_calibration_reads_back_as_written(tmp_path: Path) -> None:
    recorded = load(CALIBRATION)
    assert len(recorded.runs) == 30 and all(r.ok for r in recorded.runs)
    assert isinstance(recorded.runs[0], ProcessRecord)
    assert Run not in type(recorded.runs[0]).__mro__  # a process of its own kind, not samples
    raised = StepTimes(unit="examples/s", error="ResourceExhaustedError", steps_s=(0.1,))
    failed = replace(recorded.runs[0], benchmarks={"gru-static": raised}, position=2)
    again = save(tmp_path / "c.json.gz", replace(recorded, runs=(*recorded.runs, failed)))
    back = load(tmp_path / "c.json.gz")
    assert back.runs[:30] == recorded.runs and back.benchmarks == recorded.benchmarks
    last = back.runs[-1]
    assert isinstance(last, CalibrationRun) and not last.ok and last.position == 2
    assert last.benchmarks["gru-static"] == replace(raised, steps_s=())  # no steps of an error
    written = read_json(tmp_path / "c.json.gz", "tfbuild.calibration/1")
    # every process as a bench session records it: the same keys, the steps in place of samples
    assert set(written["runs"][0]) == {"round", "position", "config", "status", "started_at",
                                       "wall_s", "import_s", "smoke_s", "payload_s", "threads",
                                       "benchmarks", "failure"}  # fmt: skip
    assert again.session.session.updated_at is not None
    assert json.loads(json.dumps(written))["schema"] == "tfbuild.calibration/1"
