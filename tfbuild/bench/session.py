"""A bench session: prepare each variant of the plan, then run rounds (tfbuild.bench.schedule).

The session works from the plan it is given, made once for the machine its benchmarks run on.
Its results file is rewritten atomically after every finished config-run, while the session
holds the file's lock; ``--resume`` continues an interrupted session from it.
"""

from __future__ import annotations

import secrets
import socket
import time
from dataclasses import replace
from pathlib import Path

from tfbuild import __version__
from tfbuild.bench.options import SessionOptions, Workspace
from tfbuild.bench.pace import Clock
from tfbuild.bench.payload import ITERATIONS, SAMPLES, WARMUP_STEPS
from tfbuild.bench.prepare import prepare, runtime_settings
from tfbuild.bench.schedule import Looker, RoundRunner
from tfbuild.bench.workload import WORKLOAD_BENCHMARKS, digest_of, suite_entries
from tfbuild.build.render import template_dirs
from tfbuild.config.model import SuiteSettings
from tfbuild.config.suite import BENCHMARKS, SUITE_VERSION
from tfbuild.errors import ResultsError, WorkloadError
from tfbuild.files import Busy, locked, portable, sha256_of
from tfbuild.machine.peak import fp32_peak
from tfbuild.plan.make import Plan
from tfbuild.progress import Reporter
from tfbuild.results import codec
from tfbuild.results.model import (
    AA_SUFFIX,
    BaselineRecord,
    ConfigEntry,
    Design,
    Results,
    RuntimeOptions,
    SessionInfo,
    SuiteRecord,
    VariantRecord,
    Workload,
)
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.make import make_runtime


def design_of(suite: SuiteSettings, configs: int) -> Design:
    """How the session decides its rounds, as the suite settings ask, when it runs `configs`
    configs (the baseline's A/A control included): a budget per config becomes one in all."""
    if not suite.sequential:
        return Design(kind="fixed", rounds=suite.rounds)
    return Design(
        kind="sequential",
        first=suite.min_rounds,
        horizon=suite.max_rounds,
        budget_s=None if suite.budget is None else suite.budget.total(configs),
        resolve=suite.resolve,
    )


def question(results: Results) -> str:
    """What the session answers, said before anything runs: the margin it answers at."""
    design, baseline = results.design, results.baseline.config
    margin = f"{design.margin:.1%}"
    when = ("once", "once") if design.sequential else ("if", "if")
    return (
        f'answering at the {margin} margin (--resolve sets it): "Use X" {when[0]} X is shown '
        f"faster than the baseline {baseline} and within {margin} of the fastest config, "
        f'"Keep the baseline" {when[1]} none can be faster than it by more than {margin}'
    )


def _session_id() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname())[:40]
    return f"{stamp}-{host}-{secrets.token_hex(2)}"


def _suite(suite: SuiteSettings, options: SessionOptions) -> SuiteRecord:
    """What the session measures: the suite's benchmarks, then the workload's; how each
    process starts, and how the benchmarks weigh in the speed it decides on."""
    workload = options.workload
    iterations = {b: ITERATIONS[b] for b in suite.benchmarks}
    samples = {b: SAMPLES[b] for b in suite.benchmarks}
    units = {b: BENCHMARKS[b].unit for b in suite.benchmarks}
    names = tuple(suite.benchmarks)
    if workload is not None:
        its, counts, measured = suite_entries(workload)
        iterations, samples, units = iterations | its, samples | counts, units | measured
        names += WORKLOAD_BENCHMARKS
    return SuiteRecord(
        version=SUITE_VERSION,
        benchmarks=names,
        warmup_steps=WARMUP_STEPS,
        iterations=iterations,
        samples=samples,
        units=units,
        workload=workload,
        processes=options.processes,
        weights=dict(options.weights),
    )


def new_results(plan: Plan, options: SessionOptions) -> Results:
    """The results of a session about to start: the plan's configs, nothing measured yet."""
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    suite = options.suite
    matrix = plan.matrix
    baseline = matrix.baseline
    started = codec.now()
    cpus = options.cpus or None
    return Results(
        session=SessionInfo(
            id=_session_id(),
            started_at=started,
            updated_at=started,
            finished_at=None,
            complete=False,
            tfbuild_version=__version__,
            argv=options.argv,
            matrix=str(matrix.path),
            seed=seed,
            design=design_of(suite, len(plan.configs) + 1),  # and the A/A control
            elapsed_s=0.0,
            preset=options.preset,
            host_key=options.host_key,
            cpus=cpus,
            runtime=options.runtime,
            timeout_s=options.timeout,
            pip=matrix.defaults.pip,
            runtime_options=RuntimeOptions(
                base_image=matrix.defaults.base_images.runtime,
                template_dirs=tuple(portable(d) for d in template_dirs(matrix.path)),
                cpuset=",".join(map(str, cpus)) if cpus else None,
                nano_cpus=int(options.container_cpus * 1e9) if options.container_cpus else None,
                memory=options.memory,
            ),
        ),
        host=plan.host,
        suite=_suite(suite, options),
        baseline=BaselineRecord(
            variant=baseline.variant,
            tuning=baseline.tuning,
            config=f"{baseline.variant}:{baseline.tuning}",
        ),
        variants={
            pv.variant.name: VariantRecord(definition=pv.variant.definition(), status="planned")
            for pv in plan.variants
        },
        tunings={t.name: t.to_json() for t in plan.tunings},
        configs=tuple(
            ConfigEntry(
                key=c.key,
                variant=c.variant.variant.name,
                tuning=c.tuning.name,
                intra_op=c.tuning.intra_op,
                inter_op=c.tuning.inter_op,
                env=dict(c.tuning.env),
                peak=fp32_peak(plan.host, c.tuning.intra_op),
                xla=c.tuning.xla,
                form=c.form,
            )
            for c in plan.configs
        ),
    )


def add_aa(results: Results) -> Results:
    """The A/A copy of the baseline added: the baseline's config under a second key."""
    key = results.baseline.config
    base = next((c for c in results.configs if c.key == key and c.variant in results.ready), None)
    if base is None:
        return results
    aa = replace(base, key=key + AA_SUFFIX, aa=True)
    return replace(
        results,
        configs=(*results.configs, aa),
        baseline=replace(results.baseline, aa_config=aa.key),
    )


def session_lock(path: Path) -> Path:
    """The lock file of a results file: held by the session writing it."""
    return path.with_name(f".{path.name}.lock")


def _recorder(path: Path) -> codec.Record:
    return lambda results: codec.save(path, results)


def run_session(
    plan: Plan,
    options: SessionOptions,
    workspace: Workspace,
    reporter: Reporter,
    looker: Looker,
) -> Path:
    """Benchmark the plan's configs; the results file's path."""
    results = new_results(plan, options)
    path = workspace.results_dir / f"{results.id}.json"
    record = _recorder(path)
    with locked(session_lock(path)):  # while it is held, --resume of this file is refused
        results = record(results)
        reporter.note(f"results: {path} (seed {results.session.seed})")
        reporter.note(question(results))
        started = time.monotonic()
        try:
            results, runtimes = prepare(results, plan, options, workspace, reporter, record)
        except WorkloadError:  # nothing was measured, and no build could: nothing to resume
            path.unlink(missing_ok=True)
            raise
        results = add_aa(results)
        # The budget buys measurement: fetching, installing and smoke tests (cached after the
        # first session) are not part of it.
        session = replace(results.session, prepare_s=round(time.monotonic() - started, 1))
        results = record(replace(results, session=session))
        if results.baseline.aa_config is None:
            reporter.note(
                "[yellow]warning[/]: the baseline config cannot run, so there is no A/A control "
                "and no config can be stopped early"
            )
        RoundRunner(results, runtimes, reporter, record, Clock(), looker).run()
        return path


def _same_workload(path: Path, workload: Workload | None) -> None:
    """A resumed session measures the model it started with: the files must be unchanged."""
    if workload is None:
        return
    files = [(workload.kind, workload.path, workload.digest, workload.files)]
    if workload.inputs:
        files.append(("inputs", workload.inputs, workload.inputs_digest or "", ()))
    for kind, name, recorded, beside in files:
        where = Path(name)
        now = digest_of(where, beside) if where.exists() else None
        if now != recorded:
            what = "is gone" if now is None else f"has changed (sha256 {now[:12]})"
            raise ResultsError(
                f"{path}: the session measured {kind} {name} (sha256 {recorded[:12]}), and it "
                f"{what}; a session's runs must all measure the same work: put it back (a "
                "relative path is read from the folder the session ran in: resume from there), "
                "or start a new session"
            )


def resume_session(path: Path, workspace: Workspace, reporter: Reporter, looker: Looker) -> Path:
    """Continue an interrupted session: same configs, same orders, only the missing runs."""
    results = codec.load(path)
    if results.session.complete:
        reporter.note(f"{path}: the session is already complete")
        return path
    version = results.suite.version
    if version != SUITE_VERSION:
        raise ResultsError(
            f"{path}: recorded with suite v{version}, and this tfbuild runs suite "
            f"v{SUITE_VERSION}: a session's runs must all measure the same work; start a new "
            "session"
        )
    _same_workload(path, results.suite.workload)
    try:
        with locked(session_lock(path), wait=False):
            return _resume(path, results, workspace, reporter, looker)
    except Busy as exc:
        raise ResultsError(
            f"{path}: another tfbuild is running this session; wait for it, or resume a copy"
        ) from exc


def _resume(
    path: Path, results: Results, workspace: Workspace, reporter: Reporter, looker: Looker
) -> Path:
    settings = runtime_settings(results, workspace.cache_dir)
    runtimes: dict[str, RuntimeEnv] = {}
    for name, entry in (results.variants or {}).items():
        if entry.status != "ready":
            continue
        recorded = entry.artifact
        runtime = entry.runtime
        if recorded is None or runtime is None:
            raise ResultsError(f"{path}: variant {name!r} is ready but records no wheel")
        artifact = recorded.artifact(entry.manifest)
        wheel = artifact.wheel
        if not wheel.is_file() or sha256_of(wheel) != artifact.sha256:
            raise ResultsError(
                f"{path}: variant {name!r} was measured with {wheel} "
                f"(sha256 {artifact.sha256[:12]}...), which is gone or has changed"
            )
        made = make_runtime(runtime.kind, artifact, settings)
        made.prepare()
        runtimes[name] = made
    reporter.note(
        f"resuming {path}: {len(results.runs)} runs and {len(results.looks or ())} looks kept"
    )
    clock = Clock(results.session.elapsed_s or 0.0)
    RoundRunner(results, runtimes, reporter, _recorder(path), clock, looker).run()
    return path
