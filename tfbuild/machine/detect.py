"""Detecting a machine: /proc, /sys and the cgroup files under a root folder, nvidia-smi for
GPUs, the Docker engine, qemu-user; or another machine from its saved /proc/cpuinfo."""

from __future__ import annotations

import csv
import datetime as dt
import io
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tfbuild.engine import DockerInfo, docker_status
from tfbuild.errors import HostProfileError
from tfbuild.machine import cpu
from tfbuild.machine.linux import (
    build_topology,
    cgroup_cpu_quota,
    cgroup_memory_limit,
    cpuinfo_topology,
    glibc_version,
    meminfo,
    os_name,
    read_text,
    sysfs_topology,
)
from tfbuild.machine.profile import (
    CpuProfile,
    Gpu,
    GpuInfo,
    HostProfile,
    Memory,
    QemuInfo,
    SystemInfo,
)

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
    text = read_text(root / "proc/cpuinfo")
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
    return profile_from_cpuinfo_text(text, str(path))


def profile_from_cpuinfo_text(text: str, source: str) -> HostProfile:
    """A profile from the text of a /proc/cpuinfo (`source` says where it came from)."""
    try:
        info = cpu.parse_cpuinfo(text)
    except ValueError as exc:
        raise HostProfileError(f"{source}: {exc}") from exc
    found = cpuinfo_topology(info)
    placement, kind = found if found else (None, "cpuinfo")
    return HostProfile(
        source="cpuinfo",
        source_path=source,
        detected_at=_now(),
        hostname=None,
        cpu=_cpu_profile(info),
        topology=build_topology(placement, len(info.processors), kind),
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
    total, available = meminfo(root)
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
            os=os_name(root),
            kernel=platform.release(),
            machine=platform.machine(),
            glibc=glibc_version(),
            python=platform.python_version(),
            python_implementation=platform.python_implementation(),
            python_executable=sys.executable,
        ),
        gpus=gpus,
        docker=docker,
        qemu=qemu,
    )
