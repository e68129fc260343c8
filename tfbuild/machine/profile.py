"""HostProfile: what a machine is, as far as TensorFlow builds care (this one, a saved fleet
machine, or the machine a remote Docker engine runs on), the build settings recommended for it,
and its versioned JSON document (`tfbuild detect --format json`, read back by
`--host host.json`)."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from tfbuild import __version__
from tfbuild.engine import DockerInfo
from tfbuild.errors import HostProfileError
from tfbuild.jsonrecords import record
from tfbuild.machine import cpu, uarch

SCHEMA = "tfbuild.host/1"
T = TypeVar("T")


@dataclass(frozen=True)
class CpuProfile:
    vendor_id: str
    model_name: str
    family: int | None
    model: int | None
    stepping: int | None
    mhz: float | None
    flags: frozenset[str]

    @functools.cached_property
    def isa(self) -> cpu.CpuModel:
        """This CPU as the code built for it sees it (`model` is its CPUID model number)."""
        return cpu.CpuModel(self.model_name or self.vendor_id, self.vendor_id, self.flags)

    @property
    def level(self) -> int:
        return self.isa.level

    @functools.cached_property
    def march(self) -> cpu.MarchChoice | None:
        return self.isa.march

    @property
    def tf_flags(self) -> dict[str, bool]:
        return self.isa.tf_flags()


@dataclass(frozen=True)
class CgroupCpu:
    version: int
    quota_cpus: float | None
    """CPU bandwidth limit in CPUs (``--cpus=1.5`` gives 1.5); None when unlimited."""
    path: str


@dataclass(frozen=True)
class Topology:
    logical_cpus: int
    physical_cores: int
    sockets: int
    source: str
    """Where core/package ids came from: sysfs, cpuinfo, or assumed (no topology available)."""
    affinity: tuple[int, ...] | None = None
    """CPUs this process may run on (sched_getaffinity); None when planning for another machine."""
    usable_physical_cores: int | None = None
    sockets_in_use: int | None = None
    cgroup: CgroupCpu | None = None

    @property
    def threads_per_core(self) -> int:
        return max(1, round(self.logical_cpus / max(1, self.physical_cores)))

    @property
    def usable_cpus(self) -> int | None:
        """Logical CPUs this process can keep busy: affinity, capped by the cgroup quota."""
        if self.affinity is None:
            return None
        return cap_cpus(len(self.affinity), self.cgroup)


@dataclass(frozen=True)
class Memory:
    total_bytes: int | None
    available_bytes: int | None
    cgroup_limit_bytes: int | None


@dataclass(frozen=True)
class SystemInfo:
    os: str
    kernel: str
    machine: str
    glibc: str | None
    python: str
    python_implementation: str
    python_executable: str


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    compute_capability: str | None
    driver_version: str
    memory_mib: int | None


@dataclass(frozen=True)
class GpuInfo:
    nvidia_smi: str | None
    devices: tuple[Gpu, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class QemuInfo:
    available: bool
    path: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class ThreadSettings:
    intra_op: int
    inter_op: int
    omp_num_threads: int
    kmp_blocktime: int
    kmp_affinity: str


@dataclass(frozen=True)
class Recommendations:
    copts: tuple[str, ...]
    host_copts: tuple[str, ...]
    march_copts: tuple[str, ...]
    threads: ThreadSettings
    onednn_default_on: bool
    notes: tuple[str, ...]


@dataclass(frozen=True)
class HostProfile:
    source: str
    """``live`` (detected here) or ``cpuinfo`` (built from a saved /proc/cpuinfo)."""
    source_path: str | None
    detected_at: str
    hostname: str | None
    cpu: CpuProfile
    topology: Topology
    memory: Memory | None = None
    system: SystemInfo | None = None
    gpus: GpuInfo | None = None
    docker: DockerInfo | None = None
    qemu: QemuInfo | None = None
    tfbuild_version: str = __version__

    @property
    def is_live(self) -> bool:
        return self.source == "live"

    @functools.cached_property
    def recommendations(self) -> Recommendations:
        return recommend(self.cpu, self.topology, build_host_is_target=self.is_live)

    def thread_count(self, kind: str) -> int:
        """Resolve ``physical`` or ``logical`` (matrix.yaml tuning values) for this host."""
        topo = self.topology
        if kind == "physical":
            return topo.usable_physical_cores or topo.physical_cores
        if kind == "logical":
            return topo.usable_cpus or topo.logical_cpus
        raise ValueError(f"unknown thread count {kind!r}")

    def to_json(self) -> dict[str, Any]:
        return _profile_to_json(self)


# --------------------------------------------------------------------------------------------
# Reading the machine


def cap_cpus(count: int, cgroup: CgroupCpu | None) -> int:
    """Cap a CPU count by a cgroup quota, rounding a fractional quota up (as the JVM does)."""
    if cgroup is None or cgroup.quota_cpus is None:
        return count
    return max(1, min(count, math.ceil(cgroup.quota_cpus - 1e-9)))


# --------------------------------------------------------------------------------------------
# Recommendations


def recommend(
    cpu_profile: CpuProfile, topology: Topology, build_host_is_target: bool
) -> Recommendations:
    flags = cpu.CpuModel.asking(cpu_profile.model_name, cpu_profile.flags).copts()
    copts = tuple(f"--copt={f}" for f in flags)
    notes = []
    if build_host_is_target:
        host_copts = tuple(f"--host_copt={f}" for f in flags)
    else:
        # Tools built for the exec configuration run on the build machine, which may be older
        # than the target: keep them at TensorFlow's release baseline.
        host_copts = ("--host_copt=-mavx",)
        notes.append(
            "--host_copt stays at -mavx: build-time tools run on the build machine, not this one"
        )
    march = cpu_profile.march
    march_copts: tuple[str, ...] = ()
    if march is not None:
        # Build-time tools as in the copts form: the target's -march only when the build
        # machine is the target, else TensorFlow's release baseline (-mavx), which a build
        # machine without AVX2 still runs.
        host = f"-march={march.name}" if build_host_is_target else "-mavx"
        march_copts = (f"--copt=-march={march.name}", f"--host_copt={host}")
        spec = cpu.marches().get(march.name)
        if spec is not None and spec.vendor != "any":
            notes.append(
                f"-march={march.name} needs GCC >= {spec.gcc} or Clang >= {spec.clang} "
                f"(archspec {uarch.VERSION}); "
                f"-march={cpu.level_name(spec.level)} is the portable equivalent"
            )
    notes.append(
        "a wheel built with these flags stops with SIGILL on CPUs that lack them; "
        "`tfbuild inspect` checks a wheel before it is installed"
    )
    intra = topology.usable_physical_cores or topology.physical_cores
    inter = topology.sockets_in_use or topology.sockets
    threads = ThreadSettings(
        intra_op=intra,
        inter_op=inter,
        omp_num_threads=intra,
        kmp_blocktime=1,
        kmp_affinity="granularity=fine,compact,1,0",
    )
    return Recommendations(
        copts=copts,
        host_copts=host_copts,
        march_copts=march_copts,
        threads=threads,
        onednn_default_on=cpu.onednn_default_on(cpu_profile.flags),
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# JSON


def _profile_to_json(p: HostProfile) -> dict[str, Any]:
    c, t = p.cpu, p.topology
    rec = p.recommendations
    march = c.march
    return {
        "schema": SCHEMA,
        "tfbuild_version": p.tfbuild_version,
        "detected_at": p.detected_at,
        "source": {"kind": p.source, "path": p.source_path},
        "hostname": p.hostname,
        "cpu": {
            "vendor_id": c.vendor_id,
            "model_name": c.model_name,
            "family": c.family,
            "model": c.model,
            "stepping": c.stepping,
            "mhz": c.mhz,
            "tf_flags": c.tf_flags,
            "isa_level": c.level,
            "isa_level_name": cpu.level_name(c.level),
            "march": march.name if march else None,
            "march_reason": march.reason if march else None,
            "flags": sorted(c.flags),
        },
        "topology": {
            "logical_cpus": t.logical_cpus,
            "physical_cores": t.physical_cores,
            "sockets": t.sockets,
            "threads_per_core": t.threads_per_core,
            "source": t.source,
            "affinity": list(t.affinity) if t.affinity is not None else None,
            "usable_cpus": t.usable_cpus,
            "usable_physical_cores": t.usable_physical_cores,
            "sockets_in_use": t.sockets_in_use,
            "cgroup": asdict(t.cgroup) if t.cgroup else None,
        },
        "memory": asdict(p.memory) if p.memory else None,
        "system": asdict(p.system) if p.system else None,
        "gpus": (
            {
                "nvidia_smi": p.gpus.nvidia_smi,
                "devices": [asdict(g) for g in p.gpus.devices],
                "error": p.gpus.error,
            }
            if p.gpus
            else None
        ),
        "docker": asdict(p.docker) if p.docker else None,
        "qemu": asdict(p.qemu) if p.qemu else None,
        "recommendations": {
            "copts": list(rec.copts),
            "host_copts": list(rec.host_copts),
            "march_copts": list(rec.march_copts),
            "threads": asdict(rec.threads),
            "onednn_default_on": rec.onednn_default_on,
            "notes": list(rec.notes),
        },
    }


def _opt(cls: Callable[..., T], data: Mapping[str, Any] | None) -> T | None:
    return None if data is None else record(cls, data)


def profile_from_json(data: Mapping[str, Any]) -> HostProfile:
    """Rebuild a profile from ``to_json()`` output; raises KeyError/TypeError/ValueError."""
    if data.get("schema") != SCHEMA:
        raise ValueError(f"schema is {data.get('schema')!r}; expected {SCHEMA!r}")
    c, t = data["cpu"], data["topology"]
    gpus = data.get("gpus")
    return HostProfile(
        source=data["source"]["kind"],
        source_path=data["source"]["path"],
        detected_at=data["detected_at"],
        hostname=data.get("hostname"),
        cpu=CpuProfile(
            vendor_id=c["vendor_id"],
            model_name=c["model_name"],
            family=c["family"],
            model=c["model"],
            stepping=c["stepping"],
            mhz=c["mhz"],
            flags=frozenset(c["flags"]),
        ),
        topology=Topology(
            logical_cpus=t["logical_cpus"],
            physical_cores=t["physical_cores"],
            sockets=t["sockets"],
            source=t["source"],
            affinity=tuple(t["affinity"]) if t.get("affinity") is not None else None,
            usable_physical_cores=t.get("usable_physical_cores"),
            sockets_in_use=t.get("sockets_in_use"),
            cgroup=_opt(CgroupCpu, t.get("cgroup")),
        ),
        memory=_opt(Memory, data.get("memory")),
        system=_opt(SystemInfo, data.get("system")),
        gpus=(
            GpuInfo(
                nvidia_smi=gpus["nvidia_smi"],
                devices=tuple(record(Gpu, g) for g in gpus["devices"]),
                error=gpus.get("error"),
            )
            if gpus
            else None
        ),
        docker=_opt(DockerInfo, data.get("docker")),
        qemu=_opt(QemuInfo, data.get("qemu")),
        tfbuild_version=data.get("tfbuild_version", "unknown"),
    )


def load_profile(path: Path) -> HostProfile:
    """Read ``tfbuild detect --format json`` output saved to a file (``--host host.json``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HostProfileError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise HostProfileError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
            "expected the output of `tfbuild detect --format json`"
        ) from exc
    if not isinstance(data, dict):
        raise HostProfileError(
            f"{path}: expected a JSON object from `tfbuild detect --format json`"
        )
    try:
        return profile_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise HostProfileError(
            f"{path}: not a tfbuild host profile ({what}); "
            f"expected the output of `tfbuild detect --format json` (schema {SCHEMA})"
        ) from exc
