"""Results files: the one reader and the one writer of the JSON form of tfbuild.results.model.

A file is checked before it is used: every problem is reported with its place (``runs[3].
benchmarks.gru-keras.samples[1].throughput: -5.0 is not a positive number``). Files are written
atomically (gzip-compressed when the name ends in .gz), so an interrupted session keeps every
finished measurement. Unknown keys are ignored on reading.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from tfbuild.config.model import INHERIT_PIP, PipSettings
from tfbuild.config.values import AS_GIVEN, TIMEOUT_S
from tfbuild.errors import ResultsError
from tfbuild.jsonrecords import record
from tfbuild.machine.peak import Peak
from tfbuild.machine.profile import profile_from_json
from tfbuild.results import schema
from tfbuild.results.documents import read_json, write_json
from tfbuild.results.forms import form_check, form_check_json
from tfbuild.results.model import (
    PROCESS_PATHS,
    READABLE,
    SCHEMA,
    BaselineRecord,
    BenchmarkResult,
    ConfigEntry,
    Design,
    Elimination,
    Failure,
    Look,
    LookEstimate,
    ProcessPath,
    ProcessRecord,
    Results,
    Run,
    RunFailure,
    RuntimeOptions,
    Sample,
    SessionInfo,
    Stop,
    SuiteRecord,
    VariantRecord,
    WheelRecord,
    Workload,
)
from tfbuild.results.rules import known_rules
from tfbuild.runtime.records import RuntimeRecord
from tfbuild.store import Manifest

T = TypeVar("T")

Fields = dict[str, Any]
"""A record's fields by name, as its constructor takes them."""

Record = Callable[[Results], Results]
"""Writes a session's results and returns them as written (a session has one writer)."""


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


# --------------------------------------------------------------------------------------------
# Reading


def load(path: Path) -> Results:
    """A results file, checked for everything tfbuild reads from it: a current-version file
    against the schema file (results/schema.py), a version-1 file by `check_version_1`."""
    document = read_json(path, *READABLE)
    if document["schema"] == SCHEMA:
        problem = schema.problem(document)
    else:
        problem = check_version_1(document) or schema.references(document)
    if problem is None:
        try:
            return from_json(document)
        except _Bad as exc:
            problem = str(exc)
    raise ResultsError(f"{path}: {problem}; not a results file tfbuild can read")


def check_version_1(document: Mapping[str, Any]) -> str | None:
    """What is wrong with the measurements of a version-1 results document (the first problem,
    with its place), or None. The schema file describes the current version only."""
    kind = schema.kind
    for key, wanted in (("session", dict), ("host", dict), ("suite", dict), ("baseline", dict),
                        ("configs", list), ("failures", list), ("runs", list)):  # fmt: skip
        if key not in document:
            return f"{key}: missing"
        if not isinstance(document[key], wanted):
            said = "an object" if wanted is dict else "a list"
            return f"{key}: {kind(document[key])} where {said} belongs"
    for i, config in enumerate(document["configs"]):
        if not isinstance(config, dict) or not isinstance(config.get("key"), str):
            return f"configs[{i}]: {kind(config)} is not a config with a key"
    for i, run in enumerate(document["runs"]):
        where = f"runs[{i}]"
        if not isinstance(run, dict):
            return f"{where}: {kind(run)} where a run belongs"
        round_ = run.get("round")
        if not isinstance(round_, int) or isinstance(round_, bool) or round_ < 0:
            return f"{where}.round: {kind(round_)} is not a round number"
        if run.get("status") != "ok":
            continue
        benchmarks = run.get("benchmarks")
        if not isinstance(benchmarks, dict) or not benchmarks:
            return f"{where}.benchmarks: {kind(benchmarks)} where measurements belong"
        for name, entry in benchmarks.items():
            if isinstance(entry, dict) and isinstance(entry.get("error"), str):
                continue  # a benchmark that raised is recorded with its error, not samples
            samples = entry.get("samples") if isinstance(entry, dict) else None
            if not isinstance(samples, list) or not samples:
                return (
                    f"{where}.benchmarks.{name}.samples: {kind(samples)} is not a list of samples"
                )
            for k, sample in enumerate(samples):
                value: Any = sample.get("throughput") if isinstance(sample, dict) else sample
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if not (number and math.isfinite(value) and value > 0):
                    return (f"{where}.benchmarks.{name}.samples[{k}].throughput: {kind(value)} "
                            "is not a positive number")  # fmt: skip
    return None


class _Bad(Exception):
    """A part of the document is not what its place holds (the message names the place)."""


def _at(where: str, read: Callable[[], T]) -> T:
    try:
        return read()
    except _Bad:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        what = f"missing {exc}" if isinstance(exc, KeyError) else str(exc)
        raise _Bad(f"{where}: {what}") from exc


def _opt(value: Any, read: Callable[[Any], T]) -> T | None:
    return None if value is None else read(value)


def _pip(data: Mapping[str, Any]) -> PipSettings:
    extra = data["extra_index_urls"]
    return PipSettings(
        index_url=data["index_url"],
        extra_index_urls="inherit" if extra == "inherit" else tuple(extra),
        ca_bundle=data["ca_bundle"],
        trusted_hosts=tuple(data["trusted_hosts"]),
    )


def _design(data: Mapping[str, Any]) -> Design:
    if data.get("kind") != "sequential":
        return Design(kind="fixed", rounds=data.get("rounds"))
    return Design(
        kind="sequential",
        first=int(data["min_rounds"]),
        horizon=int(data["max_rounds"]),
        budget_s=data.get("budget_s"),
        resolve=data.get("resolve"),
        # Design.rules is stored under "decisions", the key every results file has had: under
        # a new key, an older tfbuild would read a newer session's rules as version 1.
        rules=known_rules(data.get("decisions", 1)),
    )


def _session(data: Mapping[str, Any]) -> SessionInfo:
    design = data.get("design")
    recorded = data.get("runtime_options")
    return SessionInfo(
        id=str(data["id"]),
        started_at=data["started_at"],
        updated_at=data["updated_at"],
        finished_at=data.get("finished_at"),
        complete=bool(data["complete"]),
        tfbuild_version=data.get("tfbuild_version", "unknown"),
        argv=tuple(data.get("argv") or ()),
        matrix=data.get("matrix", ""),
        seed=int(data["seed"]),
        design=_design(design)
        if isinstance(design, dict)  # version 1 had fixed rounds only, and recorded their number
        else Design(kind="fixed", rounds=data.get("rounds")),
        stop=_opt(data.get("stop"), lambda s: record(Stop, s)),
        elapsed_s=data.get("elapsed_s"),
        preset=data.get("preset"),
        host_key=data.get("host_key"),
        cpus=_opt(data.get("cpus"), tuple),
        runtime=data.get("runtime", "auto"),
        timeout_s=data.get("timeout_s", TIMEOUT_S),
        pip=_pip(data["pip"]) if data.get("pip") else INHERIT_PIP,
        runtime_options=(
            record(RuntimeOptions, {**recorded, "template_dirs": tuple(recorded["template_dirs"])})
            if recorded
            else None
        ),
        prepare_s=data.get("prepare_s"),
    )


def _suite(data: Mapping[str, Any], version: int) -> SuiteRecord:
    benchmarks = tuple(data["benchmarks"])
    if version == 1:
        samples, warmup = {b: int(data["samples"]) for b in benchmarks}, data.get("warmup")
    else:
        samples, warmup = dict(data["samples"]), data.get("warmup_steps")
    return SuiteRecord(
        version=int(data["version"]),
        benchmarks=benchmarks,
        warmup_steps=warmup,
        iterations=dict(data["iterations"]),
        samples=samples,
        units=dict(data["units"]),
        workload=Workload.from_json(data["workload"]) if data.get("workload") else None,
        processes=_process_path(data.get("processes", "fresh")),
        weights={str(b): float(w) for b, w in (data.get("weights") or {}).items()},
    )


def _process_path(value: Any) -> ProcessPath:
    """How a session started its processes; absent (results written before it was recorded,
    every version-1 file): fresh, the only way there was."""
    for path in PROCESS_PATHS:
        if value == path:
            return path
    accepted = ", ".join(repr(p) for p in PROCESS_PATHS)
    raise _Bad(f"suite.processes: {schema.kind(value)} is not one of {accepted}")


def benchmark_result(data: Mapping[str, Any]) -> BenchmarkResult:
    """One benchmark's entry of a run, as the payload writes it and results files hold it."""
    samples = tuple(
        Sample(wall_s=s["wall_s"], cpu_s=s["cpu_s"], throughput=s["throughput"])
        for s in data.get("samples") or ()
    )
    return record(BenchmarkResult, {**data, "samples": samples})


def process_fields(data: Mapping[str, Any], entry: Callable[[Mapping[str, Any]], T]) -> Fields:
    """A recorded process's fields (ProcessRecord's), each benchmark's entry read by `entry`."""
    failure = data.get("failure")
    return {
        "round": data["round"],
        "position": data.get("position"),
        "config": data["config"],
        "status": data["status"],
        "started_at": data.get("started_at"),
        "wall_s": data["wall_s"],
        "import_s": data.get("import_s"),
        "smoke_s": data.get("smoke_s"),
        "payload_s": data.get("payload_s"),
        "threads": data.get("threads"),
        "benchmarks": {name: entry(e) for name, e in data["benchmarks"].items()},
        "failure": record(RunFailure, failure) if failure else None,
        "zygote": data.get("zygote"),
    }


def _run(data: Mapping[str, Any]) -> Run:
    checked = data.get("form_check")
    return Run(
        **process_fields(data, benchmark_result),
        form_check=form_check(checked) if checked else None,
    )


def _config(data: Mapping[str, Any]) -> ConfigEntry:
    return ConfigEntry(
        key=data["key"],
        variant=data["variant"],
        tuning=data["tuning"],
        aa=bool(data.get("aa")),
        intra_op=data.get("intra_op"),
        inter_op=data.get("inter_op"),
        env=dict(data.get("env") or {}),
        peak=_opt(data.get("peak"), lambda p: record(Peak, p)),
        xla=data.get("xla"),
        form=data.get("form", AS_GIVEN),
    )


def _variant(data: Mapping[str, Any]) -> VariantRecord:
    artifact = data.get("artifact")
    return VariantRecord(
        definition=dict(data["definition"]),
        status=data["status"],
        manifest=_opt(data.get("manifest"), Manifest.from_json),
        artifact=WheelRecord(
            variant_id=artifact["variant_id"],
            wheel=str(artifact["wheel"]),
            sha256=artifact["sha256"],
            constraints=tuple(artifact.get("constraints") or ()),
            extras=tuple(artifact.get("extras") or ()),
        )
        if artifact
        else None,
        runtime=_opt(data.get("runtime"), RuntimeRecord.from_json),
        smoke=data.get("smoke"),
        threads_default=data.get("threads_default"),
    )


_FAILURE_KEYS = ("variant", "configs", "stage", "reason")


def _failure(data: Mapping[str, Any]) -> Failure:
    return Failure(
        variant=data["variant"],
        configs=tuple(data["configs"]),
        stage=data["stage"],
        reason=data["reason"],
        details={k: v for k, v in data.items() if k not in _FAILURE_KEYS},
    )


def _look(data: Mapping[str, Any]) -> Look:
    return Look(
        round=int(data["round"]),
        elapsed_s=data["elapsed_s"],
        active=tuple(data["active"]),
        eliminated=tuple(record(Elimination, e) for e in data["eliminated"]),
        leading=tuple(data["leading"]),
        resolution=data["resolution"],
        margin=data["margin"],
        estimates={k: record(LookEstimate, e) for k, e in (data.get("estimates") or {}).items()},
        rounds_left=data.get("rounds_left"),
        aa_fit=bool(data.get("aa_fit", True)),
        rested=tuple(data.get("rested", ())),
        floors=dict(data.get("floors") or {}),
        answer=data.get("answer"),
        held=bool(data.get("held", False)),
    )


def _each(where: str, items: Any, read: Callable[[Any], T]) -> tuple[T, ...]:
    return tuple(_at(f"{where}[{i}]", partial(read, item)) for i, item in enumerate(items))


def from_json(document: Mapping[str, Any]) -> Results:
    """The records of a checked results document (see `load`), read as its schema version
    wrote it: version 1 (suite v1, fixed rounds) gave one sample count for every benchmark and
    called the warm-up steps `warmup`; version 2 gives the count per benchmark, `warmup_steps`,
    and adds sequential designs, looks, eliminations and workloads."""
    version = int(str(document["schema"]).rpartition("/")[2])
    variants = document.get("variants")
    looks = document.get("looks")
    order = document.get("order")
    return Results(
        schema=document["schema"],
        session=_at("session", lambda: _session(document["session"])),
        host=_at("host", lambda: profile_from_json(document["host"])),
        suite=_at("suite", lambda: _suite(document["suite"], version)),
        baseline=_at("baseline", lambda: record(BaselineRecord, document["baseline"])),
        variants=(
            {n: _at(f"variants.{n}", partial(_variant, v)) for n, v in variants.items()}
            if isinstance(variants, dict)
            else None
        ),
        tunings=_at("tunings", lambda: dict(document.get("tunings") or {})),
        configs=_each("configs", document["configs"], _config),
        failures=_each("failures", document["failures"], _failure),
        order=_at("order", lambda: tuple(tuple(map(str, o)) for o in order))
        if isinstance(order, list)
        else None,
        looks=_each("looks", looks, _look) if isinstance(looks, list) else None,
        runs=_each("runs", document["runs"], _run),
    )


# --------------------------------------------------------------------------------------------
# Writing


def _design_json(design: Design) -> dict[str, Any]:
    if not design.sequential:
        return {"kind": "fixed", "rounds": design.rounds}
    return {
        "kind": "sequential",
        "min_rounds": design.first,
        "max_rounds": design.horizon,
        "budget_s": design.budget_s,
        "resolve": design.resolve,
        "decisions": design.rules,  # Design.rules (see _design)
    }


def _session_json(s: SessionInfo) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": s.id,
        "started_at": s.started_at,
        "updated_at": s.updated_at,
        "finished_at": s.finished_at,
        "complete": s.complete,
        "tfbuild_version": s.tfbuild_version,
        "argv": list(s.argv),
        "matrix": s.matrix,
        "seed": s.seed,
    }
    data |= {
        "design": _design_json(s.design),
        "stop": asdict(s.stop) if s.stop else None,
        "elapsed_s": s.elapsed_s,
    }
    data |= {
        "preset": s.preset,
        "host_key": s.host_key,
        "cpus": list(s.cpus) if s.cpus is not None else None,
        "runtime": s.runtime,
        "timeout_s": s.timeout_s,
        "pip": {
            **asdict(s.pip),
            "extra_index_urls": s.pip.extra_index_urls
            if s.pip.extra_index_urls == "inherit"
            else list(s.pip.extra_index_urls),
            "trusted_hosts": list(s.pip.trusted_hosts),
        },
    }
    if s.runtime_options is not None:
        data["runtime_options"] = {
            **asdict(s.runtime_options),
            "template_dirs": list(s.runtime_options.template_dirs),
        }
    if s.prepare_s is not None:
        data["prepare_s"] = s.prepare_s
    return data


def _benchmark_json(b: BenchmarkResult) -> dict[str, Any]:
    if b.error is not None:
        raised = {"error": b.error, "traceback": b.traceback, "total_s": b.total_s}
        return {k: v for k, v in raised.items() if v is not None or k == "total_s"}
    return {
        "unit": b.unit,
        "iterations": b.iterations,
        "build_s": b.build_s,
        "trace_s": b.trace_s,
        "warmup_iterations": b.warmup_iterations,
        "warmup_s": b.warmup_s,
        "samples": [
            {"wall_s": s.wall_s, "cpu_s": s.cpu_s, "throughput": s.throughput} for s in b.samples
        ],
        "total_s": b.total_s,
    }


def run_json(run: Run) -> dict[str, Any]:
    data = process_json(run, _benchmark_json)
    if run.form_check is not None:
        data["form_check"] = form_check_json(run.form_check)
    return data


def process_json(run: ProcessRecord[T], entry: Callable[[T], dict[str, Any]]) -> dict[str, Any]:
    """A process's JSON form, each benchmark's entry written by `entry`."""
    failure = None
    if run.failure is not None:
        failure = {k: v for k, v in asdict(run.failure).items() if v is not None}
    return {
        "round": run.round,
        "position": run.position,
        "config": run.config,
        "status": run.status,
        "started_at": run.started_at,
        "wall_s": run.wall_s,
        "import_s": run.import_s,
        "smoke_s": run.smoke_s,
        "payload_s": run.payload_s,
        "threads": run.threads,
        "benchmarks": {name: entry(b) for name, b in run.benchmarks.items()},
        "failure": failure,
        **({"zygote": run.zygote} if run.zygote is not None else {}),
    }


def _config_json(c: ConfigEntry) -> dict[str, Any]:
    data = {k: getattr(c, k) for k in ("key", "variant", "tuning", "aa", "intra_op", "inter_op")}
    data |= {"env": dict(c.env), "peak": c.peak.to_json() if c.peak else None}
    data |= {"xla": c.xla} if c.xla else {}
    return data | ({"form": c.form} if c.form != AS_GIVEN else {})


def _wheel_json(w: WheelRecord) -> dict[str, Any]:
    return {
        "variant_id": w.variant_id,
        "wheel": w.wheel,
        "sha256": w.sha256,
        "constraints": list(w.constraints),
        "extras": list(w.extras),
    }


def _variant_json(v: VariantRecord) -> dict[str, Any]:
    data: dict[str, Any] = {"definition": dict(v.definition), "status": v.status}
    for key, value in (
        ("manifest", v.manifest.to_json() if v.manifest else None),
        ("artifact", _wheel_json(v.artifact) if v.artifact else None),
        ("runtime", v.runtime.to_json() if v.runtime else None),
        ("smoke", v.smoke),
        ("threads_default", v.threads_default),
    ):
        if value is not None:
            data[key] = value
    return data


def look_json(look: Look) -> dict[str, Any]:
    return {
        "round": look.round,
        "elapsed_s": look.elapsed_s,
        "active": list(look.active),
        "eliminated": [asdict(e) for e in look.eliminated],
        "leading": list(look.leading),
        "resolution": look.resolution,
        "margin": look.margin,
        "estimates": {k: asdict(e) for k, e in look.estimates.items()},
        "rounds_left": look.rounds_left,
        **({} if look.aa_fit else {"aa_fit": False}),
        **({"rested": list(look.rested)} if look.rested else {}),
        **({"floors": dict(look.floors)} if look.floors else {}),
        **({"answer": look.answer} if look.answer is not None else {}),
        **({"held": True} if look.held else {}),
    }


def to_json(results: Results) -> dict[str, Any]:
    """The JSON form of a session (the inverse of from_json), in the current schema version:
    a session read from an older version is written as the current one."""
    document: dict[str, Any] = {
        "schema": SCHEMA,
        "session": _session_json(results.session),
        "host": results.host.to_json(),
        "suite": {
            "version": results.suite.version,
            "benchmarks": list(results.suite.benchmarks),
            "warmup_steps": results.suite.warmup_steps,
            "iterations": dict(results.suite.iterations),
            "samples": dict(results.suite.samples),
            "units": dict(results.suite.units),
            "processes": results.suite.processes,
            **({"workload": w.to_json()} if (w := results.suite.workload) else {}),
            **({"weights": dict(results.suite.weights)} if results.suite.weights else {}),
        },
        "baseline": asdict(results.baseline),
        "variants": {n: _variant_json(v) for n, v in (results.variants or {}).items()},
        "tunings": dict(results.tunings),
        "configs": [_config_json(c) for c in results.configs],
        "failures": [
            {
                "variant": f.variant,
                "configs": list(f.configs),
                "stage": f.stage,
                "reason": f.reason,
                **f.details,
            }
            for f in results.failures
        ],
        "order": [list(o) for o in results.order or ()],
        "looks": [look_json(look) for look in results.looks or ()],
        "runs": [run_json(run) for run in results.runs],
    }
    return document


def save(path: Path, results: Results) -> Results:
    """Write the session atomically, stamped with the time; returns it as written."""
    stamped = replace(results, session=replace(results.session, updated_at=now()))
    write_json(path, to_json(stamped))
    return stamped
