"""`tfbuild calibrate` on a committed calibration of the reference machine (3 configs x 10
rounds of step-timed processes): the replayed designs, and the table the README shows."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES

from tfbuild.analysis import calibration as calibrate
from tfbuild.bench.calibrate import EARLIER
from tfbuild.bench.payload import ITERATIONS, SAMPLES
from tfbuild.results.calibration import load

CURRENT = "suite v3-4"
"""The current design's label: version 4 times what version 3 did (it loads its graphs)."""

CALIBRATION = FIXTURES / "results" / "calibration-3configs-10rounds.json.gz"


@pytest.fixture(scope="module")
def analysis() -> calibrate.Calibration:
    return calibrate.analyse(load(CALIBRATION))


def test_the_suite_design_is_replayed_from_the_steps(analysis: calibrate.Calibration) -> None:
    """The suite's value for a process, recomputed here from its raw step times: the median of
    three samples of the suite's iterations, as the payload measures them."""
    run = load(CALIBRATION).runs[0]
    entry = run.benchmarks["gru-keras"]
    n = ITERATIONS["gru-keras"]
    logs = [
        math.log(entry.per_step * n / sum(entry.steps_s[k * n : (k + 1) * n]))
        for k in range(SAMPLES["gru-keras"])
    ]
    assert calibrate._value(entry.steps_s, entry.per_step, n, 3) == statistics.median(logs)
    suite = analysis.scores[0]
    assert suite.design.label == CURRENT
    timed = sum(ITERATIONS[b] * SAMPLES[b] * analysis.phases.step_s[b] for b in analysis.benchmarks)
    assert suite.timed_s == pytest.approx(timed)


def replayed(iterations: dict[str, int], samples: int) -> tuple[float, float]:
    """A design replayed here, independently of tfbuild's code: its process-to-process sd (the
    residual sd of the overall speed after a least-squares fit of config and round effects)
    and its seconds per process (the fixed costs, means over the processes, plus the timed
    steps at their mean duration)."""
    calibration = load(CALIBRATION)
    runs = [r for r in calibration.runs if r.ok]
    benchmarks = calibration.benchmarks
    configs = sorted({r.config for r in runs})
    rounds = sorted({r.round for r in runs})
    design = np.zeros((len(runs), len(configs) + len(rounds)))
    speeds = np.zeros(len(runs))
    for i, run in enumerate(runs):
        design[i, configs.index(run.config)] = 1.0
        design[i, len(configs) + rounds.index(run.round)] = 1.0
        values = []
        for b in benchmarks:
            entry, n = run.benchmarks[b], iterations[b]
            chunks = [entry.steps_s[k * n : (k + 1) * n] for k in range(samples)]
            values.append(statistics.median(math.log(entry.per_step * n / sum(c)) for c in chunks))
        speeds[i] = statistics.fmean(values)
    fit, *_ = np.linalg.lstsq(design, speeds, rcond=None)
    residual = speeds - design @ fit
    sd = math.sqrt(float(residual @ residual) / ((len(rounds) - 1) * (len(configs) - 1)))
    mean = statistics.fmean
    fixed = mean(r.wall_s - (r.payload_s or 0.0) + (r.import_s or 0.0) + (r.smoke_s or 0.0)
                 for r in runs)  # fmt: skip
    for b in benchmarks:
        entries = [r.benchmarks[b] for r in runs]
        fixed += mean(
            (e.build_s or 0.0) + (e.trace_s or 0.0) + (e.warmup_s or 0.0) for e in entries
        )
    step = {b: mean(mean(r.benchmarks[b].steps_s) for r in runs) for b in benchmarks}
    return sd, fixed + sum(iterations[b] * samples * step[b] for b in benchmarks)


def test_the_designs_are_scored_as_replayed_here(analysis: calibrate.Calibration) -> None:
    """Each design's spread and cost agree with a replay computed here, without tfbuild's
    code, and its precision per second relative to the suite's is (sd^2 x s) of the suite's
    over its own."""
    by_label = {s.design.label: s for s in analysis.scores}
    suite_sd, suite_s = replayed(dict(ITERATIONS), SAMPLES["gru-keras"])
    current = by_label[CURRENT]
    assert current.sd == pytest.approx(suite_sd, rel=1e-9)
    assert current.process_s == pytest.approx(suite_s, rel=1e-9)
    for version, (iterations, samples) in EARLIER.items():
        sd, seconds = replayed(iterations, samples)
        score = by_label[f"suite v{version}"]
        assert score.sd == pytest.approx(sd, rel=1e-9)
        expected = (suite_sd**2 * suite_s) / (sd**2 * seconds)
        assert score.precision_per_s == pytest.approx(expected, rel=1e-9)


def test_cheaper_processes_buy_more_precision_per_second(analysis: calibrate.Calibration) -> None:
    """On the reference machine the earlier suites (more timed work per process) spread about
    as much per process but cost more seconds, so they buy less precision per second than the
    current suite: the calibration behind the current choice."""
    by_label = {s.design.label: s for s in analysis.scores}
    v1, v2, v3 = by_label["suite v1"], by_label["suite v2"], by_label[CURRENT]
    assert v1.process_s > 1.5 * v3.process_s and v2.process_s > v3.process_s
    assert v1.precision_per_s < v2.precision_per_s < v3.precision_per_s
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
