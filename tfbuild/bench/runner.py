"""A bench session: fetch and install each variant, smoke-test it, then run rounds.

A round runs every config once, each in a fresh process, in a shuffled order (seeded; seed and
orders are recorded). The baseline config runs twice per round under two labels (the A/A
control). After every finished config-run the results file is rewritten atomically, so an
interrupted session keeps every finished measurement and ``--resume`` continues it.
"""

from __future__ import annotations

import dataclasses
import math
import random
import secrets
import socket
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild import __version__, audit, compare, host
from tfbuild.bench import results
from tfbuild.bench.payload import ITERATIONS, SAMPLES, SUITE_VERSION, WARMUP_STEPS
from tfbuild.bench.peak import fp32_peak
from tfbuild.bench.suite import BENCHMARKS
from tfbuild.compare import Design
from tfbuild.errors import (
    BadWheel,
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
from tfbuild.runtime import LocalVenv, RuntimeEnv, runtime_kind
from tfbuild.store import Busy, WheelStore, locked


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
    host_key: str | None = None
    """The machine class the results are compared as (--host-key); None: from the host."""


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
        "intra_op": config["intra_op"],
        "inter_op": config["inter_op"],
    }


def design_of(suite: SuiteSettings) -> dict[str, Any]:
    """How the session decides its rounds, as recorded in results (see compare.Design)."""
    if not suite.sequential:
        return {"kind": "fixed", "rounds": suite.rounds}
    return {
        "kind": "sequential",
        "min_rounds": suite.min_rounds,
        "max_rounds": suite.max_rounds,
        "budget_s": suite.budget_s,
        "resolve": suite.resolve,
    }


def portable(path: Path) -> str:
    """A path as a results file records it: relative to the folder the session runs in when it
    lies below it (what the user types there, and the file stays true when the project moves;
    `--resume` runs from that folder), else absolute."""
    here = Path.cwd()
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


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
            "design": design_of(suite),
            "stop": None,
            "elapsed_s": 0.0,
            "preset": options.preset,
            "host_key": options.host_key,
            "cpus": list(options.cpus) if options.cpus else None,
            "runtime": options.runtime,
            "timeout_s": options.timeout,
            "pip": dataclasses.asdict(plan.matrix.defaults.pip),
            "runtime_options": {
                "base_image": plan.matrix.defaults.base_images.runtime,
                "template_dirs": [portable(d) for d in template_dirs(plan.matrix.path)],
                "cpuset": ",".join(map(str, options.cpus)) if options.cpus else None,
                "nano_cpus": int(options.container_cpus * 1e9) if options.container_cpus else None,
                "memory": options.memory,
            },
        },
        "host": plan.host.to_json(),
        "suite": {
            "version": SUITE_VERSION,
            "benchmarks": list(suite.benchmarks),
            "warmup_steps": WARMUP_STEPS,
            "iterations": {b: ITERATIONS[b] for b in suite.benchmarks},
            "samples": {b: SAMPLES[b] for b in suite.benchmarks},
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
        "looks": [],
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


@dataclass(frozen=True)
class RuntimeOptions:
    """How runtimes are made: where venvs are cached, which image containers start from."""

    cache_dir: Path
    settings: PipSettings
    base_image: str
    template_dirs: tuple[Path, ...]
    cpuset: str | None = None
    nano_cpus: int | None = None
    memory: str | None = None


def make_runtime(kind: str, artifact: Artifact, options: RuntimeOptions) -> RuntimeEnv:
    """A local venv, or a Docker runtime (the engine module is loaded only then)."""
    if kind == "local":
        return LocalVenv(artifact, options.cache_dir, options.settings)
    from tfbuild.engine import DockerRuntime

    return DockerRuntime(
        artifact,
        settings=options.settings,
        base_image=options.base_image,
        template_dirs=list(options.template_dirs),
        log_dir=options.cache_dir / "logs",
        cpuset=options.cpuset,
        nano_cpus=options.nano_cpus,
        memory=options.memory,
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


def gpu_fallback(smoke: Mapping[str, Any]) -> str | None:
    """Why a CUDA build's smoke test shows it would run on the CPU; None when TensorFlow sees
    a GPU. A CUDA variant measured on the CPU is a failure, never a result."""
    if smoke.get("gpus"):
        return None
    if not smoke.get("cuda_build"):
        return "built for CUDA, but this TensorFlow is not a CUDA build: it would run on the CPU"
    return (
        "TensorFlow sees no GPU (no device passed through, or the and-cuda libraries or the "
        "driver are missing): it would run on the CPU"
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
            report = audit.inspect_wheel(artifact.wheel, workspace.cache_dir, pip_settings=settings)
            target = audit.target_for_host(plan.host)
            if not artifact.wants_gpu:  # runs on the CPU: the host's GPUs do not judge it
                target = audit.with_gpus(target, ())
            audit.refuse_if_incompatible(report, target, f"variant {name!r}")
        entry["manifest"] = artifact.manifest
        entry["artifact"] = {**artifact.to_json(), "wheel": portable(artifact.wheel)}
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
    except (InstallError, NotBuiltError, EngineUnavailable, IncompatibleWheel, BadWheel) as exc:
        stage = {NotBuiltError: "fetch", IncompatibleWheel: "inspect", BadWheel: "inspect"}.get(
            type(exc), "install"
        )
        _fail_variant(document, name, stage, str(exc))
        reporter.note(f"[red]fail[/] {name}: {str(exc).splitlines()[0]}")
        return None
    reporter.running(f"smoke test {name}")
    outcome = runtime.run(
        {"benchmarks": [], "intra_op": None, "inter_op": None},
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
    fallback = gpu_fallback(outcome.result["smoke"]) if artifact.wants_gpu else None
    if fallback is not None:
        _fail_variant(document, name, "smoke", fallback, kind="cpu-fallback")
        reporter.note(f"[red]fail[/] {name}: {fallback}")
        return None
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


def add_aa(document: dict[str, Any]) -> None:
    """Add the A/A copy of the baseline: the baseline's config under a second label."""
    ready = {n for n, v in document["variants"].items() if v["status"] == "ready"}
    baseline_key = document["baseline"]["config"]
    base = next(
        (c for c in document["configs"] if c["key"] == baseline_key and c["variant"] in ready),
        None,
    )
    if base is not None:
        aa = {**base, "key": baseline_key + results.AA_SUFFIX, "aa": True}
        document["configs"].append(aa)
        document["baseline"]["aa_config"] = aa["key"]


def round_order(document: Mapping[str, Any], round_: int, keys: Sequence[str]) -> list[str]:
    """Round `round_`'s order of `keys`: a shuffle drawn from the session's seed and the round
    number, so a resumed session draws the same orders."""
    order = sorted(keys)
    random.Random(f"{document['session']['seed']}:{round_}").shuffle(order)
    return order


@dataclass
class Schedule:
    """Which configs still run, and when the session stops."""

    document: dict[str, Any]
    design: Design
    aa: str | None
    """The A/A copy: without it (the baseline cannot run) nothing can be stopped early."""
    active: list[str]
    always: list[str]
    """The baseline and its A/A copy: they run every round."""
    rounds: compare.Rounds = dataclasses.field(default_factory=lambda: compare.Rounds({}))
    seen: int = 0
    """Runs of the document already in `rounds`."""

    @classmethod
    def of(cls, document: dict[str, Any]) -> Schedule:
        ready = {n for n, v in document["variants"].items() if v["status"] == "ready"}
        runnable = [c["key"] for c in document["configs"] if c["variant"] in ready]
        base = document["baseline"]
        always = [k for k in (base["config"], base.get("aa_config")) if k in runnable]
        design = Design.of(document)
        active = list(runnable)
        for look in document.get("looks") or []:
            out = {e["config"] for e in look["eliminated"]}
            active = [c for c in active if c not in out]
        return cls(document, design, base.get("aa_config"), active, always)

    @property
    def rounds_started(self) -> int:
        return len(self.document["order"])

    def limit(self) -> int:
        if not self.design.sequential:
            return int(self.document["session"]["design"]["rounds"])
        return self.design.horizon or self.design.first

    def look(self, reporter: Reporter, elapsed: float) -> dict[str, Any] | None:
        """After a finished round: eliminate configs shown slower than another, and stop when
        the leading tier is resolved. Returns the stop record, if the session is to stop."""
        document, design = self.document, self.design
        r = self.rounds_started
        if not design.sequential or self.aa is None or r not in design.schedule:
            return None
        session_id = str(document["session"]["id"])
        for run in document["runs"][self.seen :]:
            self.rounds.add(session_id, run)
        self.seen = len(document["runs"])
        logs = self.rounds
        timeline = compare.Timeline(tuple(n for n in design.schedule if n <= r), design.horizon)
        setup = compare.make_setup(document, _compared(document), logs, design, self.aa, timeline)
        look = compare.take_look(setup, logs, self.active, r)
        strongest: dict[str, compare.Out] = {}
        for claim in look.out:  # the strongest claim about each config comes first
            strongest.setdefault(claim.config, claim)
        out = [c for k, c in strongest.items() if k in self.active and k not in self.always]
        gone = {c.config for c in out}
        lead = [c for c in look.leading if c != setup.baseline and c not in gone]
        left: int | None = None
        if design.resolve is not None and look.resolution > design.resolve:
            left = compare.rounds_to_resolve(setup, look.estimates, lead, design.resolve)
        document["looks"].append(
            {
                "round": r,
                "elapsed_s": round(elapsed, 1),
                "active": list(self.active),
                "eliminated": [
                    {
                        "config": c.config,
                        "slower_than": c.than,
                        "ratio": c.ratio,
                        "upper": c.upper,
                    }
                    for c in out
                ],
                "leading": look.leading,
                "resolution": look.resolution,
                "margin": look.margin,
                "estimates": {
                    c: {"ratio": e.ratio, "low": e.low, "high": e.high, "rounds": e.rounds}
                    for c, e in look.estimates.items()
                    if c in self.active
                },
                "rounds_left": left,
            }
        )
        self.active = [c for c in self.active if c not in {e.config for e in out}]
        for c in out:
            reporter.note(
                f"out after round {r}: {c.config} trails {c.than} ({c.ratio:.3f}x paired by "
                f"round, beyond the one-sided bound); the configs left still hold the fastest"
            )
        if not lead:
            summary = f"only the baseline {setup.baseline} can be the fastest"
        else:
            summary = (
                f"{len(lead)} {'config' if len(lead) == 1 else 'configs'} besides the baseline "
                f"could be the fastest, known to {_pct(look.resolution)} (target "
                f"{_pct(design.resolve)})"
            )
        reporter.note(
            f"after round {r}: {summary}; {len(self.active)} configs run"
            + (f"; about {left} more rounds" if left else "")
        )
        if not lead:
            return {
                "reason": "resolved",
                "round": r,
                "message": f"every other config is shown slower than the baseline "
                f"{setup.baseline} after {r} rounds",
            }
        if design.resolve is not None and look.resolution <= design.resolve:
            return {
                "reason": "resolved",
                "round": r,
                "message": f"the leading tier is resolved to {_pct(look.resolution)} (target "
                f"{_pct(design.resolve)}) after {r} rounds",
            }
        return None


def _pct(value: float | None) -> str:
    if value is None:
        return "none"
    return f"±{value:.1%}" if math.isfinite(value) else "±inf"


def _compared(document: Mapping[str, Any]) -> list[str]:
    base = document["baseline"]
    return [
        c["key"]
        for c in document["configs"]
        if not c.get("aa")
        and c["key"] != base["config"]
        and document["variants"][c["variant"]]["status"] == "ready"
    ]


def run_rounds(
    document: dict[str, Any],
    runtimes: Mapping[str, RuntimeEnv],
    reporter: Reporter,
    save: Any,
    clock: Callable[[], float],
) -> None:
    """Run rounds until the design says stop: a fixed number, or (sequential) until the leading
    tier is resolved, the budget would run out in the next round, or the horizon is reached."""
    session = document["session"]
    cpus = session["cpus"]
    timeout = session["timeout_s"]
    configs = {c["key"]: c for c in document["configs"]}
    plan = Schedule.of(document)
    design = plan.design
    done = results.finished_runs(document)
    stop: dict[str, Any] | None = None
    if not plan.active:
        stop = {"reason": "nothing_runs", "round": 0, "message": "no config can run here"}
    else:
        reporter.start(
            _expected_runs(plan, clock()),
            f"benchmarking {len(plan.active)} configs ({_describe(design)})",
        )
    looked = {look["round"] for look in document["looks"]}
    last = plan.rounds_started
    if last and last not in looked and _round_done(document, last - 1, done):
        stop = plan.look(reporter, clock())  # stopped after a round, before its look
    while stop is None:
        r = plan.rounds_started
        if r == len(document["order"]) and r > 0 and not _round_done(document, r - 1, done):
            r -= 1  # an interrupted round: finish it first
        elif r >= plan.limit():
            stop = _stop_at_limit(design, r)
            break
        elif design.sequential and r >= 2 and not _fits(document, plan, clock()):
            stop = {
                "reason": "budget",
                "round": r,
                "message": f"the budget of {(design.budget_s or 0) / 60:.0f} min would run out "
                f"during round {r + 1}; stopped after {r} rounds",
            }
            break
        else:
            document["order"].append(round_order(document, r, plan.active))
        order = document["order"][r]
        for pos, key in enumerate(order):
            if (r, key) in done:
                continue
            label = f"round {r + 1}: {key}"
            reporter.running(label)
            _run_one(
                document,
                runtimes[configs[key]["variant"]],
                configs[key],
                r,
                pos,
                cpus,
                timeout,
                reporter,
            )
            done.add((r, key))
            session["elapsed_s"] = round(clock(), 1)
            save()
            reporter.advance(label)
        stop = plan.look(reporter, clock())
        reporter.retotal(_expected_runs(plan, clock()))
        save()
    session["stop"] = stop
    session["complete"] = True
    session["finished_at"] = results.now()
    session["elapsed_s"] = round(clock(), 1)
    reporter.note(f"stopped: {stop['message']}")
    save()


def _describe(design: Design) -> str:
    if not design.sequential:
        return "fixed rounds"
    parts = [f"at least {design.first} rounds"]
    if design.resolve is not None:
        parts.append(f"until resolved to ±{design.resolve:.0%}")
    if design.budget_s is not None:
        parts.append(f"within {design.budget_s / 60:.0f} min")
    return ", ".join(parts)


def _stop_at_limit(design: Design, r: int) -> dict[str, Any]:
    if not design.sequential:
        return {"reason": "fixed", "round": r, "message": f"the {r} rounds of a fixed design"}
    return {
        "reason": "max_rounds",
        "round": r,
        "message": f"the horizon of {r} rounds (max_rounds) is reached",
    }


def _round_done(document: Mapping[str, Any], r: int, done: set[tuple[int, str]]) -> bool:
    return all((r, key) in done for key in document["order"][r])


def _fits(document: Mapping[str, Any], plan: Schedule, elapsed: float) -> bool:
    """Whether one more round of the configs still running fits in the budget."""
    budget = plan.design.budget_s
    if budget is None:
        return True
    walls: dict[str, list[float]] = defaultdict(list)
    for run in document["runs"]:
        walls[run["config"]].append(run["wall_s"])
    every = [w for ws in walls.values() for w in ws] or [0.0]
    typical = statistics.median(every)
    needed = sum(statistics.median(walls[c][-3:]) if walls[c] else typical for c in plan.active)
    return elapsed + needed <= budget


def _expected_runs(plan: Schedule, elapsed: float) -> int:
    """Runs done plus the runs still expected (for the ETA): the rest of the current round,
    then the rounds to the first look, or after it the rounds the planner gave at the last
    look (the horizon when it could not tell), capped by what the budget allows."""
    document = plan.document
    done = len(document["runs"])
    looks = document.get("looks") or []
    started = len(document["order"])
    if not plan.design.sequential:
        left_rounds = plan.limit() - started
    else:
        planned = looks[-1].get("rounds_left") if looks else None
        if not looks:
            left_rounds = max(0, plan.design.first - started)
        else:
            left_rounds = planned if planned is not None else plan.limit() - started
        left_rounds = min(left_rounds, plan.limit() - started)
        budget = plan.design.budget_s
        walls = [run["wall_s"] for run in document["runs"]]
        if budget is not None and walls:
            per_round = statistics.median(walls) * max(1, len(plan.active))
            fits = int(max(0.0, budget - elapsed) // per_round)
            left_rounds = min(left_rounds, max(fits, 2 - started))
    finished = results.finished_runs(document)
    current = document["order"][-1] if document["order"] else []
    unfinished = sum(1 for key in current if (started - 1, key) not in finished)
    return done + unfinished + max(0, left_rounds) * len(plan.active)


def _run_one(
    document: dict[str, Any],
    runtime: RuntimeEnv,
    config: Mapping[str, Any],
    r: int,
    pos: int,
    cpus: Sequence[int] | None,
    timeout: float,
    reporter: Reporter,
) -> None:
    started = results.now()
    outcome = runtime.run(payload_config(document["suite"], config), config["env"], cpus, timeout)
    failure = results.classify(outcome, timeout)
    result = outcome.result or {}
    document["runs"].append(
        {
            "round": r,
            "position": pos,
            "config": config["key"],
            "status": "failed" if failure else "ok",
            "started_at": started,
            "wall_s": outcome.wall_s,
            **{k: result.get(k) for k in ("import_s", "smoke_s", "payload_s")},
            "threads": result.get("threads"),
            "benchmarks": result.get("benchmarks", {}),
            "failure": failure,
        }
    )
    if failure:
        reporter.note(f"[red]fail[/] round {r + 1}: {config['key']}: {failure['reason']}")


class Clock:
    """Seconds the session has spent benchmarking, across resumes (the budget counts all of
    them; preparing runtimes is not counted)."""

    def __init__(self, already: float = 0.0) -> None:
        self.already = already
        self.started = time.monotonic()

    def __call__(self) -> float:
        return self.already + time.monotonic() - self.started


def plan_for_runtimes(
    plan: Plan, options: BenchOptions, workspace: Workspace, reporter: Reporter
) -> Plan:
    """The plan for the machine the benchmarks run on: with Docker runtimes on another machine
    (DOCKER_HOST), the audit, pinning, peak and thread counts are that machine's, probed in a
    container."""
    if not workspace.engine_reachable:
        return plan
    from tfbuild import probe

    return probe.plan_for_engine(
        plan,
        lambda variant: runtime_kind(variant, options.runtime, workspace.engine_reachable),
        host.docker_status(),
        cpus=options.cpus,
        nano_cpus=int(options.container_cpus * 1e9) if options.container_cpus else None,
        memory=options.memory,
        note=reporter.note,
    )


def run_session(
    plan: Plan, options: BenchOptions, workspace: Workspace, reporter: Reporter
) -> Path:
    plan = plan_for_runtimes(plan, options, workspace, reporter)
    document = new_document(plan, options)
    path = workspace.results_dir / f"{document['session']['id']}.json"

    def save() -> None:
        results.save(path, document)

    with locked(session_lock(path)):  # while it is held, --resume of this file is refused
        save()
        reporter.note(f"results: {path} (seed {document['session']['seed']})")
        started = time.monotonic()
        runtimes = prepare(document, plan, options, workspace, reporter, save)
        add_aa(document)
        # The budget buys measurement: fetching, installing and smoke tests (cached after the first
        # session) are not part of it.
        document["session"]["prepare_s"] = round(time.monotonic() - started, 1)
        save()
        if document["baseline"]["aa_config"] is None:
            reporter.note(
                "[yellow]warning[/]: the baseline config cannot run, so there is no A/A control "
                "and no config can be stopped early"
            )
        run_rounds(document, runtimes, reporter, save, Clock())
        return path


def session_lock(path: Path) -> Path:
    """The lock file of a results file: held by the session writing it."""
    return path.with_name(f".{path.name}.lock")


def resume_session(path: Path, workspace: Workspace, reporter: Reporter) -> Path:
    """Continue an interrupted session: same configs, same orders, only the missing runs."""
    document = results.load(path)
    session = document["session"]
    if session.get("complete"):
        reporter.note(f"{path}: the session is already complete")
        return path
    version = document["suite"].get("version")
    if version != SUITE_VERSION:
        raise ResultsError(
            f"{path}: recorded with suite v{version}, and this tfbuild runs suite "
            f"v{SUITE_VERSION}: a session's runs must all measure the same work; start a new "
            "session"
        )
    missing = [
        key
        for key, where, kind in (
            ("looks", document, list),
            ("order", document, list),
            ("variants", document, dict),
            ("design", session, dict),
        )
        if not isinstance(where.get(key), kind)
    ]
    if missing:
        raise ResultsError(
            f"{path}: cannot be resumed: {', '.join(missing)} missing or damaged (a session "
            "written by an older tfbuild, or edited); start a new session"
        )
    try:
        with locked(session_lock(path), wait=False):
            return _resume(path, document, workspace, reporter)
    except Busy as exc:
        raise ResultsError(
            f"{path}: another tfbuild is running this session; wait for it, or resume a copy"
        ) from exc


def _resume(path: Path, document: dict[str, Any], workspace: Workspace, reporter: Reporter) -> Path:
    session = document["session"]
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
        artifact = Artifact.from_json(recorded, entry.get("manifest") or {})
        runtime = make_runtime(entry["runtime"]["kind"], artifact, made)
        runtime.prepare()
        runtimes[name] = runtime

    def save() -> None:
        results.save(path, document)

    reporter.note(
        f"resuming {path}: {len(document['runs'])} runs and {len(document['looks'])} looks kept"
    )
    run_rounds(document, runtimes, reporter, save, Clock(session.get("elapsed_s") or 0.0))
    return path
