"""The matrix model: what matrix.yaml describes, as frozen objects (Variant, Tuning, Suite,
Defaults, PipSettings, Matrix). Made by tfbuild.config.load; the rest of tfbuild reads only
these."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tfbuild.config.values import AS_GIVEN, Source, unknown
from tfbuild.errors import SelectionError
from tfbuild.wording import duration


@dataclass(frozen=True)
class Where:
    """Where something was defined, for messages that point back into matrix.yaml."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Cuda:
    version: str
    cudnn: str
    compute_capabilities: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    """One TensorFlow build: built from source with bazel, fetched from an index, or a wheel."""

    name: str
    id: str
    source: Source
    python: str
    tensorflow: str | None
    """Exact TF version; None for an unpinned package requirement (the newest release)."""
    configs: tuple[str, ...] = ()
    cpu_flags: tuple[str, ...] = ()
    march: str | None = None
    copts: tuple[str, ...] = ()
    cuda: Cuda | None = None
    requirement: str | None = None
    constraints: tuple[str, ...] = ()
    path: Path | None = None
    sha256: str | None = None
    """For `source: wheel`: the wheel's pinned sha256, checked before it is used."""
    runtime: str = "auto"
    """Where it runs: local venv, docker container, or auto (docker for source builds)."""
    where: Where | None = field(default=None, compare=False)

    @property
    def needs_build(self) -> bool:
        return self.source == "bazel"

    @property
    def tf_minor(self) -> str | None:
        return ".".join(self.tensorflow.split(".")[:2]) if self.tensorflow else None

    def definition(self) -> dict[str, Any]:
        """The variant as plain data, for manifests, results and content keys."""
        data: dict[str, Any] = {
            "name": self.name,
            "id": self.id,
            "source": self.source,
            "python": self.python,
            "tensorflow": self.tensorflow,
            "runtime": self.runtime,
        }
        if self.source == "bazel":
            data |= {
                "configs": list(self.configs),
                "cpu_flags": list(self.cpu_flags),
                "march": self.march,
                "copts": list(self.copts),
                "cuda": (
                    {
                        "version": self.cuda.version,
                        "cudnn": self.cuda.cudnn,
                        "compute_capabilities": list(self.cuda.compute_capabilities),
                    }
                    if self.cuda
                    else None
                ),
            }
        elif self.source == "pypi":
            data |= {"requirement": self.requirement, "constraints": list(self.constraints)}
        else:
            data |= {"path": str(self.path), "constraints": list(self.constraints)}
            if self.sha256:
                data["sha256"] = self.sha256
        return data


ThreadCount = int | str  # an int, or "physical" / "logical"


@dataclass(frozen=True)
class Tuning:
    """Runtime settings applied before TensorFlow starts: thread pools and environment."""

    name: str
    intra_op: ThreadCount | None = None
    inter_op: ThreadCount | None = None
    env: tuple[tuple[str, str], ...] = ()
    xla: str | None = None
    """jit: every graph function compiled by XLA (jit_compile); auto: XLA auto-clustering."""
    where: Where | None = field(default=None, compare=False)

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "intra_op": self.intra_op,
            "inter_op": self.inter_op,
            "env": dict(self.env),
            **({"xla": self.xla} if self.xla else {}),
        }


@dataclass(frozen=True)
class Budget:
    """The benchmarking time a sequential session may spend (fetching, installing and smoke
    tests not counted): in all, or for each config it runs, the baseline's A/A control included,
    and `at_least` in all, so that a matrix of more configs gets the rounds that telling more
    configs apart takes."""

    seconds: float
    per_config: bool = False
    at_least: float = 0.0

    def __str__(self) -> str:
        if not self.per_config:
            return duration(self.seconds)
        return f"{duration(self.seconds)} per config, at least {duration(self.at_least)}"

    def total(self, configs: int) -> float:
        """The session's budget in seconds when it runs `configs` configs."""
        if not self.per_config:
            return self.seconds
        return max(self.at_least, self.seconds * max(configs, 1))


DEFAULT_BUDGET = Budget(150.0, per_config=True, at_least=20 * 60.0)
"""20 minutes up to eight configs (the default run's four and the A/A control), then 2.5 a
config: 42.5 for sixteen and the A/A control, where 20 minutes left half the sessions with one
config twice the margin ahead undecided (tfbuild scenarios)."""

QUICK_BUDGET = Budget(60.0, per_config=True, at_least=10 * 60.0)
"""The quick preset's: 10 minutes up to ten configs, then a minute a config."""


@dataclass(frozen=True)
class SuiteSettings:
    """Which benchmarks run, and how a session decides how many rounds each config gets.

    With ``rounds`` set the design is fixed: every config runs that many rounds. Otherwise it is
    sequential: every config runs ``min_rounds`` (unless the budget ends first), the first look;
    then rounds go to the configs still in contention until the leading tier is resolved to
    ``resolve`` or the ``budget`` runs out; ``max_rounds`` is the horizon the error control is
    spread over (and a cap).
    """

    benchmarks: tuple[str, ...]
    min_rounds: int = 5
    max_rounds: int = 30
    budget: Budget | None = DEFAULT_BUDGET
    resolve: float | None = 0.05
    rounds: int | None = None

    @property
    def sequential(self) -> bool:
        return self.rounds is None


@dataclass(frozen=True)
class Suite:
    settings: SuiteSettings
    presets: Mapping[str, SuiteSettings]
    set_at: Mapping[str, Where] = field(default_factory=dict, compare=False)
    """Where the file sets each key of the suite: "suite.min_rounds",
    "suite.presets.quick.resolve"."""

    def preset(self, name: str | None) -> SuiteSettings:
        if name is None:
            return self.settings
        if name not in self.presets:
            raise SelectionError(unknown("suite preset", name, list(self.presets)))
        return self.presets[name]

    def written(self, preset: str | None, key: str) -> Where | None:
        """The line that sets `key` of the preset (None: the suite itself), where the file sets
        it: in the preset, else in the suite when the preset keeps the suite's value (a preset
        tfbuild builds in, quick, sets its own budget and margin)."""
        if preset is not None and (where := self.set_at.get(f"suite.presets.{preset}.{key}")):
            return where
        if getattr(self.preset(preset), key) != getattr(self.settings, key):
            return None
        return self.set_at.get(f"suite.{key}")


@dataclass(frozen=True)
class BaseImages:
    build: str
    runtime: str
    source: str | None = None
    """`from`: the registry image, pinned by digest, the base images are made from where a
    registry answers (`tfbuild base-image`); debootstrap makes them where none does."""


@dataclass(frozen=True)
class BazelSettings:
    cache: str
    """Docker volume name, or absolute host path, holding --repository_cache and --disk_cache."""
    disk_cache: bool
    remote_cache: str | None
    remote_executor: str | None
    flags: tuple[str, ...]
    network: str
    """The build container's Docker network: bridge (the engine's default) or host (this
    machine's own, so a cache listening on its localhost is reachable)."""


@dataclass(frozen=True)
class PipSettings:
    """Package index settings passed into runtimes and build containers.

    ``inherit`` means: use what pip on this machine is configured with (pip.conf, PIP_* variables),
    so a corporate mirror and its CA bundle work inside containers too.
    """

    index_url: str
    extra_index_urls: tuple[str, ...] | Literal["inherit"]
    ca_bundle: str
    trusted_hosts: tuple[str, ...]


INHERIT_PIP = PipSettings("inherit", "inherit", "inherit", ())
"""Whatever pip on this machine is configured with: the default."""


@dataclass(frozen=True)
class Defaults:
    tensorflow: str
    python: str
    base_images: BaseImages
    bazel: BazelSettings
    pip: PipSettings
    set_at: Mapping[str, Where] = field(default_factory=dict, compare=False)
    """Each key the matrix sets (dotted: defaults.bazel.cache) -> where; the rest are built in."""


@dataclass(frozen=True)
class Baseline:
    variant: str
    tuning: str


@dataclass(frozen=True)
class OptIn:
    """A named set of variants the default run leaves out (`--with NAME` adds them): builds
    whose figures do not stay comparable from one run to the next (a release candidate, the
    nightly) or that come from another era, each with what it is (`about`)."""

    name: str
    about: str
    variants: tuple[str, ...]
    where: Where | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Matrix:
    path: Path
    defaults: Defaults
    variants: tuple[Variant, ...]
    tunings: tuple[Tuning, ...]
    suite: Suite
    baseline: Baseline
    opt_in: tuple[OptIn, ...] = ()
    forms: tuple[str, ...] = (AS_GIVEN,)
    """The model forms each (variant, tuning) is measured in (`forms:`), as-given first."""
    notes: Mapping[str, str] = field(default_factory=dict, compare=False)
    """variant name -> what reading the matrix did to it that a person should know (kept on
    the declared release by --tensorflow): said by the commands that build or run it."""

    @property
    def left_out(self) -> frozenset[str]:
        """The variants the default run leaves out: those in an opt-in set."""
        return frozenset(name for s in self.opt_in for name in s.variants)

    def opted_in(self, names: Sequence[str]) -> frozenset[str]:
        """The variants of the opt-in sets `names` (`--with`)."""
        known = {s.name: s for s in self.opt_in}
        for name in names:
            if name not in known:
                raise SelectionError(
                    f"--with {name}: {self.path} "
                    + (
                        unknown("opt-in set", name, list(known))
                        if known
                        else "has no opt-in sets (an 'opt_in:' section names them)"
                    )
                )
        return frozenset(v for name in names for v in known[name].variants)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if name in (v.name, v.id):
                return v
        raise SelectionError(
            f"{self.path}: " + unknown("variant", name, [v.name for v in self.variants])
        )

    def tuning(self, name: str) -> Tuning:
        for t in self.tunings:
            if t.name == name:
                return t
        raise SelectionError(
            f"{self.path}: " + unknown("tuning", name, [t.name for t in self.tunings])
        )
