"""A calibration session (`tfbuild calibrate`): the suite's benchmarks run in fresh processes, like
a bench session, but every step is timed on its own (after the same first call and warm-up), so
tfbuild.analysis.calibration can replay any amount of timed work per process on them."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tfbuild.bench.failures import recorded
from tfbuild.bench.options import SessionOptions, Workspace, payload_config
from tfbuild.bench.prepare import prepare
from tfbuild.bench.session import new_results
from tfbuild.plan.make import Plan
from tfbuild.progress import Reporter
from tfbuild.results.calibration import CalibrationResults, CalibrationRun, save, step_times
from tfbuild.results.codec import now
from tfbuild.results.model import Results

# Earlier suites' iterations per sample and samples per process, replayed beside the current one.
EARLIER: dict[int, tuple[dict[str, int], int]] = {
    1: (
        {"gru-keras": 24, "gru-static": 24, "gru-dynamic": 24, "matmul-fed": 20,
         "matmul-pinned": 20, "input-fed": 400, "input-pinned": 400},
        5,
    ),
    2: (
        {"gru-keras": 8, "gru-static": 8, "gru-dynamic": 8, "matmul-fed": 6,
         "matmul-pinned": 6, "input-fed": 100, "input-pinned": 100},
        3,
    ),
}  # fmt: skip
# Steps timed per benchmark per process: enough to replay suite v1's work (5 samples).
DESIGN_SINCE = 3
"""The suite version that brought today's iterations and samples (version 4 changed how a
process gets its graphs, not what it times)."""
STEPS = {name: EARLIER[1][1] * n for name, n in EARLIER[1][0].items()}


def schedule(configs: Sequence[str], rounds: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    orders = []
    for _ in range(rounds):
        order = list(configs)
        rng.shuffle(order)
        orders.append(order)
    return orders


def run_calibration(
    plan: Plan,
    options: SessionOptions,
    workspace: Workspace,
    reporter: Reporter,
    rounds: int,
) -> Path:
    """Prepare every selected variant, then run `rounds` rounds of step-timed processes (every
    config once per round, shuffled). The file is rewritten after every process."""
    header = new_results(plan, options)
    path = workspace.results_dir / f"calibration-{header.id}.json"
    calibration = CalibrationResults(
        session=header, benchmarks=tuple(options.suite.benchmarks), steps=dict(STEPS)
    )

    def record_session(results: Results) -> Results:
        nonlocal calibration
        calibration = save(path, replace(calibration, session=results))
        return calibration.session

    record_session(header)
    reporter.note(f"calibration: {path}")
    results, runtimes = prepare(header, plan, options, workspace, reporter, record_session)
    by_key = {c.key: c for c in results.configs if c.variant in results.ready}
    orders = schedule(list(by_key), rounds, results.session.seed)
    record_session(replace(results, order=tuple(tuple(o) for o in orders)))
    reporter.start(sum(map(len, orders)), f"calibrating {len(by_key)} configs x {rounds} rounds")
    steps = {b: STEPS[b] for b in calibration.benchmarks}
    forked = options.processes == "forked"
    try:
        for r, order in enumerate(orders):
            for pos, key in enumerate(order):
                config = by_key[key]
                label = f"round {r + 1}/{rounds}: {key}"
                reporter.running(label)
                started = now()
                outcome = runtimes[config.variant].run(
                    replace(payload_config(calibration.benchmarks, config), calibrate=steps),
                    config.env,
                    options.cpus,
                    options.timeout,
                    zygote=key if forked else None,
                )
                fields = recorded(outcome, options.timeout, step_times)
                run = CalibrationRun(
                    round=r, position=pos, config=key, started_at=started, **fields
                )
                calibration = save(path, replace(calibration, runs=(*calibration.runs, run)))
                reporter.advance(label)
    finally:
        for runtime in runtimes.values():
            runtime.close()
    session = replace(calibration.session.session, complete=True, finished_at=now())
    save(path, replace(calibration, session=replace(calibration.session, session=session)))
    return path
