"""The machine a Docker engine runs on, as a HostProfile: probed in a short-lived container.

DOCKER_HOST may name another machine (``tcp://``, ``ssh://``). Benchmark containers then run
there, and the facts a command plans with (the audit's CPU and glibc, thread counts, the
FP32 peak, the CPUs --cpus may name) must be the engine's, not this machine's. A probe container
(the runtime's base image, no network, the benchmark containers' CPU and memory limits) copies
the files host detection reads (/proc/cpuinfo, /proc/meminfo, the cgroup and sysfs files) into a
folder; that tree is read by ``tfbuild.machine.detect`` exactly as it reads this machine. This
machine's profile is kept only when the engine is this machine: a local socket, or the same host
name, kernel, memory and CPU (model, flags, count) as the probe reports.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tfbuild import engine
from tfbuild.engine import DockerInfo
from tfbuild.errors import EngineUnavailable, InstallError, UsageError
from tfbuild.machine.detect import detect
from tfbuild.machine.linux import parse_cpulist
from tfbuild.machine.profile import GpuInfo, HostProfile, SystemInfo

PROBE_DIR = "/tmp/tfbuild-probe"
PROBE_TIMEOUT = 120.0
# Files are read with cat, not copied: procfs and sysfs report a size of 0. /proc/self is the
# reading process, which shares the probe's cgroup and CPU affinity.
PROBE_SCRIPT = f"""\
set -e
out={PROBE_DIR}
mkdir -p "$out/proc/self" "$out/etc" "$out/sys/devices/system/cpu"
for f in cpuinfo meminfo self/cgroup self/mountinfo self/status sys/kernel/osrelease; do
  mkdir -p "$(dirname "$out/proc/$f")"; cat "/proc/$f" > "$out/proc/$f"
done
cat /etc/os-release > "$out/etc/os-release" 2>/dev/null || true
cpu=/sys/devices/system/cpu
cat "$cpu/online" > "$out$cpu/online" 2>/dev/null || rm -f "$out$cpu/online"
for d in "$cpu"/cpu[0-9]*; do
  if [ -r "$d/topology/core_id" ] && [ -r "$d/topology/physical_package_id" ]; then
    mkdir -p "$out$d/topology"
    cat "$d/topology/core_id" > "$out$d/topology/core_id"
    cat "$d/topology/physical_package_id" > "$out$d/topology/physical_package_id"
  fi
done
while read -r _ _ _ _ point _; do
  case "$point" in /sys/fs/cgroup*)
    for name in cgroup.controllers cpu.max memory.max cpu.cfs_quota_us cpu.cfs_period_us \\
                memory.limit_in_bytes; do
      if [ -r "$point/$name" ]; then
        mkdir -p "$out$point"; cat "$point/$name" > "$out$point/$name"
      fi
    done;;
  esac
done < /proc/self/mountinfo
uname -m > "$out/machine"
getconf GNU_LIBC_VERSION > "$out/glibc" 2>/dev/null || true
python3 -c 'import platform; print(platform.python_version())' > "$out/python" 2>/dev/null || true
"""


def is_local_socket(docker_host: str) -> bool:
    """An engine reached through a socket file runs on this machine's kernel."""
    return docker_host.startswith(("unix://", "npipe://"))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _last_word(text: str | None) -> str | None:
    """``glibc 2.36`` -> ``2.36`` (getconf GNU_LIBC_VERSION)."""
    words = (text or "").split()
    return words[-1] if words else None


def _affinity(status: str | None) -> tuple[int, ...] | None:
    for line in (status or "").splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            return tuple(parse_cpulist(value))
    return None


def profile_from_tree(
    tree: Path, docker: DockerInfo, facts: Mapping[str, Any], where: str
) -> HostProfile:
    """A profile of the engine's machine from the probe's copy of its /proc, /sys and cgroups."""
    if _read(tree / "proc/cpuinfo") is None:
        raise EngineUnavailable(f"the probe container on {where} could not read /proc/cpuinfo")
    gpus = GpuInfo(
        nvidia_smi=None, error="not probed: benchmark containers are started without GPUs"
    )
    detected = detect(
        tree, affinity=_affinity(_read(tree / "proc/self/status")), docker=docker, gpus=gpus
    )
    assert detected.system is not None
    system = SystemInfo(
        os=detected.system.os,
        kernel=str(facts.get("KernelVersion") or _read(tree / "proc/sys/kernel/osrelease")),
        machine=_read(tree / "machine") or str(facts.get("Architecture") or ""),
        glibc=_last_word(_read(tree / "glibc")),
        python=_read(tree / "python") or "",
        python_implementation="CPython",
        python_executable="/opt/tf/bin/python",
    )
    topology = detected.topology
    if topology.cgroup is not None:  # as the engine's machine names it, not this folder
        inside = "/" + Path(topology.cgroup.path).relative_to(tree).as_posix()
        topology = dataclasses.replace(
            topology, cgroup=dataclasses.replace(topology.cgroup, path=inside)
        )
    return dataclasses.replace(
        detected,
        topology=topology,
        source="engine",
        source_path=f"probe container on {where}",
        hostname=str(facts.get("Name") or "") or None,
        system=system,
    )


def probe(
    image: str, docker: DockerInfo, nano_cpus: int | None = None, memory: str | None = None
) -> tuple[HostProfile, dict[str, Any]]:
    """Profile the engine's machine as a benchmark container sees it, and its `docker info`."""
    where = docker.host
    if engine.image_info(image) is None:
        raise InstallError(
            f"base image {image} is not on the engine at {where}; {engine.MAKE_BASE_IMAGE}"
        )
    facts = engine.engine_facts()
    with tempfile.TemporaryDirectory(prefix="tfbuild-probe-") as tmp:
        spec = engine.ContainerSpec(
            image, ("sh", "-c", PROBE_SCRIPT), "probe",
            network="none", user=engine.BENCH_USER, nano_cpus=nano_cpus, memory=memory,
        )  # fmt: skip
        code, output = engine.run_and_collect(spec, PROBE_DIR, Path(tmp), PROBE_TIMEOUT)
        if code != 0:
            raise EngineUnavailable(
                f"the probe container ({image}) on {where} exited with code {code}:\n"
                + output.strip()[-2000:]
            )
        return profile_from_tree(Path(tmp) / Path(PROBE_DIR).name, docker, facts, where), facts


def same_machine(local: HostProfile, remote: HostProfile, facts: Mapping[str, Any]) -> bool:
    """Whether the engine runs on this machine: every fact both sides report agrees."""
    mine = {
        "Name": local.hostname,
        "NCPU": local.topology.logical_cpus,
        "KernelVersion": local.system.kernel if local.system else None,
        "MemTotal": local.memory.total_bytes if local.memory else None,
    }
    return (
        all(facts.get(key) == value for key, value in mine.items())
        and remote.topology.logical_cpus == local.topology.logical_cpus
        and (remote.cpu.vendor_id, remote.cpu.model_name, remote.cpu.flags)
        == (local.cpu.vendor_id, local.cpu.model_name, local.cpu.flags)
    )


def engine_machine(
    here: HostProfile,
    kinds: Mapping[str, str],
    docker: DockerInfo,
    image: str,
    *,
    cpus: Sequence[int] | None,
    nano_cpus: int | None,
    memory: str | None,
    note: Callable[[str], None],
) -> HostProfile:
    """The machine a session's benchmarks run on: for Docker runtimes on another machine
    (DOCKER_HOST), that machine, probed in a container of the runtime image `image` with the
    benchmark containers' limits; else `here`. `kinds` is the runtime each variant gets."""
    if not docker.reachable or is_local_socket(docker.host) or "docker" not in kinds.values():
        return here
    profile, facts = probe(image, docker, nano_cpus, memory)
    if same_machine(here, profile, facts):
        note(f"engine {docker.host} ({facts.get('Name')}) is this machine")
        return here
    local = sorted(name for name, kind in kinds.items() if kind == "local")
    if local:
        raise UsageError(
            f"the engine at {docker.host} ({facts.get('Name')}) is another machine, and "
            f"variants {', '.join(local)} would run on this one: timings from two machines "
            "do not compare; pass --runtime docker (or --runtime local)"
        )
    affinity = profile.topology.affinity
    if cpus and affinity is not None and not set(cpus) <= set(affinity):
        raise UsageError(
            f"--cpus {','.join(map(str, cpus))}: containers on the engine at {docker.host} "
            f"may use CPUs {list(affinity)} only"
        )
    note(
        f"engine {docker.host} ({facts.get('Name')}) is another machine: planning for its "
        f"{profile.cpu.model_name}, {profile.topology.usable_cpus or profile.topology.logical_cpus}"
        " CPUs (probed in a container)"
    )
    return profile
