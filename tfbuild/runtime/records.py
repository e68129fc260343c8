"""What crosses a runtime's edges as records: the configuration a benchmark process is told
(PayloadConfig, the payload's CONFIG.json) and what results record of the runtime it ran in
(RuntimeRecord, a variant's `runtime` in a results file)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from tfbuild.config.suite import TRAINED
from tfbuild.jsonrecords import record


@dataclass(frozen=True, kw_only=True)
class PayloadConfig:
    """What one payload process is told: the benchmarks to run, its thread pools and XLA
    mode, the user's model, and the CPUs it is pinned to. Written as the payload's CONFIG.json
    (tfbuild.bench.payload reads it; it never imports tfbuild)."""

    benchmarks: tuple[str, ...] = ()
    """The suite's benchmarks to run (the user's model is `workload`, not one of these)."""
    intra_op: int | None = None
    inter_op: int | None = None
    """Thread pool sizes (None: TensorFlow's default)."""
    xla: str | None = None
    """The tuning's XLA mode (jit or auto; None: without XLA)."""
    smoke_test: bool = False
    """The smoke test of an install rather than a config's measurement: it is told no XLA
    mode, and checks the user's model instead of measuring it."""
    workload: Mapping[str, Any] | None = None
    """The user's model as the payload's workload part reads it (its `spec`), paths where the
    process finds them."""
    calibrate: Mapping[str, int] | None = None
    """Steps timed one by one per benchmark (a calibration process), instead of samples."""
    cpus: tuple[int, ...] | None = None
    """The CPUs the process pins itself to before TensorFlow starts (None: not pinned)."""
    traces: str | None = None
    """Where the build's saved training steps are, as the process sees the folder (the
    runtime fills it in; None: the process traces them itself)."""

    def pinned(self, cpus: Sequence[int] | None) -> PayloadConfig:
        """This configuration for a process pinned to `cpus` (none or empty: not pinned)."""
        return replace(self, cpus=tuple(cpus) if cpus else None)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "benchmarks": list(self.benchmarks),
            "intra_op": self.intra_op,
            "inter_op": self.inter_op,
        }
        if not self.smoke_test:
            data["xla"] = self.xla
        if self.workload is not None:
            data["workload"] = dict(self.workload)
            if self.smoke_test:
                data["check_workload"] = True
        if self.calibrate is not None:
            data["calibrate"] = dict(self.calibrate)
        data["cpus"] = list(self.cpus) if self.cpus else None
        if self.traces is not None:
            data["traces"] = self.traces
        return data

    @property
    def trains(self) -> bool:
        """Whether the process runs a benchmark whose training step the build saves once."""
        return any(name in TRAINED for name in self.benchmarks)


@dataclass(frozen=True, kw_only=True)
class VenvRecord:
    """Where a local runtime is: its virtual environment and the Python version running
    tfbuild when it was described."""

    path: str
    python: str


@dataclass(frozen=True, kw_only=True)
class ContainerRecord:
    """A container runtime's image (its tag and id: None before the image is made, or when
    the engine no longer has it), the base image it was made from, and how its benchmark
    containers are confined."""

    image: str | None
    image_id: str | None
    base_image: str
    network: str
    user: str
    cpuset: str | None
    """The CPUs benchmark containers are given when a process is not pinned (None: all)."""


_VENV_KEYS = frozenset({"path", "python"})
_IMAGE_KEYS = ("image", "image_id", "base_image")
_CONFINEMENT_KEYS = ("network", "user", "cpuset")
_CONTAINER_KEYS = frozenset({*_IMAGE_KEYS, *_CONFINEMENT_KEYS})
_KNOWN_KEYS = frozenset({"kind", "wheel", "sha256", "packages", *_VENV_KEYS, *_CONTAINER_KEYS})


@dataclass(frozen=True)
class InstalledPackage:
    """One distribution pip installed into a runtime when it was made: the exact version and
    the sha256 of the file it came from (pip's install report), so that the runtime can be
    installed again, hash-checked, anywhere."""

    name: str
    version: str
    sha256: str | None
    """None when pip's report gave no hash (a wheel built from a source distribution)."""
    file: str
    """The file's name (a wheel, or a source distribution)."""

    def requirement(self) -> str:
        """The line of a requirements file that installs exactly this file."""
        pin = f"{self.name}=={self.version}"
        return f"{pin} --hash=sha256:{self.sha256}" if self.sha256 else pin


@dataclass(frozen=True, kw_only=True)
class RuntimeRecord:
    """A runtime as results record it: its kind (`local` or `docker`, what --resume makes
    again), the wheel installed in it, and the venv or the container image it is."""

    kind: str
    wheel: str
    """The wheel's file name."""
    sha256: str
    venv: VenvRecord | None = None
    container: ContainerRecord | None = None
    packages: tuple[InstalledPackage, ...] = ()
    """Every distribution pip installed into the runtime, the wheel among them (none recorded
    by a runtime made before tfbuild recorded them)."""
    other: Mapping[str, Any] = field(default_factory=dict)
    """Keys of the recorded description this tfbuild does not know, kept as they were."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuntimeRecord:
        """A runtime as a results file records it; KeyError or TypeError when it lacks what
        its kind writes."""
        venv = record(VenvRecord, data) if data.keys() & _VENV_KEYS else None
        container = record(ContainerRecord, data) if data.keys() & _CONTAINER_KEYS else None
        return cls(
            kind=data["kind"],
            wheel=data["wheel"],
            sha256=data["sha256"],
            venv=venv,
            container=container,
            packages=tuple(record(InstalledPackage, p) for p in data.get("packages") or ()),
            other={k: v for k, v in data.items() if k not in _KNOWN_KEYS},
        )

    def to_json(self) -> dict[str, Any]:
        """The description as runtimes have always written it: the venv's place or the
        image before the wheel, the containers' confinement after it."""
        data: dict[str, Any] = {"kind": self.kind}
        if self.venv is not None:
            data |= {"path": self.venv.path, "python": self.venv.python}
        image = asdict(self.container) if self.container is not None else {}
        data |= {k: image[k] for k in _IMAGE_KEYS if k in image}
        data |= {"wheel": self.wheel, "sha256": self.sha256}
        data |= {k: image[k] for k in _CONFINEMENT_KEYS if k in image}
        if self.packages:
            data["packages"] = [asdict(p) for p in self.packages]
        return data | dict(self.other)
