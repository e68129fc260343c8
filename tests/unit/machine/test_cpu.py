"""CPU facts from real /proc/cpuinfo dumps (tests/fixtures/cpuinfo, sources in SOURCES.md)."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.env import FIXTURES

from tfbuild.errors import HostProfileError
from tfbuild.machine import cpu
from tfbuild.machine.detect import profile_from_cpuinfo

CPUINFO = FIXTURES / "cpuinfo"
SSE = ["sse3", "ssse3", "sse4_1", "sse4_2", "popcnt"]
AVX2 = [*SSE, "avx", "avx2", "fma", "f16c"]
AVX512 = [*AVX2, "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"]


@dataclass(frozen=True)
class Expect:
    vendor: str
    level: int
    march: str
    present: list[str]
    logical: int
    physical: int
    sockets: int


EXPECTED = {
    "penryn-core2-duo-t9600": Expect(
        "GenuineIntel", 1, "core2", ["sse3", "ssse3", "sse4_1"], 2, 2, 1
    ),
    "nehalem-xeon-x3430": Expect("GenuineIntel", 2, "nehalem", SSE, 4, 4, 1),
    "haswell-xeon-e5-2680v3": Expect("GenuineIntel", 3, "haswell", AVX2, 24, 24, 2),
    "broadwell-xeon-e5-2690v4": Expect("GenuineIntel", 3, "broadwell", AVX2, 28, 28, 2),
    "skylake-sp-xeon-gold-6132": Expect("GenuineIntel", 4, "skylake-avx512", AVX512, 28, 28, 2),
    "sapphirerapids-xeon-platinum-8488c": Expect(
        "GenuineIntel",
        4,
        "sapphirerapids",
        [*AVX512, "avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"],
        16,
        8,
        1,
    ),
    "zen3-ryzen9-5950x": Expect("AuthenticAMD", 3, "znver3", AVX2, 32, 16, 1),
    "zen4-epyc-9654": Expect(
        "AuthenticAMD", 4, "znver4", [*AVX512, "avx512_vnni", "avx512_bf16"], 96, 96, 1
    ),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_profile_from_saved_cpuinfo(name: str) -> None:
    expect = EXPECTED[name]
    profile = profile_from_cpuinfo(CPUINFO / f"{name}.cpuinfo")
    c, t = profile.cpu, profile.topology
    assert c.vendor_id == expect.vendor
    assert c.level == expect.level
    assert c.march is not None and c.march.name == expect.march
    assert [f for f, have in c.tf_flags.items() if have] == expect.present
    assert (t.logical_cpus, t.physical_cores, t.sockets) == (
        expect.logical,
        expect.physical,
        expect.sockets,
    )
    rec = profile.recommendations
    assert rec.copts == tuple(f"--copt={cpu.tf_flag_table()[f].copt}" for f in expect.present)
    # A saved cpuinfo is another machine: build tools must not get its flags.
    assert rec.host_copts == ("--host_copt=-mavx",)
    assert rec.march_copts[0] == f"--copt=-march={expect.march}"
    # ... in the -march form too: a build machine without AVX2 runs the tools bazel builds
    assert rec.march_copts[1] == "--host_copt=-mavx"
    assert rec.threads.intra_op == expect.physical
    assert rec.threads.inter_op == expect.sockets
    # Planning for another machine knows nothing of this one.
    assert t.affinity is None and profile.memory is None and profile.gpus is None


def test_haswell_copts_spelled_out() -> None:
    rec = profile_from_cpuinfo(CPUINFO / "haswell-xeon-e5-2680v3.cpuinfo").recommendations
    assert " ".join(rec.copts) == (
        "--copt=-msse3 --copt=-mssse3 --copt=-msse4.1 --copt=-msse4.2 --copt=-mpopcnt "
        "--copt=-mavx --copt=-mavx2 --copt=-mfma --copt=-mf16c"
    )


def test_onednn_default_follows_port_cc() -> None:
    on = {
        name: profile_from_cpuinfo(CPUINFO / f"{name}.cpuinfo").recommendations for name in EXPECTED
    }
    assert {n for n, r in on.items() if r.onednn_default_on} == {
        "sapphirerapids-xeon-platinum-8488c",
        "zen4-epyc-9654",
    }


def test_vm_hiding_a_flag_gets_an_older_safe_name() -> None:
    """A hypervisor that hides FMA makes haswell unsafe; the choice must fall back, not lie."""
    flags = set(cpu.marches()["skylake-avx512"].flags) - {"fma"}
    choice = cpu.closest_march("GenuineIntel", flags)
    assert choice is not None
    assert "fma" not in cpu.marches()[choice.name].flags
    assert cpu.marches()[choice.name].flags <= flags


def test_hidden_identify_flag_keeps_parent_name() -> None:
    flags = set(cpu.marches()["skylake"].flags)
    assert cpu.closest_march("GenuineIntel", flags).name == "broadwell"  # type: ignore[union-attr]
    flags |= {"clflushopt", "xsavec"}
    assert cpu.closest_march("GenuineIntel", flags).name == "skylake"  # type: ignore[union-attr]


def test_unknown_vendor_gets_generic_level() -> None:
    flags = cpu.marches()["x86-64-v3"].flags
    choice = cpu.closest_march("CentaurHauls", flags)
    assert choice is not None and choice.name == "x86-64-v3"
    assert "CentaurHauls" in choice.reason


def test_levels_follow_psabi_definition() -> None:
    v1 = cpu.level_flags()[0]
    assert cpu.isa_level(v1) == 1
    assert cpu.isa_level(v1 - {"sse2"}) == 0
    v3 = cpu.level_flags()[2]
    assert cpu.isa_level(v3) == 3
    # x86-64-v3 needs MOVBE and LZCNT as well as AVX2/FMA: missing one drops to v2.
    assert cpu.isa_level(v3 - {"movbe"}) == 2
    assert cpu.isa_level(v3 - {"abm"}) == 2
    assert cpu.isa_level(cpu.level_flags()[3] - {"avx512vl"}) == 3


def test_not_x86_cpuinfo_is_refused(tmp_path: Path) -> None:
    arm = tmp_path / "arm.cpuinfo"
    arm.write_text(
        "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\n"
    )
    with pytest.raises(HostProfileError, match="ARM"):
        profile_from_cpuinfo(arm)
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\n")
    with pytest.raises(HostProfileError, match="not /proc/cpuinfo"):
        profile_from_cpuinfo(junk)


# Codegen-relevant GCC options, as /proc/cpuinfo names.
GCC_TO_CPUINFO = {
    "sse3": "pni",
    "ssse3": "ssse3",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "popcnt": "popcnt",
    "avx": "avx",
    "avx2": "avx2",
    "fma": "fma",
    "f16c": "f16c",
    "bmi": "bmi1",
    "bmi2": "bmi2",
    "lzcnt": "abm",
    "movbe": "movbe",
    "cx16": "cx16",
    "sahf": "lahf_lm",
    "adx": "adx",
    "aes": "aes",
    "pclmul": "pclmulqdq",
    "sha": "sha_ni",
    "sse4a": "sse4a",
    "xsave": "xsave",
    "avx512f": "avx512f",
    "avx512cd": "avx512cd",
    "avx512bw": "avx512bw",
    "avx512dq": "avx512dq",
    "avx512vl": "avx512vl",
    "avx512ifma": "avx512ifma",
    "avx512vbmi": "avx512vbmi",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512vnni": "avx512_vnni",
    "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512bf16": "avx512_bf16",
    "avx512fp16": "avx512_fp16",
    "avx512vp2intersect": "avx512_vp2intersect",
    "avxvnni": "avx_vnni",
    "gfni": "gfni",
    "vaes": "vaes",
    "vpclmulqdq": "vpclmulqdq",
    "amx-tile": "amx_tile",
    "amx-int8": "amx_int8",
    "amx-bf16": "amx_bf16",
}
# GCC before 14 lists AVX512VP2INTERSECT for sapphirerapids, which those CPUs do not have;
# compilers reach it only through intrinsics, so the table leaves it out.
GCC_KNOWN_EXTRA = {("sapphirerapids", "avx512_vp2intersect")}


def test_march_table_matches_gcc() -> None:
    """Every -march name's extension set equals what the system GCC enables for it.

    Names this GCC does not know (znver4/znver5 need GCC 13/14) are left out; at least the
    other 21 must be compared, so the test cannot pass by comparing nothing.
    """
    gcc = shutil.which("gcc")
    assert gcc is not None, "gcc is needed to check the -march table"
    compared = 0
    for name, march in cpu.marches().items():
        proc = subprocess.run(
            [gcc, f"-march={name}", "-Q", "--help=target"],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0 and "bad value" in proc.stderr:
            continue
        enabled = {
            GCC_TO_CPUINFO[m.group(1)]
            for m in re.finditer(r"^\s+-m(\S+)\s+\[enabled\]", proc.stdout, re.MULTILINE)
            if m.group(1) in GCC_TO_CPUINFO
        }
        ours = march.flags & set(GCC_TO_CPUINFO.values())
        extra = {(name, f) for f in enabled - ours}
        assert extra <= GCC_KNOWN_EXTRA, f"{name}: GCC also enables {sorted(enabled - ours)}"
        assert ours <= enabled, f"{name}: table requires {sorted(ours - enabled)} beyond GCC"
        compared += 1
    assert compared >= 21


def test_a_cpu_model_orders_cpus_by_the_code_they_run() -> None:
    """The partial order "runs all code built for": Haswell's code runs on Skylake-SP, not the
    reverse; Zen 3 and Skylake-SP each lack something of the other; every named -march is
    its own closest -march, with the vendor it belongs to."""
    haswell, skx = cpu.CpuModel.named("haswell"), cpu.CpuModel.named("skylake-avx512")
    zen3 = cpu.CpuModel.named("znver3")
    assert haswell <= skx and not skx <= haswell
    assert not zen3 <= skx and not skx <= zen3
    assert haswell.level_name == "x86-64-v3" and skx.level == 4
    assert skx.lacks(haswell.flags) == [] and skx.runs(haswell.flags)
    assert haswell.lacks(["avx512f", "avx2", "zzz"]) == ["avx512f", "zzz"]
    assert haswell.widest == "AVX2" and skx.widest == "AVX512F"
    for name in cpu.marches():
        model = cpu.CpuModel.named(name)
        choice = model.march
        assert choice is not None and choice.name == name, (name, choice)
    assert zen3.vendor_id == "AuthenticAMD" and haswell.vendor_id == "GenuineIntel"


def test_a_cpu_model_from_matrix_names_and_from_a_host() -> None:
    """matrix.yaml's names (with what they imply) at one edge, a host's /proc/cpuinfo at the
    other: the same model either way."""
    wanted = cpu.CpuModel.from_tf_names("avx2 build", ["avx2", "fma"])
    assert {"avx2", "avx", "fma", "sse4_2"} <= wanted.flags
    host = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo").cpu.isa
    assert wanted <= host and host.runs(wanted.flags)
    assert host.march is not None and host.march.name == "haswell"
    assert host.tf_flags()["avx2"] is True and host.tf_flags()["avx512f"] is False
    assert not host <= cpu.CpuModel.named("sandybridge")
