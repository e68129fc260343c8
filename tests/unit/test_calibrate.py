"""`tfbuild calibrate` on a committed calibration of the reference machine (3 configs x 10
rounds of step-timed processes): the replayed designs, and the table the README shows."""

from __future__ import annotations

import math
import statistics

import pytest
from conftest import FIXTURES, run_tfbuild

from tfbuild.bench import calibrate
from tfbuild.bench.payload import ITERATIONS, SAMPLES, SUITE_VERSION
from tfbuild.bench.results import load_any

CALIBRATION = FIXTURES / "results" / "calibration-3configs-10rounds.json.gz"


@pytest.fixture(scope="module")
def analysis() -> calibrate.Calibration:
    return calibrate.analyse(load_any(CALIBRATION, calibrate.SCHEMA))


def test_the_suite_design_is_replayed_from_the_steps(analysis: calibrate.Calibration) -> None:
    """The suite's value for a process, recomputed here from its raw step times: the median of
    three samples of the suite's iterations, as the payload measures them."""
    document = load_any(CALIBRATION, calibrate.SCHEMA)
    run = document["runs"][0]
    entry = run["benchmarks"]["gru-keras"]
    n = ITERATIONS["gru-keras"]
    logs = [
        math.log(entry["work"] * n / sum(entry["steps_s"][k * n : (k + 1) * n]))
        for k in range(SAMPLES["gru-keras"])
    ]
    assert calibrate._value(entry["steps_s"], entry["work"], n, 3) == statistics.median(logs)
    suite = analysis.scores[0]
    assert suite.design.label == f"suite v{SUITE_VERSION}" and suite.precision_per_s == 1.0
    timed = sum(ITERATIONS[b] * SAMPLES[b] * analysis.phases.step_s[b] for b in analysis.benchmarks)
    assert suite.timed_s == pytest.approx(timed)


def test_cheaper_processes_buy_more_precision_per_second(analysis: calibrate.Calibration) -> None:
    """On the reference machine the earlier suites (more timed work per process) spread about
    as much per process but cost more seconds, so they buy less precision per second than the
    current suite: the calibration behind the current choice."""
    by_label = {s.design.label: s for s in analysis.scores}
    v1, v2, v3 = by_label["suite v1"], by_label["suite v2"], by_label["suite v3"]
    assert v1.process_s > 1.5 * v3.process_s and v2.process_s > v3.process_s
    assert v1.precision_per_s < v2.precision_per_s < v3.precision_per_s == 1.0
    assert analysis.processes == 30 and analysis.rounds == 10
    assert analysis.phases.import_s > 1.0  # importing TensorFlow is the largest fixed cost
    assert max(analysis.phases.trace_s, key=analysis.phases.trace_s.__getitem__) == "gru-static"


def test_calibrate_report_prints_both_tables() -> None:
    proc = run_tfbuild("calibrate", "--report", str(CALIBRATION), env={"COLUMNS": "140"})
    assert proc.returncode == 0, proc.stderr
    assert "Where one benchmark process spends its time" in proc.stdout
    assert "Designs replayed on the same processes" in proc.stdout
    assert "suite v1" in proc.stdout and "import numpy, tensorflow" in proc.stdout
    markdown = run_tfbuild("calibrate", "--report", str(CALIBRATION), "--format", "markdown")
    assert sum(line.startswith("|---") for line in markdown.stdout.splitlines()) == 2
