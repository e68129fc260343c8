"""Reading a Linux machine under a root folder (/ for this one; a probe's copy or a fixture tree
otherwise): CPU topology from sysfs or /proc/cpuinfo, cgroup CPU and memory limits, memory, the
OS name and glibc."""

from __future__ import annotations

import contextlib
import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.machine import cpu
from tfbuild.machine.profile import CgroupCpu, Topology, cap_cpus

# cgroup v1 reports "no memory limit" as a page-rounded LONG_MAX.
_V1_UNLIMITED = 1 << 62


def parse_cpulist(text: str) -> list[int]:
    """Parse the kernel's cpu list format (``0-3,8,10-11``)."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def sysfs_topology(sys_cpu: Path) -> dict[int, tuple[int, int]] | None:
    """logical cpu -> (package id, core id) from /sys/devices/system/cpu, or None if absent."""
    online_text = read_text(sys_cpu / "online")
    if online_text is None:
        return None
    result: dict[int, tuple[int, int]] = {}
    for n in parse_cpulist(online_text):
        package = read_text(sys_cpu / f"cpu{n}/topology/physical_package_id")
        core = read_text(sys_cpu / f"cpu{n}/topology/core_id")
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
    own = read_text(root / "proc/self/cgroup")
    mountinfo = read_text(root / "proc/self/mountinfo")
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
            text = read_text(d / "cpu.max")
            if text and text.split()[0] != "max":
                quota, period = text.split()[:2]
                limits.append(int(quota) / int(period))
        else:
            quota_text, period_text = (
                read_text(d / "cpu.cfs_quota_us"),
                read_text(d / "cpu.cfs_period_us"),
            )
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
        text = read_text(d / ("memory.max" if version == 2 else "memory.limit_in_bytes"))
        if text and text.strip().isdigit() and int(text) < _V1_UNLIMITED:
            limits.append(int(text))
    return min(limits) if limits else None


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
        usable_cores = cap_cpus(len(mine), cgroup) if mine else None
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


def meminfo(root: Path) -> tuple[int | None, int | None]:
    values: dict[str, int] = {}
    for line in (read_text(root / "proc/meminfo") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key] = int(parts[0]) * 1024
    return values.get("MemTotal"), values.get("MemAvailable")


def os_name(root: Path) -> str:
    for line in (read_text(root / "etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.partition("=")[2].strip().strip('"')
    return platform.system()


def glibc_version() -> str | None:
    with contextlib.suppress(ValueError, OSError, AttributeError):
        name = os.confstr("CS_GNU_LIBC_VERSION") or ""
        if name.startswith("glibc "):
            return name.split()[1]
    return None
