"""Host detection from fixture trees: sysfs topology, cgroup v1/v2 quotas, GPUs, JSON."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

import jsonschema
import pytest
from support.env import FIXTURES, require

from tfbuild.engine import DockerInfo
from tfbuild.machine.detect import Runner, detect, detect_gpus, detect_qemu
from tfbuild.machine.linux import cgroup_cpu_quota, cgroup_memory_limit, parse_cpulist
from tfbuild.machine.profile import GpuInfo, HostProfile, QemuInfo
from tfbuild.resources import data_path

ZEN4 = (FIXTURES / "cpuinfo" / "zen4-epyc-9654.cpuinfo").read_text()
HASWELL = (FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo").read_text()
NO_DOCKER = DockerInfo(reachable=False, host="unix:///nonexistent.sock", error="test")
NO_GPU = GpuInfo(nvidia_smi=None)
NO_QEMU = QemuInfo(available=False)


def make_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def detect_tree(root: Path, affinity: tuple[int, ...] | None = None) -> HostProfile:
    return detect(root, affinity=affinity, docker=NO_DOCKER, gpus=NO_GPU, qemu=NO_QEMU)


def sys_topology(layout: Mapping[int, tuple[int, int]]) -> dict[str, str]:
    files = {"sys/devices/system/cpu/online": f"0-{max(layout)}\n"}
    for n, (package, core) in layout.items():
        files[f"sys/devices/system/cpu/cpu{n}/topology/physical_package_id"] = f"{package}\n"
        files[f"sys/devices/system/cpu/cpu{n}/topology/core_id"] = f"{core}\n"
    return files


# Two sockets, four cores each, two threads per core: cpu n and n+8 are SMT siblings.
SMT_2S = {n: (n // 4 % 2, n % 4) for n in range(16)}


def test_sysfs_topology_counts_cores_not_threads(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"proc/cpuinfo": HASWELL, **sys_topology(SMT_2S)})
    t = detect_tree(root, affinity=tuple(range(16))).topology
    assert (t.logical_cpus, t.physical_cores, t.sockets, t.threads_per_core) == (16, 8, 2, 2)
    assert t.source == "sysfs"
    assert t.usable_physical_cores == 8 and t.sockets_in_use == 2


def test_affinity_limits_usable_cores(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"proc/cpuinfo": HASWELL, **sys_topology(SMT_2S)})
    # cpus 0 and 8 are the two threads of one core of socket 0
    profile = detect_tree(root, affinity=(0, 8))
    t = profile.topology
    assert t.usable_cpus == 2 and t.usable_physical_cores == 1 and t.sockets_in_use == 1
    threads = profile.recommendations.threads
    assert (threads.intra_op, threads.inter_op, threads.omp_num_threads) == (1, 1, 1)
    assert profile.thread_count("logical") == 2 and profile.thread_count("physical") == 1


def test_falls_back_to_cpuinfo_topology(tmp_path: Path) -> None:
    root = make_tree(tmp_path, {"proc/cpuinfo": HASWELL})
    t = detect_tree(root, affinity=tuple(range(24))).topology
    assert (t.logical_cpus, t.physical_cores, t.sockets, t.source) == (24, 24, 2, "cpuinfo")


# What `docker run --cpus=1` shows inside the container on a cgroup v1 host (captured).
V1_CONTAINER = "0123456789abcdef" * 4
V1_DOCKER = {
    "proc/self/cgroup": "".join(
        f"{n}:{c}:/docker/{V1_CONTAINER}\n"
        for n, c in [(9, "name=systemd"), (4, "memory"), (3, "cpuset"), (2, "cpuacct"), (1, "cpu")]
    )
    + f"0::/docker/{V1_CONTAINER}\n",
    "proc/self/mountinfo": (
        "77 76 0:46 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - tmpfs tmpfs rw,mode=755\n"
        f"78 77 0:29 /docker/{V1_CONTAINER} /sys/fs/cgroup/cpu ro,nosuid,nodev,noexec,relatime"
        " - cgroup cgroup rw,cpu\n"
        f"79 77 0:30 /docker/{V1_CONTAINER} /sys/fs/cgroup/cpuacct ro,nosuid,nodev,noexec,relatime"
        " - cgroup cgroup rw,cpuacct\n"
        f"81 77 0:32 /docker/{V1_CONTAINER} /sys/fs/cgroup/memory ro,nosuid,nodev,noexec,relatime"
        " - cgroup cgroup rw,memory\n"
    ),
    "sys/fs/cgroup/cpu/cpu.cfs_quota_us": "100000\n",
    "sys/fs/cgroup/cpu/cpu.cfs_period_us": "100000\n",
    "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
}

# cgroup v2 with a private cgroup namespace (Docker's default on v2): `--cpus=1.5 -m 2g`.
V2_PRIVATE = {
    "proc/self/cgroup": "0::/\n",
    "proc/self/mountinfo": (
        "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n"
    ),
    "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
    "sys/fs/cgroup/cpu.max": "150000 100000\n",
    "sys/fs/cgroup/memory.max": "2147483648\n",
}

# cgroup v2, host namespace, limit on the parent slice only (systemd CPUQuota=200%).
V2_NESTED = {
    "proc/self/cgroup": "0::/system.slice/tfbuild.service\n",
    "proc/self/mountinfo": (
        "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n"
    ),
    "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
    "sys/fs/cgroup/system.slice/cpu.max": "200000 100000\n",
    "sys/fs/cgroup/system.slice/tfbuild.service/cpu.max": "max 100000\n",
    "sys/fs/cgroup/system.slice/tfbuild.service/memory.max": "max\n",
}

# cgroup v1 host without limits.
V1_UNLIMITED = {
    "proc/self/cgroup": "4:memory:/\n1:cpu,cpuacct:/\n0::/\n",
    "proc/self/mountinfo": (
        "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    ),
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
    "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
}


@pytest.mark.parametrize(
    ("files", "version", "quota", "memory"),
    [
        (V1_DOCKER, 1, 1.0, None),
        (V2_PRIVATE, 2, 1.5, 2 * 2**30),
        (V2_NESTED, 2, 2.0, None),
        (V1_UNLIMITED, 1, None, None),
    ],
    ids=["v1-docker-cpus1", "v2-private-cpus1.5", "v2-parent-slice", "v1-unlimited"],
)
def test_cgroup_limits(
    tmp_path: Path, files: Mapping[str, str], version: int, quota: float | None, memory: int | None
) -> None:
    root = make_tree(tmp_path, files)
    cgroup = cgroup_cpu_quota(root)
    assert cgroup is not None
    assert (cgroup.version, cgroup.quota_cpus) == (version, quota)
    assert cgroup_memory_limit(root) == memory


def test_quota_caps_usable_cpus_and_threads(tmp_path: Path) -> None:
    """The seed-001 trap: a container limited to one CPU must not plan for all of them."""
    root = make_tree(tmp_path, {"proc/cpuinfo": HASWELL, **sys_topology(SMT_2S), **V1_DOCKER})
    profile = detect_tree(root, affinity=tuple(range(16)))
    assert profile.topology.usable_cpus == 1
    assert profile.topology.usable_physical_cores == 1
    assert profile.recommendations.threads.intra_op == 1
    # a fractional quota rounds up, as the JVM does
    root2 = make_tree(
        tmp_path / "b", {"proc/cpuinfo": HASWELL, **sys_topology(SMT_2S), **V2_PRIVATE}
    )
    assert detect_tree(root2, affinity=tuple(range(16))).topology.usable_cpus == 2


def test_cpulist_format() -> None:
    assert parse_cpulist("0-3,8,10-11\n") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("0\n") == [0]


def fake_nvidia_smi(outputs: list[tuple[int, str]]) -> Runner:
    calls = iter(outputs)

    def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
        code, text = next(calls)
        return subprocess.CompletedProcess(argv, code, stdout=text, stderr="")

    return run


def test_gpus_from_nvidia_smi() -> None:
    """No GPU exists on the machines tfbuild is tested on, so nvidia-smi's output is scripted."""
    run = fake_nvidia_smi(
        [
            (
                0,
                "0, NVIDIA H100 80GB HBM3, 9.0, 550.54.15, 81559\n"
                "1, NVIDIA L4, 8.9, 550.54.15, 23034\n",
            )
        ]
    )
    gpus = detect_gpus(run=run, which=lambda _: "/usr/bin/nvidia-smi")
    assert [
        (g.name, g.compute_capability, g.driver_version, g.memory_mib) for g in gpus.devices
    ] == [
        ("NVIDIA H100 80GB HBM3", "9.0", "550.54.15", 81559),
        ("NVIDIA L4", "8.9", "550.54.15", 23034),
    ]


def test_gpus_on_old_driver_without_compute_cap() -> None:
    """Scripted nvidia-smi (no GPU here): drivers before 510 reject the compute_cap field."""
    run = fake_nvidia_smi(
        [
            (2, 'Field "compute_cap" is not a valid field to query.\n'),
            (0, "0, Tesla V100-SXM2-16GB, 470.82.01, 16160\n"),
        ]
    )
    gpus = detect_gpus(run=run, which=lambda _: "/usr/bin/nvidia-smi")
    assert gpus.devices[0].compute_capability is None
    assert gpus.devices[0].driver_version == "470.82.01"


def test_no_nvidia_smi_means_no_gpus_not_an_error() -> None:
    gpus = detect_gpus(which=lambda _: None)
    assert gpus == GpuInfo(nvidia_smi=None)


def test_broken_driver_reported() -> None:
    """Scripted nvidia-smi (no GPU here): a driver/library mismatch is reported, not raised."""
    run = fake_nvidia_smi([(9, "NVIDIA-SMI has failed because it couldn't communicate\n")])
    gpus = detect_gpus(run=run, which=lambda _: "/usr/bin/nvidia-smi")
    assert gpus.devices == () and gpus.error is not None and "failed" in gpus.error


def real_qemu() -> str:
    path = shutil.which("qemu-x86_64") or shutil.which("qemu-x86_64-static")
    require(path is not None, "qemu-user is not installed (apt-get install qemu-user)")
    assert path is not None
    return path


QEMU_VERSION = re.compile(r"qemu-x86_64 version \d+\.\d+\.\d+")


def test_qemu_detected_when_installed() -> None:
    """On this machine: found on PATH, and its version is the one the binary prints."""
    path = real_qemu()
    qemu = detect_qemu()
    assert qemu.available and qemu.path is not None
    assert Path(qemu.path).resolve() == Path(path).resolve()
    assert qemu.version is not None and QEMU_VERSION.match(qemu.version), qemu.version


@pytest.mark.parametrize("name", ["qemu-x86_64", "qemu-x86_64-static"])
def test_qemu_found_under_either_name(name: str) -> None:
    """Debian's qemu-user names it qemu-x86_64, qemu-user-static (and other distributions)
    qemu-x86_64-static: either alone is found, and run for its version (the real binary
    under the one name this PATH is given)."""
    path = real_qemu()
    qemu = detect_qemu(which=lambda wanted: path if wanted == name else None)
    assert qemu.available and qemu.path == path
    assert qemu.version is not None and QEMU_VERSION.match(qemu.version), qemu.version


def test_no_qemu_means_unavailable() -> None:
    assert detect_qemu(which=lambda _: None) == QemuInfo(available=False)


def test_live_profile_is_consistent_and_valid() -> None:
    profile = detect()
    t = profile.topology
    assert t.affinity is not None and t.usable_cpus is not None
    assert 1 <= t.usable_cpus <= t.logical_cpus
    assert 1 <= t.physical_cores <= t.logical_cpus
    assert profile.system is not None and profile.system.python.startswith("3.")
    document = profile.to_json()
    schema = json.loads(data_path("schemas/host.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(document)
