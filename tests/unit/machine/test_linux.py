"""Reading a Linux machine under a root folder: the kernel's CPU lists, core and package ids
from sysfs or from /proc/cpuinfo (full dumps and trimmed ones), the tightest cgroup CPU and
memory limit on the way up from this process's cgroup, the counts of cores and sockets a
process may use, memory, the OS name and glibc. Every tree is written into tmp_path, or is a
saved /proc/cpuinfo of a real CPU."""

from __future__ import annotations

import platform
from collections.abc import Mapping
from pathlib import Path

import pytest
from support.env import FIXTURES

from tfbuild.machine.cpu import parse_cpuinfo
from tfbuild.machine.linux import (
    build_topology,
    cgroup_cpu_quota,
    cgroup_memory_limit,
    cpuinfo_topology,
    glibc_version,
    meminfo,
    os_name,
    parse_cpulist,
    read_text,
    sysfs_topology,
)
from tfbuild.machine.profile import CgroupCpu

CPUINFO = FIXTURES / "cpuinfo"


def tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def cpu_files(layout: Mapping[int, tuple[int, int]], online: str) -> dict[str, str]:
    """/sys/devices/system/cpu for logical cpu -> (package, core), with this online list."""
    files = {"online": online}
    for n, (package, core) in layout.items():
        files[f"cpu{n}/topology/physical_package_id"] = f"{package}\n"
        files[f"cpu{n}/topology/core_id"] = f"{core}\n"
    return files


def test_cpu_lists_of_single_cpus_ranges_and_nothing() -> None:
    assert parse_cpulist("2-2,5,7-9\n") == [2, 5, 7, 8, 9]
    assert parse_cpulist("0-1,\n") == [0, 1]
    assert parse_cpulist("\n") == []


def test_unreadable_files_read_as_none_and_bad_bytes_as_replacement_characters(
    tmp_path: Path,
) -> None:
    assert read_text(tmp_path / "missing") is None
    assert read_text(tmp_path) is None  # a folder
    (tmp_path / "name").write_bytes(b"Xeon\xff\n")
    assert read_text(tmp_path / "name") == "Xeon\ufffd\n"


def test_sysfs_topology_of_the_online_cpus(tmp_path: Path) -> None:
    """Offline CPUs have no topology folder: only the online ones are read."""
    layout = {0: (0, 0), 1: (0, 1), 2: (1, 0), 3: (1, 1)}
    sys_cpu = tree(tmp_path, cpu_files(layout, "0-3\n"))
    assert sysfs_topology(sys_cpu) == layout
    online_two = tree(tmp_path / "two", cpu_files({0: (0, 0), 2: (1, 0)}, "0,2\n"))
    assert sysfs_topology(online_two) == {0: (0, 0), 2: (1, 0)}


def test_sysfs_topology_is_none_when_absent_or_incomplete(tmp_path: Path) -> None:
    """A CPU listed online without its ids (some hypervisors, a partial copy) makes the whole
    answer unknown rather than partly right."""
    assert sysfs_topology(tmp_path / "nothing") is None
    files = cpu_files({0: (0, 0), 1: (0, 1)}, "0-1\n")
    del files["cpu1/topology/core_id"]
    assert sysfs_topology(tree(tmp_path / "partial", files)) is None
    assert sysfs_topology(tree(tmp_path / "none-online", {"online": "\n"})) is None


def test_a_full_cpuinfo_dump_gives_each_cpus_package_and_core() -> None:
    """The Ryzen 9 5950X: 32 blocks, 16 cores of one package, cpu n and n+16 on one core."""
    info = parse_cpuinfo((CPUINFO / "zen3-ryzen9-5950x.cpuinfo").read_text())
    found = cpuinfo_topology(info)
    assert found is not None
    placement, source = found
    assert source == "cpuinfo"
    assert len(placement) == 32 and len(set(placement.values())) == 16
    assert placement[3] == placement[19] == (0, 3)
    penryn = cpuinfo_topology(
        parse_cpuinfo((CPUINFO / "penryn-core2-duo-t9600.cpuinfo").read_text())
    )
    assert penryn == ({0: (0, 0), 1: (0, 1)}, "cpuinfo")


def test_a_trimmed_cpuinfo_dump_is_rebuilt_from_siblings_and_cpu_cores() -> None:
    """One block kept of an EPYC 9654 (96 siblings, 96 cores: no SMT) and of an AWS Sapphire
    Rapids guest (16 siblings, 8 cores: two threads a core, numbered core by core, then again)."""
    epyc = cpuinfo_topology(parse_cpuinfo((CPUINFO / "zen4-epyc-9654.cpuinfo").read_text()))
    assert epyc == ({n: (0, n) for n in range(96)}, "cpuinfo (siblings, cpu cores)")
    spr_text = (CPUINFO / "sapphirerapids-xeon-platinum-8488c.cpuinfo").read_text()
    spr = cpuinfo_topology(parse_cpuinfo(spr_text))
    assert spr == ({n: (0, n % 8) for n in range(16)}, "cpuinfo (siblings, cpu cores)")


def test_cpuinfo_without_ids_or_counts_gives_no_topology() -> None:
    """The Xeon X3430 guest dump states neither core ids nor siblings."""
    info = parse_cpuinfo((CPUINFO / "nehalem-xeon-x3430.cpuinfo").read_text())
    assert len(info.processors) == 4
    assert cpuinfo_topology(info) is None


V2_MOUNT = "30 25 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"


@pytest.mark.parametrize(
    ("inner", "outer", "quota"),
    [("50000 100000\n", "300000 100000\n", 0.5), ("max 100000\n", "150000 100000\n", 1.5),
     ("max 100000\n", "max 100000\n", None)],
    ids=["inner-tighter", "outer-only", "unlimited"],
)  # fmt: skip
def test_v2_cpu_limits_of_the_cgroup_and_its_parents(
    tmp_path: Path, inner: str, outer: str, quota: float | None
) -> None:
    """The tightest limit on the way from the process's cgroup up to the mount, whichever
    level sets it; the path named is the process's own cgroup."""
    root = tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/app.slice/job.service\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
            "sys/fs/cgroup/app.slice/cpu.max": outer,
            "sys/fs/cgroup/app.slice/job.service/cpu.max": inner,
        },
    )
    own = root / "sys/fs/cgroup/app.slice/job.service"
    assert cgroup_cpu_quota(root) == CgroupCpu(2, quota, str(own))


def test_a_v1_cpu_quota_on_a_combined_cpu_cpuacct_mount(tmp_path: Path) -> None:
    """cgroup v1 hosts mount cpu and cpuacct together; `--cpus=2.5` is 250000 of 100000 us."""
    root = tree(
        tmp_path,
        {
            "proc/self/cgroup": "5:memory:/\n3:cpu,cpuacct:/\n0::/\n",
            "proc/self/mountinfo": (
                "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
            ),
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "250000\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        },
    )
    cgroup = cgroup_cpu_quota(root)
    assert cgroup is not None and (cgroup.version, cgroup.quota_cpus) == (1, 2.5)
    assert cgroup_memory_limit(root) is None  # no memory hierarchy is mounted


def test_a_cgroup_folder_that_is_not_there_reads_the_mount_top(tmp_path: Path) -> None:
    """A cgroup path from the host's namespace that this mount does not show: the limits
    at the top of the mount are the ones that hold."""
    root = tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/gone.slice/x.scope\n",
            "proc/self/mountinfo": V2_MOUNT,
            "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
            "sys/fs/cgroup/cpu.max": "200000 100000\n",
            "sys/fs/cgroup/memory.max": "1073741824\n",
        },
    )
    assert cgroup_cpu_quota(root) == CgroupCpu(2, 2.0, str(root / "sys/fs/cgroup"))
    assert cgroup_memory_limit(root) == 2**30


def test_a_mount_point_with_a_space_is_found(tmp_path: Path) -> None:
    """mountinfo writes a space in a path as \\040."""
    root = tree(
        tmp_path,
        {
            "proc/self/cgroup": "0::/\n",
            "proc/self/mountinfo": "30 25 0:26 / /run/my\\040cgroup rw - cgroup2 cgroup2 rw\n",
            "run/my cgroup/cgroup.controllers": "cpu\n",
            "run/my cgroup/cpu.max": "100000 100000\n",
        },
    )
    assert cgroup_cpu_quota(root) == CgroupCpu(2, 1.0, str(root / "run/my cgroup"))


def test_no_cgroup_information_means_no_limit_known(tmp_path: Path) -> None:
    """No /proc/self files, or a cgroup2 mount with no controllers (an empty hierarchy on a
    hybrid host): no cgroup, not a guessed one."""
    assert cgroup_cpu_quota(tmp_path) is None
    assert cgroup_memory_limit(tmp_path) is None
    empty = tree(
        tmp_path / "empty",
        {"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": V2_MOUNT, "sys/fs/cgroup/x": ""},
    )
    assert cgroup_cpu_quota(empty) is None


def test_the_tightest_v1_memory_limit_counts_and_unlimited_does_not(tmp_path: Path) -> None:
    """cgroup v1 says "no limit" with a page-rounded LONG_MAX; a parent's 4 GiB still holds."""
    root = tree(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/batch/job7\n",
            "proc/self/mountinfo": (
                "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
            ),
            "sys/fs/cgroup/memory/batch/memory.limit_in_bytes": f"{4 * 2**30}\n",
            "sys/fs/cgroup/memory/batch/job7/memory.limit_in_bytes": "9223372036854771712\n",
        },
    )
    assert cgroup_memory_limit(root) == 4 * 2**30


# Two sockets of two cores, two threads a core: cpu n and n+4 share a core.
SMT = {n: (n // 2 % 2, n % 2) for n in range(8)}


def test_topology_counts_cores_and_sockets_in_total_and_in_reach() -> None:
    """The affinity's CPU 99 is none of this machine's: ignored."""
    t = build_topology(SMT, 8, "sysfs", affinity=(2, 6, 99))
    assert (t.logical_cpus, t.physical_cores, t.sockets, t.source) == (8, 4, 2, "sysfs")
    assert (t.usable_physical_cores, t.sockets_in_use) == (1, 1)
    everywhere = build_topology(SMT, 8, "sysfs", affinity=tuple(range(8)))
    assert (everywhere.usable_physical_cores, everywhere.sockets_in_use) == (4, 2)


def test_a_cpu_quota_caps_the_usable_cores_rounding_up() -> None:
    quota = CgroupCpu(2, 1.5, "/sys/fs/cgroup")
    t = build_topology(SMT, 8, "sysfs", affinity=tuple(range(8)), cgroup=quota)
    assert t.usable_physical_cores == 2 and t.usable_cpus == 2 and t.cgroup == quota


def test_without_placement_every_logical_cpu_is_assumed_a_core() -> None:
    t = build_topology(None, 6, "cpuinfo")
    assert (t.logical_cpus, t.physical_cores, t.sockets, t.source) == (6, 6, 1, "assumed")
    assert t.usable_physical_cores is None and t.sockets_in_use is None


def test_an_affinity_outside_the_machine_says_nothing_usable() -> None:
    t = build_topology(SMT, 8, "sysfs", affinity=(40, 41))
    assert t.usable_physical_cores is None and t.sockets_in_use is None


def test_memory_in_bytes_from_meminfo(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {"proc/meminfo": "MemTotal:       16318484 kB\nMemFree:  812344 kB\n"
                         "MemAvailable:   9876544 kB\nHugePages_Total:       0\n"},
    )  # fmt: skip
    assert meminfo(root) == (16318484 * 1024, 9876544 * 1024)
    old = tree(tmp_path / "old", {"proc/meminfo": "MemTotal: 2048 kB\nMemFree: 1024 kB\n"})
    assert meminfo(old) == (2048 * 1024, None)  # kernels before 3.14 have no MemAvailable
    assert meminfo(tmp_path / "none") == (None, None)


def test_os_name_is_the_pretty_name_else_the_system(tmp_path: Path) -> None:
    root = tree(
        tmp_path,
        {"etc/os-release": 'NAME="Debian GNU/Linux"\nPRETTY_NAME="Debian GNU/Linux 12 '
                           '(bookworm)"\nID=debian\n'},
    )  # fmt: skip
    assert os_name(root) == "Debian GNU/Linux 12 (bookworm)"
    bare = tree(tmp_path / "bare", {"etc/os-release": "ID=alpine\nPRETTY_NAME=Alpine\n"})
    assert os_name(bare) == "Alpine"
    assert os_name(tmp_path / "none") == "Linux"


def test_glibc_version_is_the_c_library_this_python_runs_on() -> None:
    """Checked against what the platform module reads from the interpreter's own binary."""
    library, version = platform.libc_ver()
    assert library == "glibc", "tfbuild targets glibc Linux"
    assert glibc_version() == version
