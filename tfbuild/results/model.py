"""The results of a bench session as typed, frozen records: every raw sample, and everything
needed to trust, resume and re-analyse it.

The JSON form (schema tfbuild.results/2, tfbuild/data/schemas/results.schema.json) is read and
written in one place, tfbuild.results.codec; everything else builds and reads these records.
Documents of other schemas kept inside a session (the smoke test's report, a variant's
definition) stay JSON mappings, as they were recorded; a wheel's manifest and a runtime's
description are the records of the stages that write them (Manifest, RuntimeRecord).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, get_args

from tfbuild.config.model import PipSettings
from tfbuild.config.values import AS_GIVEN, TIMEOUT_S
from tfbuild.machine.peak import Peak
from tfbuild.machine.profile import HostProfile
from tfbuild.results.forms import FormCheck
from tfbuild.results.rules import CURRENT_RULES, rules
from tfbuild.runtime.records import RuntimeRecord
from tfbuild.sequential import look_schedule
from tfbuild.store import Artifact, Manifest

SCHEMA = "tfbuild.results/2"
READABLE = (SCHEMA, "tfbuild.results/1")
"""Version 1 (suite v1, fixed rounds) is still read, for comparison."""
AA_SUFFIX = "~aa"

Json = Mapping[str, Any]
"""A document of another schema, kept as it was recorded."""


def is_aa(key: str) -> bool:
    """Whether a config key is the baseline's A/A copy."""
    return key.endswith(AA_SUFFIX)


@dataclass(frozen=True, kw_only=True)
class Sample:
    wall_s: float
    cpu_s: float
    throughput: float


@dataclass(frozen=True, kw_only=True)
class BenchmarkResult:
    """One benchmark in one process: its samples, or the error it raised (no samples)."""

    unit: str | None = None
    iterations: int | None = None
    build_s: float | None = None
    trace_s: float | None = None
    warmup_iterations: int | None = None
    warmup_s: float | None = None
    samples: tuple[Sample, ...] = ()
    total_s: float | None = None
    error: str | None = None
    traceback: str | None = None
    """Where the error was raised (its last lines)."""

    @property
    def value(self) -> float | None:
        """The process's value for this benchmark: the median throughput of its samples."""
        if not self.samples:
            return None
        return statistics.median(s.throughput for s in self.samples)


@dataclass(frozen=True, kw_only=True)
class RunFailure:
    """Why a benchmark process failed, in words a user can act on."""

    kind: str
    """sigill, signal, exit, import or timeout."""
    reason: str
    signal: int | None = None
    exit_code: int | None = None
    stderr_tail: str | None = None


E = TypeVar("E")


@dataclass(frozen=True, kw_only=True)
class ProcessRecord(Generic[E]):
    """One config run once, in its own process (fresh, or forked from a zygote), in one round,
    whatever it timed: each benchmark's entry (E) is a bench session's samples or a
    calibration's timed steps."""

    round: int
    position: int | None
    config: str
    status: str
    """ok or failed."""
    started_at: str | None
    wall_s: float
    import_s: float | None = None
    smoke_s: float | None = None
    payload_s: float | None = None
    threads: Json | None = None
    """The thread pools and environment in force inside the process, as the payload saw them."""
    benchmarks: Mapping[str, E] = field(default_factory=dict)
    failure: RunFailure | None = None
    zygote: str | None = None
    """The zygote a forked process came from (its id, unique within the session); None for a
    fresh process, and for a forked one recorded before zygotes were (unknown)."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True, kw_only=True)
class Run(ProcessRecord[BenchmarkResult]):
    """A bench session's process: every benchmark's samples."""

    form_check: FormCheck | None = None
    """A model form's outputs against the as-given form's, as this process checked them before
    timing it (None for the as-given form, and where the form could not be made)."""

    def values(self) -> dict[str, float]:
        """benchmark -> this run's value, for the benchmarks that measured something."""
        values = {name: entry.value for name, entry in self.benchmarks.items()}
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True, kw_only=True)
class ConfigEntry:
    """A (variant, tuning) config as the session ran it: the A/A copy is the baseline's config
    under a second key."""

    key: str
    variant: str
    tuning: str
    aa: bool = False
    intra_op: int | None = None
    inter_op: int | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    peak: Peak | None = None
    xla: str | None = None
    """jit or auto (the tuning's `xla`), None without XLA."""
    form: str = AS_GIVEN
    """The model form the workload was measured in; as-given in results from before forms."""


@dataclass(frozen=True, kw_only=True)
class WheelRecord:
    """The wheel a variant was measured with, as the session recorded it: its path as the user
    types it where the session ran (tfbuild.files.portable), exactly as written."""

    variant_id: str
    wheel: str
    sha256: str
    constraints: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()

    @classmethod
    def of(cls, artifact: Artifact, wheel: str) -> WheelRecord:
        return cls(
            variant_id=artifact.variant_id,
            wheel=wheel,
            sha256=artifact.sha256,
            constraints=artifact.constraints,
            extras=artifact.extras,
        )

    def artifact(self, manifest: Manifest | None) -> Artifact:
        """The wheel to install again (--resume), with the manifest recorded beside it."""
        return Artifact(
            self.variant_id, Path(self.wheel), self.sha256, self.constraints, manifest, self.extras
        )


@dataclass(frozen=True, kw_only=True)
class VariantRecord:
    """What a session did with a variant: planned, ready (installed and smoke-tested) or
    failed, with the wheel it measured."""

    definition: Json
    status: str
    manifest: Manifest | None = None
    artifact: WheelRecord | None = None
    runtime: RuntimeRecord | None = None
    smoke: Json | None = None
    threads_default: Json | None = None


Stage = Literal["plan", "build", "fetch", "inspect", "install", "smoke", "form"]
"""Where a variant failed, in the order a session prepares it; `form`: a config whose model form
the model or build cannot take (refused in its first process, not run again)."""
STAGES: tuple[Stage, ...] = get_args(Stage)


@dataclass(frozen=True, kw_only=True)
class Failure:
    """A variant that could not be measured, and the stage it failed in."""

    variant: str
    configs: tuple[str, ...]
    stage: Stage
    reason: str
    details: Json = field(default_factory=dict)
    """What else the stage knew: the failure kind, signal, exit code, stderr tail."""


@dataclass(frozen=True, kw_only=True)
class Elimination:
    """A config stopped at a look: it cannot be the fastest, `slower_than` is ahead of it."""

    config: str
    slower_than: str
    ratio: float
    upper: float


@dataclass(frozen=True, kw_only=True)
class LookEstimate:
    ratio: float
    low: float
    high: float
    rounds: int

    @property
    def half_width(self) -> float:
        """How far the interval reaches from the estimate, as a fraction of it."""
        return max(self.high / self.ratio - 1.0, 1.0 - self.low / self.ratio)


@dataclass(frozen=True, kw_only=True)
class Look:
    """What a sequential session knew after `round` rounds, and what it did about it."""

    round: int
    elapsed_s: float
    active: tuple[str, ...]
    eliminated: tuple[Elimination, ...]
    leading: tuple[str, ...]
    resolution: float
    margin: float
    estimates: Mapping[str, LookEstimate]
    rounds_left: int | None = None
    aa_fit: bool = True
    """Whether the A/A control's interval (in `estimates` under the copy's key) lies within the
    span the answer allows (analysis.estimates.AA_SPAN margins): under rules 3 a session stops on
    its data only then, so that what it stops on can be answered."""
    rested: tuple[str, ...] = ()
    """Leading configs that run no more rounds from this look on (rules 4): each one's interval
    against the baseline was within the target while another leading config's was not. Each is
    judged at this look from then on, still in the leading tier."""
    floors: Mapping[str, float | None] = field(default_factory=dict)
    """Rules 5: each leading config's lower bound of its throughput over the fastest other
    leading config (multiple comparisons with the best; None when it leads alone); at or above
    1 / (1 + margin) it is within the margin of the fastest, and the session's answer is
    decided."""

    answer: str | None = None
    """Rules 6: the config the answer names at this look when it is decided there (the baseline:
    keep it; analysis.answer.decide), the A/A control aside; None while it is open."""
    held: bool = False
    """Rules 6: nothing was put out at this look, its A/A control being wider than the span the
    answer allows (it could not yet tell the baseline from itself)."""

    @property
    def stopped(self) -> frozenset[str]:
        """The configs that run no more rounds from this look on: put out, or rested."""
        return frozenset(e.config for e in self.eliminated).union(self.rested)

    @property
    def certified(self) -> list[str]:
        """Rules 5: the leading configs known to be within the margin of the fastest."""
        return within_margin(self.floors, self.margin)


def within_margin(floors: Mapping[str, float | None], margin: float) -> list[str]:
    """The configs whose floor (their throughput's lower bound over the fastest of the others;
    None or inf for a config alone) shows them within `margin` of the fastest, best first."""
    known = {c: math.inf if f is None else f for c, f in floors.items()}
    bound = 1.0 / (1.0 + margin) - 1e-12
    return sorted((c for c, f in known.items() if f >= bound), key=lambda c: -known[c])


DEFAULT_MARGIN = 0.05
"""The indifference margin of a design that names none (a fixed one): the default matrix's."""


@dataclass(frozen=True, kw_only=True)
class Design:
    """How a session chose its rounds: a fixed number, or sequentially with looks scheduled
    from `first` to the error-control horizon (sequential.look_schedule), until the leading tier is
    resolved to `resolve` or the budget runs out."""

    kind: str
    rounds: int | None = None
    """Fixed designs: every config runs this many rounds."""
    first: int = 2
    horizon: int | None = None
    budget_s: float | None = None
    resolve: float | None = None
    rules: int = CURRENT_RULES
    """The version of the rules a sequential session's looks were decided by (see CURRENT_RULES)."""

    @property
    def sequential(self) -> bool:
        return self.kind == "sequential"

    @property
    def margin(self) -> float:
        """The indifference margin the session answers at: `resolve`, DEFAULT_MARGIN for a
        design that names none (a fixed one)."""
        return self.resolve if self.resolve is not None else DEFAULT_MARGIN

    @property
    def schedule(self) -> tuple[int, ...]:
        if not self.sequential or self.horizon is None:
            return ()
        return look_schedule(self.first, self.horizon, rules(self.rules).look_growth)


FIXED = Design(kind="fixed")
"""A fixed design of no one number of rounds (sessions pooled into one comparison)."""


@dataclass(frozen=True, kw_only=True)
class Stop:
    reason: str
    """resolved, budget, max_rounds, fixed or nothing_runs."""
    round: int
    message: str


@dataclass(frozen=True, kw_only=True)
class RuntimeOptions:
    """How the session made its runtimes (so --resume makes the same)."""

    base_image: str
    template_dirs: tuple[str, ...]
    cpuset: str | None = None
    nano_cpus: int | None = None
    memory: str | None = None


@dataclass(frozen=True, kw_only=True)
class SessionInfo:
    id: str
    started_at: str
    updated_at: str
    finished_at: str | None
    complete: bool
    tfbuild_version: str
    argv: tuple[str, ...]
    matrix: str
    seed: int
    design: Design
    """Results of schema version 1 had fixed rounds only, and are read as such."""
    stop: Stop | None = None
    elapsed_s: float | None = None
    """Seconds spent benchmarking (rounds), across resumes: what the budget counts (None: not
    recorded, results first written by schema version 1)."""
    preset: str | None = None
    host_key: str | None = None
    """The machine class the results are compared as (--host-key); None: from the host."""
    cpus: tuple[int, ...] | None = None
    runtime: str = "auto"
    timeout_s: float = TIMEOUT_S
    pip: PipSettings
    runtime_options: RuntimeOptions | None = None
    prepare_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class Workload:
    """The user's own model a session measured (`--workload`): what it is and what was fed to
    it, so that sessions of different work are never compared."""

    kind: str
    """savedmodel, keras or script."""
    path: str
    """As the user gave it (relative to the session's folder when below it)."""
    digest: str
    """sha256 over the model's files (their relative paths and contents)."""
    version: int
    """workload_payload.WORKLOAD_VERSION: the calls, samples and warm-up of every process."""
    signature: str | None = None
    batch: int = 1
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    inputs: str | None = None
    """The .npz the inputs came from (else generated from the signature with a fixed seed)."""
    inputs_digest: str | None = None
    calls: int = 50
    """Calls in one timed sample (three a process); four times as many timed one by one."""
    files: tuple[str, ...] = ()
    """A script's FILES: what it reads beside it, relative to its folder (in the digest, and
    shipped beside it into a container)."""
    atol: float | None = None
    rtol: float | None = None
    """--atol and --rtol: how far a model form's outputs may be from the as-given form's
    (None: the runtime's default, workload_forms.ATOL and RTOL). Not in the identity: they
    decide which forms pass, not what a timing measures."""

    def identity(self) -> tuple[Hashable, ...]:
        """What two sessions must share to have measured the same work."""
        shapes = tuple(sorted((k, tuple(v)) for k, v in self.shapes.items()))
        return (self.kind, self.digest, self.version, self.signature, self.batch, shapes,
                self.inputs_digest, self.calls)  # fmt: skip

    def describe(self) -> str:
        parts = [f"{self.kind} {self.path} (sha256 {self.digest[:12]})", f"{self.calls} calls"]
        if self.files:
            parts.append(f"with {', '.join(self.files)}")
        if self.signature:
            parts.append(f"signature {self.signature}")
        if self.kind != "script":
            parts.append(f"batch {self.batch}")
            parts += [f"--shape {k}={','.join(map(str, v))}" for k, v in self.shapes.items()]
            given = f"{self.inputs} (sha256 {(self.inputs_digest or '')[:12]})"
            parts.append(f"inputs {given}" if self.inputs else "generated inputs")
        parts += [
            f"--{k} {v:g}" for k, v in (("atol", self.atol), ("rtol", self.rtol)) if v is not None
        ]
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["shapes"] = {k: list(v) for k, v in self.shapes.items()}
        if self.files:
            data["files"] = list(self.files)
        else:
            del data["files"]
        for unset in [k for k in ("atol", "rtol") if data[k] is None]:
            del data[unset]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Workload:
        return cls(
            kind=str(data["kind"]),
            path=str(data["path"]),
            digest=str(data["digest"]),
            version=int(data["version"]),
            signature=data.get("signature"),
            batch=int(data.get("batch") or 1),
            shapes={
                str(k): tuple(int(d) for d in v) for k, v in (data.get("shapes") or {}).items()
            },
            inputs=data.get("inputs"),
            inputs_digest=data.get("inputs_digest"),
            files=tuple(str(f) for f in data.get("files") or ()),
            calls=int(data.get("calls") or 50),
            atol=None if data.get("atol") is None else float(data["atol"]),
            rtol=None if data.get("rtol") is None else float(data["rtol"]),
        )


ProcessPath = Literal["fresh", "forked"]
"""How a session started its benchmark processes. Both run the same payload, iterations and
samples, but their speeds differ by a few percent per benchmark, either way
(docs/measurements/process-cost-*), so sessions of the two are never ranked together."""
PROCESS_PATHS: tuple[ProcessPath, ...] = get_args(ProcessPath)
DEFAULT_PROCESSES: ProcessPath = "forked"
"""Unless --processes says otherwise: half the seconds a process (docs/reference.md)."""


@dataclass(frozen=True, kw_only=True)
class SuiteRecord:
    version: int
    benchmarks: tuple[str, ...]
    warmup_steps: int | None
    iterations: Mapping[str, int]
    samples: Mapping[str, int]
    units: Mapping[str, str]
    workload: Workload | None = None
    processes: ProcessPath = "fresh"
    """How each benchmark process was started: fresh (a new interpreter that imports
    TensorFlow) or forked (from a process of the same config that had imported it and run no
    op). Results written before the field existed ran fresh."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """benchmark -> its weight in the overall speed the session was decided on (--weight; 1
    for those not named): what its looks, the answer and a replay weigh. Empty: all equal."""


@dataclass(frozen=True, kw_only=True)
class BaselineRecord:
    variant: str
    tuning: str
    config: str
    aa_config: str | None = None


@dataclass(frozen=True, kw_only=True)
class Results:
    """One session: the machine, the suite, the configs, and every run and look in order."""

    schema: str = SCHEMA
    session: SessionInfo
    host: HostProfile
    suite: SuiteRecord
    baseline: BaselineRecord
    variants: Mapping[str, VariantRecord] | None
    """None only in a damaged file, which --resume refuses."""
    tunings: Mapping[str, Json] = field(default_factory=dict)
    configs: tuple[ConfigEntry, ...]
    failures: tuple[Failure, ...] = ()
    order: tuple[tuple[str, ...], ...] | None = ()
    """Each round's order of the configs it ran; None only in a damaged file."""
    looks: tuple[Look, ...] | None = ()
    """None in results of schema version 1 (no looks)."""
    runs: tuple[Run, ...] = ()

    @property
    def id(self) -> str:
        return self.session.id

    @property
    def design(self) -> Design:
        return self.session.design

    def config(self, key: str) -> ConfigEntry:
        return next(c for c in self.configs if c.key == key)

    def variant(self, name: str) -> VariantRecord:
        return (self.variants or {})[name]

    @property
    def ready(self) -> set[str]:
        """The variants installed and smoke-tested: their configs run."""
        return {name for name, v in (self.variants or {}).items() if v.status == "ready"}

    def finished(self) -> set[tuple[int, str]]:
        """(round, config) of every run recorded."""
        return {(run.round, run.config) for run in self.runs}

    def with_run(self, run: Run) -> Results:
        return replace(self, runs=(*self.runs, run))

    def with_variant(self, name: str, record: VariantRecord) -> Results:
        return replace(self, variants={**(self.variants or {}), name: record})


def config_entry(
    key: str,
    *,
    intra_op: int | None = None,
    inter_op: int | None = None,
    env: Mapping[str, str] | None = None,
    peak: Peak | None = None,
) -> ConfigEntry:
    """The entry of config `key` ("variant:tuning", ":form" after it for a form other than
    as-given, with "~aa" for the A/A copy)."""
    variant, _, rest = key.removesuffix(AA_SUFFIX).partition(":")
    tuning, _, form = rest.partition(":")
    return ConfigEntry(
        key=key,
        variant=variant,
        tuning=tuning,
        form=form or AS_GIVEN,
        aa=is_aa(key),
        intra_op=intra_op,
        inter_op=inter_op,
        env=dict(env or {}),
        peak=peak,
    )


def sample_values(runs: Sequence[Run]) -> dict[tuple[str, str], list[float]]:
    """(config, benchmark) -> every raw sample throughput, in run order."""
    out: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for bench, entry in run.benchmarks.items():
            out.setdefault((run.config, bench), []).extend(s.throughput for s in entry.samples)
    return out
