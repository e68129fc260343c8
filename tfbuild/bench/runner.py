"""A bench session: fetch and install each variant, smoke-test it, then run rounds.

A round runs every config once, each in a fresh process, in a shuffled order (seeded; seed and
orders are recorded). The baseline config runs twice per round under two labels (the A/A
control). After every finished config-run the results file is rewritten atomically, so an
interrupted session keeps every finished measurement and ``--resume`` continues it.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild import __version__, audit
from tfbuild.bench import results
from tfbuild.bench.payload import ITERATIONS, SUITE_VERSION
from tfbuild.bench.peak import fp32_peak
from tfbuild.bench.suite import BENCHMARKS
from tfbuild.errors import (
    EngineUnavailable,
    IncompatibleWheel,
    InstallError,
    NotBuiltError,
    ResultsError,
)
from tfbuild.fetch import Artifact, fetch
from tfbuild.matrix import PipSettings, SuiteSettings, Variant
from tfbuild.pip import sha256_of
from tfbuild.plan import Plan, PlannedVariant
from tfbuild.progress import Reporter
from tfbuild.recipes import make_recipe
from tfbuild.render import template_dirs
from tfbuild.runtime import RuntimeEnv, RuntimeOptions, make_runtime, runtime_kind
from tfbuild.store import WheelStore


@dataclass(frozen=True)
class BenchOptions:
    suite: SuiteSettings
    preset: str | None
    seed: int | None = None
    cpus: tuple[int, ...] | None = None
    runtime: str = "auto"
    timeout: float = 1800.0
    refresh: bool = False
    argv: tuple[str, ...] = ()
    force: bool = False
    """Install and run wheels even when the audit says they cannot run here."""
    container_cpus: float | None = None
    """--cpus for benchmark containers (Docker runtime)."""
    memory: str | None = None
    """Memory limit for benchmark containers, e.g. 8g (Docker runtime)."""


@dataclass(frozen=True)
class Workspace:
    """Where a session reads and writes: the wheel store, the runtime cache, results."""

    store: WheelStore
    cache_dir: Path
    results_dir: Path
    engine_reachable: bool


def payload_config(suite: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "benchmarks": suite["benchmarks"],
        "warmup": suite["warmup"],
        "samples": suite["samples"],
        "intra_op": config["intra_op"],
        "inter_op": config["inter_op"],
    }


def _session_id() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    host = "".join(c if c.isalnum() or c in "-." else "-" for c in socket.gethostname())[:40]
    return f"{stamp}-{host}-{secrets.token_hex(2)}"


def new_document(plan: Plan, options: BenchOptions) -> dict[str, Any]:
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    suite = options.suite
    baseline = plan.matrix.baseline
    configs = []
    for c in plan.configs:
        peak = fp32_peak(plan.host, c.tuning.intra_op)
        configs.append(
            {
                "key": c.key,
                "variant": c.variant.variant.name,
                "tuning": c.tuning.name,
                "aa": False,
                "intra_op": c.tuning.intra_op,
                "inter_op": c.tuning.inter_op,
                "env": dict(c.tuning.env),
                "peak": peak.to_json() if peak else None,
            }
        )
    return {
        "schema": results.SCHEMA,
        "session": {
            "id": _session_id(),
            "started_at": results.now(),
            "updated_at": results.now(),
            "finished_at": None,
            "complete": False,
            "tfbuild_version": __version__,
            "argv": list(options.argv),
            "matrix": str(plan.matrix.path),
            "seed": seed,
            "rounds": suite.rounds,
            "preset": options.preset,
            "cpus": list(options.cpus) if options.cpus else None,
            "runtime": options.runtime,
            "timeout_s": options.timeout,
            "pip": dataclasses.asdict(plan.matrix.defaults.pip),
            "runtime_options": {
                "base_image": plan.matrix.defaults.base_images.runtime,
                "template_dirs": [str(d) for d in template_dirs(plan.matrix.path)],
                "cpuset": ",".join(map(str, options.cpus)) if options.cpus else None,
                "nano_cpus": int(options.container_cpus * 1e9) if options.container_cpus else None,
                "memory": options.memory,
            },
        },
        "host": plan.host.to_json(),
        "suite": {
            "version": SUITE_VERSION,
            "benchmarks": list(suite.benchmarks),
            "warmup": suite.warmup,
            "samples": suite.samples,
            "iterations": {b: ITERATIONS[b] for b in suite.benchmarks},
            "units": {b: BENCHMARKS[b].unit for b in suite.benchmarks},
        },
        "baseline": {
            "variant": baseline.variant,
            "tuning": baseline.tuning,
            "config": f"{baseline.variant}:{baseline.tuning}",
            "aa_config": None,
        },
        "variants": {
            pv.variant.name: {"definition": pv.variant.definition(), "status": "planned"}
            for pv in plan.variants
        },
        "tunings": {t.name: t.to_json() for t in plan.tunings},
        "configs": configs,
        "failures": [],
        "order": [],
        "runs": [],
    }


def _fail_variant(
    document: dict[str, Any], name: str, stage: str, reason: str, **extra: Any
) -> None:
    keys = [c["key"] for c in document["configs"] if c["variant"] == name]
    document["variants"][name]["status"] = "failed"
    document["failures"].append(
        {"variant": name, "configs": keys, "stage": stage, "reason": reason, **extra}
    )


def runtime_options(session: Mapping[str, Any], cache_dir: Path) -> RuntimeOptions:
    """How this session makes runtimes, from what it recorded (so --resume makes the same)."""
    pip_settings = session["pip"]
    settings = PipSettings(
        index_url=pip_settings["index_url"],
        extra_index_urls=(
            "inherit"
            if pip_settings["extra_index_urls"] == "inherit"
            else tuple(pip_settings["extra_index_urls"])
        ),
        ca_bundle=pip_settings["ca_bundle"],
        trusted_hosts=tuple(pip_settings["trusted_hosts"]),
    )
    recorded = session["runtime_options"]
    return RuntimeOptions(
        cache_dir=cache_dir,
        settings=settings,
        base_image=recorded["base_image"],
        template_dirs=tuple(Path(d) for d in recorded["template_dirs"]),
        cpuset=recorded["cpuset"],
        nano_cpus=recorded["nano_cpus"],
        memory=recorded["memory"],
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


def prepare(
    document: dict[str, Any],
    plan: Plan,
    options: BenchOptions,
    workspace: Workspace,
    reporter: Reporter,
    save: Any,
) -> dict[str, RuntimeEnv]:
    """Fetch, install and smoke-test every variant; failures are recorded, never raised."""
    runtimes: dict[str, RuntimeEnv] = {}
    for pv in plan.variants:
        runtime = _prepare_variant(document, pv, plan, options, workspace, reporter)
        if runtime is not None:
            runtimes[pv.variant.name] = runtime
        save()
    return runtimes


def _prepare_variant(
    document: dict[str, Any],
    pv: PlannedVariant,
    plan: Plan,
    options: BenchOptions,
    workspace: Workspace,
    reporter: Reporter,
) -> RuntimeEnv | None:
    settings = plan.matrix.defaults.pip
    variant = pv.variant
    name = variant.name
    entry = document["variants"][name]
    if pv.verdict.runs is False:
        _fail_variant(document, name, "plan", f"cannot run here: {'; '.join(pv.verdict.reasons)}")
        reporter.note(f"[yellow]skip[/] {name}: {'; '.join(pv.verdict.reasons)}")
        return None
    try:
        reporter.running(f"fetching {name}")
        artifact, downloaded = fetch(variant, workspace.store, settings, options.refresh)
        if variant.source == "bazel":
            _check_current(variant, artifact.manifest, plan)
        if not options.force:
            reporter.running(f"auditing {artifact.wheel.name}")
            report = audit.inspect_wheel(artifact.wheel, workspace.cache_dir)
            audit.refuse_if_incompatible(
                report, audit.target_for_host(plan.host), f"variant {name!r}"
            )
        entry["manifest"] = artifact.manifest
        entry["artifact"] = artifact.to_json()
        reporter.note(
            f"fetch {name}: {artifact.wheel.name} ({'downloaded' if downloaded else 'in store'})"
        )
        kind = runtime_kind(variant, options.runtime, workspace.engine_reachable)
        runtime = make_runtime(
            kind, artifact, runtime_options(document["session"], workspace.cache_dir)
        )
        reporter.running(f"installing {name} into a {kind} runtime")
        started = time.monotonic()
        created = runtime.prepare()
        entry["runtime"] = runtime.describe()
        took = f"created in {time.monotonic() - started:.0f} s" if created else "cached"
        reporter.note(f"runtime {name}: {kind}, {took}")
    except (InstallError, NotBuiltError, EngineUnavailable, IncompatibleWheel) as exc:
        stage = {NotBuiltError: "fetch", IncompatibleWheel: "inspect"}.get(type(exc), "install")
        _fail_variant(document, name, stage, str(exc))
        reporter.note(f"[red]fail[/] {name}: {str(exc).splitlines()[0]}")
        return None
    reporter.running(f"smoke test {name}")
    outcome = runtime.run(
        {"benchmarks": [], "warmup": 0, "samples": 0, "intra_op": None, "inter_op": None},
        {},
        options.cpus,
        options.timeout,
    )
    failure = results.classify(outcome, options.timeout)
    if failure is not None:
        _fail_variant(document, name, "smoke", failure.pop("reason"), **failure)
        reporter.note(f"[red]fail[/] {name}: {document['failures'][-1]['reason']}")
        return None
    assert outcome.result is not None
    entry["smoke"] = outcome.result["smoke"]
    entry["threads_default"] = outcome.result["threads"]
    entry["status"] = "ready"
    reporter.note(_smoke_line(name, outcome.result["smoke"], outcome.result["threads"]))
    return runtime


def _check_current(variant: Variant, manifest: Mapping[str, Any], plan: Plan) -> None:
    """A stored source build must match the variant as the matrix defines it now."""
    recipe = make_recipe(variant, plan.matrix.defaults, plan.host)
    if manifest.get("copts") != list(recipe.copts) or manifest.get("configs") != list(
        recipe.configs
    ):
        raise NotBuiltError(
            f"variant {variant.name!r} changed since its wheel was built (configs "
            f"{manifest.get('configs')} copts {manifest.get('copts')}; now {list(recipe.configs)} "
            f"{list(recipe.copts)}); run `tfbuild build --variant {variant.name}`"
        )


def schedule(document: dict[str, Any]) -> None:
    """Add the A/A copy of the baseline and draw every round's order from the seed."""
    ready = {n for n, v in document["variants"].items() if v["status"] == "ready"}
    runnable = [c for c in document["configs"] if c["variant"] in ready and not c["aa"]]
    baseline_key = document["baseline"]["config"]
    base = next((c for c in runnable if c["key"] == baseline_key), None)
    if base is not None:
        aa = {**base, "key": baseline_key + results.AA_SUFFIX, "aa": True}
        document["configs"].append(aa)
        document["baseline"]["aa_config"] = aa["key"]
        runnable.append(aa)
    keys = [c["key"] for c in runnable]
    rng = random.Random(document["session"]["seed"])
    orders = []
    for _ in range(document["session"]["rounds"]):
        order = list(keys)
        rng.shuffle(order)
        orders.append(order)
    document["order"] = orders


def run_rounds(
    document: dict[str, Any],
    runtimes: Mapping[str, RuntimeEnv],
    reporter: Reporter,
    save: Any,
) -> None:
    session = document["session"]
    cpus = session["cpus"]
    timeout = session["timeout_s"]
    configs = {c["key"]: c for c in document["configs"]}
    done = results.finished_runs(document)
    todo = [
        (r, pos, key)
        for r, order in enumerate(document["order"])
        for pos, key in enumerate(order)
        if (r, key) not in done
    ]
    rounds = len(document["order"])
    reporter.start(len(todo), f"benchmarking {len(configs)} configs x {rounds} rounds")
    for r, pos, key in todo:
        config = configs[key]
        label = f"round {r + 1}/{rounds}: {key}"
        reporter.running(label)
        started = results.now()
        outcome = runtimes[config["variant"]].run(
            payload_config(document["suite"], config), config["env"], cpus, timeout
        )
        failure = results.classify(outcome, timeout)
        result = outcome.result or {}
        document["runs"].append(
            {
                "round": r,
                "position": pos,
                "config": key,
                "status": "failed" if failure else "ok",
                "started_at": started,
                "wall_s": outcome.wall_s,
                "import_s": result.get("import_s"),
                "threads": result.get("threads"),
                "benchmarks": result.get("benchmarks", {}),
                "failure": failure,
            }
        )
        save()
        if failure:
            reporter.note(f"[red]fail[/] {label}: {failure['reason']}")
        reporter.advance(label)
    session["complete"] = True
    session["finished_at"] = results.now()
    save()


def run_session(
    plan: Plan, options: BenchOptions, workspace: Workspace, reporter: Reporter
) -> Path:
    document = new_document(plan, options)
    path = workspace.results_dir / f"{document['session']['id']}.json"

    def save() -> None:
        results.save(path, document)

    save()
    reporter.note(f"results: {path} (seed {document['session']['seed']})")
    runtimes = prepare(document, plan, options, workspace, reporter, save)
    schedule(document)
    save()
    if document["baseline"]["aa_config"] is None:
        reporter.note(
            "[yellow]warning[/]: the baseline config cannot run, so there is no A/A control"
        )
    run_rounds(document, runtimes, reporter, save)
    return path


def resume_session(path: Path, workspace: Workspace, reporter: Reporter) -> Path:
    """Continue an interrupted session: same configs, same orders, only the missing runs."""
    document = results.load(path)
    session = document["session"]
    if session.get("complete"):
        reporter.note(f"{path}: the session is already complete")
        return path
    if not document["order"]:
        raise ResultsError(
            f"{path}: the session stopped before its rounds were scheduled; start a new one"
        )
    made = runtime_options(session, workspace.cache_dir)
    runtimes: dict[str, RuntimeEnv] = {}
    for name, entry in document["variants"].items():
        if entry["status"] != "ready":
            continue
        recorded = entry["artifact"]
        wheel = Path(recorded["wheel"])
        if not wheel.is_file() or sha256_of(wheel) != recorded["sha256"]:
            raise ResultsError(
                f"{path}: variant {name!r} was measured with {wheel} "
                f"(sha256 {recorded['sha256'][:12]}...), which is gone or has changed"
            )
        artifact = Artifact(
            recorded["variant_id"],
            wheel,
            recorded["sha256"],
            tuple(recorded["constraints"]),
            entry.get("manifest") or {},
        )
        runtime = make_runtime(entry["runtime"]["kind"], artifact, made)
        runtime.prepare()
        runtimes[name] = runtime

    def save() -> None:
        results.save(path, document)

    left = sum(len(o) for o in document["order"]) - len(results.finished_runs(document))
    reporter.note(f"resuming {path}: {len(document['runs'])} runs kept, {left} to go")
    run_rounds(document, runtimes, reporter, save)
    return path
