"""HostProfile: what this machine (or a saved fleet machine) is, as far as TF builds care.

Detection reads /proc, /sys and the cgroup files under a root folder (``/`` for the live host; a
fixture tree in tests), asks ``nvidia-smi`` for GPUs, the Docker engine for its version and looks
for qemu-user. A profile serialises to a versioned JSON document (``tfbuild detect --json``) that
later commands accept as ``--host host.json``.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
import functools
import io
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tfbuild import __version__, cpu
from tfbuild.errors import HostProfileError

SCHEMA = "tfbuild.host/1"

# cgroup v1 reports "no memory limit" as a page-rounded LONG_MAX.
_V1_UNLIMITED = 1 << 62


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
    def level(self) -> int:
        return cpu.isa_level(self.flags)

    @functools.cached_property
    def march(self) -> cpu.MarchChoice | None:
        return cpu.closest_march(self.vendor_id, self.flags)

    @property
    def tf_flags(self) -> dict[str, bool]:
        return cpu.tf_flags_present(self.flags)


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
        return _cap(len(self.affinity), self.cgroup)


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
class DockerInfo:
    reachable: bool
    host: str
    version: str | None = None
    api_version: str | None = None
    error: str | None = None


DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"


def docker_status(timeout: float = 3.0) -> DockerInfo:
    """Whether a Docker engine answers at DOCKER_HOST, and its version. Never raises."""
    host = os.environ.get("DOCKER_HOST", DEFAULT_DOCKER_HOST)
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        return DockerInfo(reachable=False, host=host, error=f"docker SDK missing: {exc}")
    try:
        client = docker.from_env(timeout=timeout)
        try:
            version = client.version()
        finally:
            client.close()
    except (DockerException, OSError) as exc:
        return DockerInfo(reachable=False, host=host, error=first_line(exc))
    return DockerInfo(
        reachable=True,
        host=host,
        version=str(version.get("Version")),
        api_version=str(version.get("ApiVersion")),
    )


def first_line(exc: BaseException) -> str:
    """An exception's message, first line only, for a one-line error."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


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


def parse_cpulist(text: str) -> list[int]:
    """Parse the kernel's cpu list format (``0-3,8,10-11``)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def sysfs_topology(sys_cpu: Path) -> dict[int, tuple[int, int]] | None:
    """logical cpu -> (package id, core id) from /sys/devices/system/cpu, or None if absent."""
    online_text = _read(sys_cpu / "online")
    if online_text is None:
        return None
    result: dict[int, tuple[int, int]] = {}
    for n in parse_cpulist(online_text):
        package = _read(sys_cpu / f"cpu{n}/topology/physical_package_id")
        core = _read(sys_cpu / f"cpu{n}/topology/core_id")
        if package is None or core is None:
            return None
        result[n] = (int(package), int(core))
    return result or None


def cpuinfo_topology(info: cpu.CpuInfo) -> tuple[dict[int, tuple[int, int]], str] | None:
    """logical cpu -> (package id, core id) from /proc/cpuinfo, and how it was found.

    A full dump gives each block's ``physical id`` and ``core id``. A trimmed dump (one block
    kept, as often shared) still states ``siblings`` and ``cpu cores`` per package, from which
    the layout is rebuilt.
    """
    blocks = info.processors
    per_block = all(p.package is not None and p.core is not None for p in blocks)
    packages = sorted({p.package for p in blocks if p.package is not None}) or [0]
    if per_block and (info.siblings is None or len(blocks) >= info.siblings * len(packages)):
        return {p.index: (p.package or 0, p.core or 0) for p in blocks}, "cpuinfo"
    if info.siblings and info.cores_per_package and info.siblings >= info.cores_per_package:
        threads = info.siblings // info.cores_per_package
        placement: dict[int, tuple[int, int]] = {}
        for package in packages:
            for _thread in range(threads):
                for core in range(info.cores_per_package):
                    placement[len(placement)] = (package, core)
        return placement, "cpuinfo (siblings, cpu cores)"
    return None


@dataclass(frozen=True)
class _Mount:
    root: str
    mountpoint: str
    fstype: str
    super_options: frozenset[str]


def _mounts(mountinfo: str) -> list[_Mount]:
    mounts = []
    for line in mountinfo.splitlines():
        pre, sep, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        mounts.append(
            _Mount(
                root=fields[3],
                mountpoint=fields[4].replace("\\040", " "),
                fstype=tail[0],
                super_options=frozenset(tail[2].split(",")),
            )
        )
    return mounts


def _cgroup_dirs(root: Path, controller: str) -> tuple[int, list[Path]] | None:
    """The cgroup folders that govern ``controller`` for this process, innermost first.

    Returns the cgroup version and the folders from the process's own cgroup up to the mount
    point, so a limit set on a parent (a systemd slice, a Kubernetes pod) is seen as well.
    """
    own = _read(root / "proc/self/cgroup")
    mountinfo = _read(root / "proc/self/mountinfo")
    if own is None or mountinfo is None:
        return None
    mounts = _mounts(mountinfo)
    v1_path = v2_path = None
    for line in own.splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":
            v2_path = path
        elif controller in controllers.split(","):
            v1_path = path
    candidates: list[tuple[int, str, _Mount]] = []
    if v1_path is not None:
        candidates += [
            (1, v1_path, m)
            for m in mounts
            if m.fstype == "cgroup" and controller in m.super_options
        ]
    if v2_path is not None:
        candidates += [(2, v2_path, m) for m in mounts if m.fstype == "cgroup2"]
    for version, path, mount in candidates:
        top = root / mount.mountpoint.lstrip("/")
        if version == 2 and not (top / "cgroup.controllers").exists():
            continue
        relative = path[len(mount.root) :] if path.startswith(mount.root) else ""
        here = top / relative.strip("/") if relative.strip("/") else top
        if not here.is_dir():
            here = top
        dirs = [here]
        while dirs[-1] != top and top in dirs[-1].parents:
            dirs.append(dirs[-1].parent)
        return version, dirs
    return None


def cgroup_cpu_quota(root: Path) -> CgroupCpu | None:
    """The tightest CPU bandwidth limit on this process's cgroup and its parents."""
    found = _cgroup_dirs(root, "cpu")
    if found is None:
        return None
    version, dirs = found
    limits: list[float] = []
    for d in dirs:
        if version == 2:
            text = _read(d / "cpu.max")
            if text and text.split()[0] != "max":
                quota, period = text.split()[:2]
                limits.append(int(quota) / int(period))
        else:
            quota_text, period_text = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
            if quota_text and period_text and int(quota_text) > 0:
                limits.append(int(quota_text) / int(period_text))
    return CgroupCpu(version, min(limits) if limits else None, str(dirs[0]))


def cgroup_memory_limit(root: Path) -> int | None:
    found = _cgroup_dirs(root, "memory")
    if found is None:
        return None
    version, dirs = found
    limits = []
    for d in dirs:
        text = _read(d / ("memory.max" if version == 2 else "memory.limit_in_bytes"))
        if text and text.strip().isdigit() and int(text) < _V1_UNLIMITED:
            limits.append(int(text))
    return min(limits) if limits else None


def _cap(count: int, cgroup: CgroupCpu | None) -> int:
    """Cap a CPU count by a cgroup quota, rounding a fractional quota up (as the JVM does)."""
    if cgroup is None or cgroup.quota_cpus is None:
        return count
    return max(1, min(count, math.ceil(cgroup.quota_cpus - 1e-9)))


def build_topology(
    placement: Mapping[int, tuple[int, int]] | None,
    logical_cpus: int,
    source: str,
    affinity: tuple[int, ...] | None = None,
    cgroup: CgroupCpu | None = None,
) -> Topology:
    """Count cores and sockets, in total and among the CPUs this process may use."""
    if placement is None:
        # No core ids (some hypervisors): every logical CPU is reported as its own core.
        placement = {n: (0, n) for n in range(logical_cpus)}
        source = "assumed"
    cores = set(placement.values())
    sockets = {package for package, _ in cores}
    usable_cores = sockets_in_use = None
    if affinity is not None:
        mine = {placement[n] for n in affinity if n in placement}
        usable_cores = _cap(len(mine), cgroup) if mine else None
        sockets_in_use = len({package for package, _ in mine}) or None
    return Topology(
        logical_cpus=len(placement),
        physical_cores=len(cores),
        sockets=len(sockets),
        source=source,
        affinity=affinity,
        usable_physical_cores=usable_cores,
        sockets_in_use=sockets_in_use,
        cgroup=cgroup,
    )


def _meminfo(root: Path) -> tuple[int | None, int | None]:
    values: dict[str, int] = {}
    for line in (_read(root / "proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024
    return values.get("MemTotal"), values.get("MemAvailable")


def _os_name(root: Path) -> str:
    for line in (_read(root / "etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip('"')
    return platform.system()


def _glibc() -> str | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        name = os.confstr("CS_GNU_LIBC_VERSION") or ""
        if name.startswith("glibc "):
            return name.split()[1]
    return None


Runner = Callable[[list[str]], subprocess.CompletedProcess[str]]


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)


def detect_gpus(run: Runner = _run, which: Callable[[str], str | None] = shutil.which) -> GpuInfo:
    """NVIDIA GPUs from nvidia-smi; no nvidia-smi means no GPUs, not an error."""
    smi = which("nvidia-smi")
    if smi is None:
        return GpuInfo(nvidia_smi=None)
    fields = ["index", "name", "compute_cap", "driver_version", "memory.total"]
    proc = run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if proc.returncode != 0 and "compute_cap" in (proc.stdout + proc.stderr):
        # Drivers before 510 cannot report compute capability.
        fields.remove("compute_cap")
        proc = run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"])
    if proc.returncode != 0:
        message = (proc.stderr or proc.stdout).strip().splitlines()
        return GpuInfo(nvidia_smi=smi, error=message[0] if message else f"exit {proc.returncode}")
    devices = []
    for row in csv.reader(io.StringIO(proc.stdout)):
        if not row:
            continue
        values = dict(zip(fields, (v.strip() for v in row), strict=False))
        memory = values.get("memory.total", "")
        devices.append(
            Gpu(
                index=int(values["index"]),
                name=values["name"],
                compute_capability=values.get("compute_cap") or None,
                driver_version=values["driver_version"],
                memory_mib=int(float(memory)) if memory.replace(".", "").isdigit() else None,
            )
        )
    return GpuInfo(nvidia_smi=smi, devices=tuple(devices))


def detect_qemu(run: Runner = _run, which: Callable[[str], str | None] = shutil.which) -> QemuInfo:
    for name in ("qemu-x86_64", "qemu-x86_64-static"):
        path = which(name)
        if path:
            proc = run([path, "--version"])
            first = proc.stdout.strip().splitlines()[:1]
            return QemuInfo(available=True, path=path, version=first[0] if first else None)
    return QemuInfo(available=False)


def _live_cpuinfo(root: Path) -> tuple[cpu.CpuInfo, str]:
    text = _read(root / "proc/cpuinfo")
    if text is not None:
        try:
            return cpu.parse_cpuinfo(text), "/proc/cpuinfo"
        except ValueError as exc:
            raise HostProfileError(f"/proc/cpuinfo: {exc}") from exc
    # No procfs (a sandbox, another OS): ask the CPU itself through py-cpuinfo.
    import cpuinfo as py_cpuinfo

    info = py_cpuinfo.get_cpu_info()
    hz = info.get("hz_advertised") or [0, 0]
    return (
        cpu.CpuInfo(
            vendor_id=info.get("vendor_id_raw", ""),
            model_name=info.get("brand_raw", ""),
            family=info.get("family"),
            model=info.get("model"),
            stepping=info.get("stepping"),
            mhz=hz[0] / 1e6 if hz[0] else None,
            flags=frozenset(info.get("flags", ())),
            processors=tuple(cpu.Processor(i, None, None) for i in range(info.get("count", 1))),
        ),
        "py-cpuinfo (CPUID)",
    )


def _cpu_profile(info: cpu.CpuInfo) -> CpuProfile:
    return CpuProfile(
        vendor_id=info.vendor_id,
        model_name=info.model_name,
        family=info.family,
        model=info.model,
        stepping=info.stepping,
        mhz=info.mhz,
        flags=info.flags,
    )


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def profile_from_cpuinfo(path: Path) -> HostProfile:
    """A profile of another machine, from its saved /proc/cpuinfo: CPU and topology only."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise HostProfileError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        info = cpu.parse_cpuinfo(text)
    except ValueError as exc:
        raise HostProfileError(f"{path}: {exc}") from exc
    found = cpuinfo_topology(info)
    placement, source = found if found else (None, "cpuinfo")
    return HostProfile(
        source="cpuinfo",
        source_path=str(path),
        detected_at=_now(),
        hostname=None,
        cpu=_cpu_profile(info),
        topology=build_topology(placement, len(info.processors), source),
    )


def detect(
    root: Path = Path("/"),
    affinity: tuple[int, ...] | None = None,
    docker: DockerInfo | None = None,
    gpus: GpuInfo | None = None,
    qemu: QemuInfo | None = None,
) -> HostProfile:
    """Profile the machine under ``root`` (``/``: this one).

    For the live machine leave the keyword arguments out: affinity comes from the scheduler and
    the GPU, Docker and qemu probes run. Tests pass a fixture root and their own values.
    """
    live = root == Path("/")
    info, cpuinfo_source = _live_cpuinfo(root)
    placement = sysfs_topology(root / "sys/devices/system/cpu")
    source = "sysfs"
    if placement is None and (found := cpuinfo_topology(info)) is not None:
        placement, source = found
    if affinity is None and live:
        affinity = tuple(sorted(os.sched_getaffinity(0)))
    total, available = _meminfo(root)
    if live:
        docker = docker or docker_status()
        gpus = gpus or detect_gpus()
        qemu = qemu or detect_qemu()
    return HostProfile(
        source="live",
        source_path=cpuinfo_source,
        detected_at=_now(),
        hostname=socket.gethostname() if live else None,
        cpu=_cpu_profile(info),
        topology=build_topology(
            placement, len(info.processors), source, affinity, cgroup_cpu_quota(root)
        ),
        memory=Memory(total, available, cgroup_memory_limit(root)),
        system=SystemInfo(
            os=_os_name(root),
            kernel=platform.release(),
            machine=platform.machine(),
            glibc=_glibc(),
            python=platform.python_version(),
            python_implementation=platform.python_implementation(),
            python_executable=sys.executable,
        ),
        gpus=gpus,
        docker=docker,
        qemu=qemu,
    )


# --------------------------------------------------------------------------------------------
# Recommendations


def recommend(
    cpu_profile: CpuProfile, topology: Topology, build_host_is_target: bool
) -> Recommendations:
    present = [name for name, have in cpu_profile.tf_flags.items() if have]
    flags = cpu.copts_for(present)
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
        host_march = march.name if build_host_is_target else "x86-64-v3"
        march_copts = (f"--copt=-march={march.name}", f"--host_copt=-march={host_march}")
        spec = cpu.marches().get(march.name)
        if spec is not None and spec.vendor != "any":
            notes.append(
                f"-march={march.name} needs GCC >= {spec.gcc} or Clang >= {spec.clang}; "
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


def _opt(cls: Any, data: Mapping[str, Any] | None) -> Any:
    return None if data is None else cls(**data)


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
                devices=tuple(Gpu(**g) for g in gpus["devices"]),
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
    """Read ``tfbuild detect --json`` output saved to a file (``--host host.json``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HostProfileError(f"{path}: cannot read ({exc.strerror})") from exc
    except json.JSONDecodeError as exc:
        raise HostProfileError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); "
            "expected the output of `tfbuild detect --json`"
        ) from exc
    if not isinstance(data, dict):
        raise HostProfileError(f"{path}: expected a JSON object from `tfbuild detect --json`")
    try:
        return profile_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise HostProfileError(
            f"{path}: not a tfbuild host profile ({what}); "
            f"expected the output of `tfbuild detect --json` (schema {SCHEMA})"
        ) from exc


RUNNING_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@functools.cache
def find_python(version: str) -> str | None:
    """An interpreter of CPython `version` (X.Y) on this machine: the one running tfbuild when
    it matches, else a `pythonX.Y` on PATH, else one pyenv installed, that runs and says it is
    X.Y (a version manager's shim for a version it has not activated does not); None when there
    is none."""
    if version == RUNNING_PYTHON:
        return sys.executable
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in root.glob(f"versions/{version}.*/bin/python{version}"))
    for found in filter(None, candidates):
        try:
            proc = subprocess.run(
                [found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return found
    return None


__all__ = [
    "RUNNING_PYTHON",
    "SCHEMA",
    "CgroupCpu",
    "CpuProfile",
    "DockerInfo",
    "Gpu",
    "GpuInfo",
    "HostProfile",
    "Memory",
    "QemuInfo",
    "Recommendations",
    "SystemInfo",
    "ThreadSettings",
    "Topology",
    "build_topology",
    "cgroup_cpu_quota",
    "cgroup_memory_limit",
    "detect",
    "detect_gpus",
    "detect_qemu",
    "find_python",
    "load_profile",
    "parse_cpulist",
    "profile_from_cpuinfo",
    "profile_from_json",
    "recommend",
    "sysfs_topology",
]
