"""Preparing a session's variants: fetch each wheel, audit it for the planned machine, install it
into its runtime and smoke-test it. A variant that fails is recorded with the stage and the
reason, and the session goes on without it."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from tfbuild.audit.inspect import inspect_wheel
from tfbuild.audit.verdict import refuse_if_incompatible, target_for_host, with_gpus
from tfbuild.bench.failures import classify, gpu_fallback
from tfbuild.bench.options import SessionOptions, Workspace
from tfbuild.bench.workload import payload_spec
from tfbuild.config.suite import TRAINED
from tfbuild.config.values import FORM_PACKAGES
from tfbuild.errors import (
    BadWheel,
    EngineUnavailable,
    IncompatibleWheel,
    InstallError,
    NotBuiltError,
    WorkloadError,
)
from tfbuild.fetch import fetch
from tfbuild.files import portable
from tfbuild.plan.make import Plan, PlannedVariant
from tfbuild.plan.runtimes import runtime_kind
from tfbuild.progress import Reporter
from tfbuild.results.codec import Record
from tfbuild.results.model import Failure, Results, Stage, VariantRecord, WheelRecord
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.make import RuntimeSettings, make_runtime
from tfbuild.runtime.records import PayloadConfig
from tfbuild.store import Manifest

_STAGE_OF: dict[type[Exception], Stage] = {
    NotBuiltError: "fetch", IncompatibleWheel: "inspect", BadWheel: "inspect"
}  # fmt: skip


def fail_variant(
    results: Results,
    name: str,
    stage: Stage,
    reason: str,
    details: Mapping[str, Any] | None = None,
) -> Results:
    """The variant marked failed, with a failure record for all its configs."""
    keys = tuple(c.key for c in results.configs if c.variant == name)
    failure = Failure(variant=name, configs=keys, stage=stage, reason=reason, details=details or {})
    failed = replace(results.variant(name), status="failed")
    return replace(results.with_variant(name, failed), failures=(*results.failures, failure))


def runtime_settings(results: Results, cache_dir: Path) -> RuntimeSettings:
    """How this session makes runtimes, from what it recorded (so --resume makes the same)."""
    recorded = results.session.runtime_options
    assert recorded is not None, "a session of schema version 2 records its runtime options"
    return RuntimeSettings(
        cache_dir=cache_dir,
        pip=results.session.pip,
        base_image=recorded.base_image,
        template_dirs=tuple(Path(d) for d in recorded.template_dirs),
        cpuset=recorded.cpuset,
        nano_cpus=recorded.nano_cpus,
        memory=recorded.memory,
        session=results.session.id,
        beside=tuple(sorted({p for c in results.configs for p in FORM_PACKAGES.get(c.form, ())})),
    )


def prepare(
    results: Results,
    plan: Plan,
    options: SessionOptions,
    workspace: Workspace,
    reporter: Reporter,
    record: Record,
) -> tuple[Results, dict[str, RuntimeEnv]]:
    """Fetch, install and smoke-test every variant; failures are recorded, never raised."""
    runtimes: dict[str, RuntimeEnv] = {}
    for pv in plan.variants:
        results, runtime = _prepare_variant(results, pv, plan, options, workspace, reporter)
        if runtime is not None:
            runtimes[pv.variant.name] = runtime
        results = record(results)
    return results, runtimes


def _check_current(pv: PlannedVariant, manifest: Manifest | None) -> None:
    """A stored source build must be what the plan asks for now: the build key recorded when
    it was built (the variant's definition and its compiler flags for the planned machine)
    is the plan's. When it is not, the message says what changed."""
    build = manifest.build if manifest is not None else None
    if build is not None and build.build_key == pv.build_key:
        return
    name = pv.variant.name
    rebuild = f"`tfbuild build --variant {name}`"
    if manifest is None or build is None or not build.build_key:
        raise NotBuiltError(
            f"variant {name!r}: its wheel was built by a tfbuild that did not record what the "
            f"plan asked for; run {rebuild} (an unchanged recipe is recorded, not rebuilt)"
        )
    built, now = manifest.variant, pv.variant.definition()
    changed = [
        f"{key} {built.get(key)!r} -> {now.get(key)!r}"
        for key in sorted((set(built) | set(now)) - {"runtime"})
        if built.get(key) != now.get(key)
    ]
    flags = build.compiler_flags
    if flags is not None and flags != tuple(pv.compiler_flags):
        changed.append(f"compiler flags {list(flags)} -> {list(pv.compiler_flags)}")
    raise NotBuiltError(
        f"variant {name!r} changed since its wheel was built "
        f"({'; '.join(changed) or 'its build for this machine differs'}); run {rebuild}"
    )


def _prepare_variant(
    results: Results,
    pv: PlannedVariant,
    plan: Plan,
    options: SessionOptions,
    workspace: Workspace,
    reporter: Reporter,
) -> tuple[Results, RuntimeEnv | None]:
    settings = plan.matrix.defaults.pip
    variant = pv.variant
    name = variant.name
    entry: VariantRecord = results.variant(name)
    if pv.verdict.runs is False:
        reasons = "; ".join(pv.verdict.reasons)
        reporter.note(f"[yellow]skip[/] {name}: {reasons}")
        return fail_variant(results, name, "plan", f"cannot run here: {reasons}"), None
    if name in options.build_failures:
        message = options.build_failures[name]
        first = message.splitlines()[0]
        log = re.search(r"--- last lines of (\S+) ---", message)
        where = f"; the log: {log.group(1)}" if log else ""
        reporter.note(f"[red]fail[/] {name}: its build failed")
        reason = f"its build failed: {first.removeprefix(name + ': ')}{where}"
        return fail_variant(results, name, "build", reason, {"log_tail": message}), None
    try:
        reporter.running(f"fetching {name}")
        artifact, downloaded = fetch(variant, workspace.store, settings, options.refresh)
        if variant.source == "bazel":
            _check_current(pv, artifact.manifest)
        if not options.force:
            reporter.running(f"auditing {artifact.wheel.name}")
            report = inspect_wheel(artifact.wheel, workspace.cache_dir, pip_settings=settings)
            target = target_for_host(plan.host)
            if not artifact.wants_gpu:  # runs on the CPU: the host's GPUs do not judge it
                target = with_gpus(target, ())
            refuse_if_incompatible(report, target, f"variant {name!r}")
        entry = replace(
            entry,
            manifest=artifact.manifest,
            artifact=WheelRecord.of(artifact, portable(artifact.wheel)),
        )
        reporter.note(
            f"fetch {name}: {artifact.wheel.name} ({'downloaded' if downloaded else 'in store'})"
        )
        kind = runtime_kind(variant, options.runtime, workspace.engine_reachable)
        runtime = make_runtime(kind, artifact, runtime_settings(results, workspace.cache_dir))
        reporter.running(f"installing {name} into a {kind} runtime")
        started = time.monotonic()
        created = runtime.prepare()
        entry = replace(entry, runtime=runtime.describe())
        took = f"created in {time.monotonic() - started:.0f} s" if created else "cached"
        reporter.note(f"runtime {name}: {kind}, {took}")
    except (InstallError, NotBuiltError, EngineUnavailable, IncompatibleWheel, BadWheel) as exc:
        reporter.note(f"[red]fail[/] {name}: {str(exc).splitlines()[0]}")
        results = results.with_variant(name, entry)
        return fail_variant(results, name, _STAGE_OF.get(type(exc), "install"), str(exc)), None
    results = results.with_variant(name, entry)
    reporter.running(f"smoke test {name}")
    workload = results.suite.workload
    smoke_config = PayloadConfig(
        smoke_test=True, workload=payload_spec(workload) if workload is not None else None
    )
    outcome = runtime.run(smoke_config, {}, options.cpus, options.timeout)
    failure = classify(outcome, options.timeout)
    if failure is not None:
        reporter.note(f"[red]fail[/] {name}: {failure.reason}")
        details = {k: v for k, v in vars(failure).items() if k != "reason" and v is not None}
        return fail_variant(results, name, "smoke", failure.reason, details), None
    assert outcome.result is not None
    smoke = outcome.result["smoke"]
    fallback = gpu_fallback(smoke) if artifact.wants_gpu else None
    if fallback is not None:
        reporter.note(f"[red]fail[/] {name}: {fallback}")
        return fail_variant(results, name, "smoke", fallback, {"kind": "cpu-fallback"}), None
    if results.suite.workload is not None:
        check = outcome.result.get("workload_check") or {"error": "no answer", "kind": "load"}
        if check.get("kind") == "inputs":  # the same for every build: the user's to mend
            raise WorkloadError(f"--workload {results.suite.workload.path}: {check['error']}")
        if "error" in check:
            message = str(check["error"])
            short = message if len(message) <= 300 else message[:300].rsplit(" ", 1)[0] + " ..."
            reason = f"cannot run the workload: {short}"
            reporter.note(f"[red]fail[/] {name}: {reason}")
            details = {"kind": "workload", "message": message[:8000]}
            return fail_variant(results, name, "smoke", reason, details), None
        reporter.note(f"workload {name}: {_fed(check)}")
    if any(name in TRAINED for name in results.suite.benchmarks):
        jits = sorted({c.xla == "jit" for c in results.configs if c.variant == name})
        reporter.running(f"saving {name}'s training steps")
        try:
            for jit in jits:
                runtime.traces(jit)
        except InstallError as exc:
            reporter.note(f"[red]fail[/] {name}: {str(exc).splitlines()[0]}")
            return fail_variant(results, name, "smoke", str(exc)), None
    threads = outcome.result["threads"]
    entry = replace(entry, smoke=smoke, threads_default=threads, status="ready")
    reporter.note(_smoke_line(name, smoke, threads))
    return results.with_variant(name, entry), runtime


def _fed(check: Mapping[str, Any]) -> str:
    inputs = ", ".join(
        f"{i['name']} {i['dtype']} ({','.join(map(str, i['shape']))})" for i in check["inputs"]
    )
    return (
        f"loaded in {check['load_s']:.1f} s, first call {check['first_call_s']:.2f} s; "
        f"{check['items']:g} items a call" + (f"; inputs {inputs}" if inputs else "")
    )


def _smoke_line(name: str, smoke: Mapping[str, Any], threads: Mapping[str, Any]) -> str:
    onednn = {True: "on", False: "off", None: "unknown"}[smoke.get("onednn")]
    intra, inter = threads.get("intra_op"), threads.get("inter_op")
    pools = "TF default" if not intra and not inter else f"intra {intra}, inter {inter}"
    return (
        f"smoke {name}: TensorFlow {smoke.get('tensorflow')} ({smoke.get('git_version')}), "
        f"oneDNN {onednn}, thread pools {pools}, numpy {smoke.get('numpy')}, "
        f"build {smoke.get('build_info')}"
    )
