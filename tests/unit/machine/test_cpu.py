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
    """A Skylake whose hypervisor hides CLFLUSHOPT (a feature that only tells a Skylake apart,
    which no build needs) is named Broadwell, as archspec names it."""
    flags = set(cpu.CpuModel.named("skylake").flags)
    assert cpu.closest_march("GenuineIntel", flags).name == "skylake"  # type: ignore[union-attr]
    flags -= {"clflushopt"}
    assert cpu.closest_march("GenuineIntel", flags).name == "broadwell"  # type: ignore[union-attr]


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
# archspec lists AES from Westmere on (those CPUs have it); GCC turns -maes on from Skylake.
ARCHSPEC_KNOWN_EXTRA = {
    (name, "aes")
    for name in ("westmere", "sandybridge", "ivybridge", "haswell", "broadwell", "knl")
}


def test_march_table_matches_gcc() -> None:
    """Every extension the system GCC enables for a -march name is one a build for it needs
    (archspec's features, or the table's emits_also where GCC goes beyond them): nothing a
    compiler may emit is missing. The table asks for more than GCC only where archspec knows the
    CPU has it.

    Names this GCC does not know (znver4 and later, arrowlake) are left out; at least 25 must be
    compared, so the test cannot pass by comparing nothing.
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
        surplus = {(name, f) for f in ours - enabled}
        assert surplus <= ARCHSPEC_KNOWN_EXTRA, f"{name}: requires {sorted(ours - enabled)}"
        compared += 1
    assert compared >= 25


EXTRA_NAMED = {"icelake-server": "icelake-client", "cooperlake": "cascadelake"}
"""The -march names archspec has no target for, and the target archspec names such a CPU."""


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
    for name, march in cpu.marches().items():  # archspec's; the extra names are their parents'
        choice = cpu.CpuModel.named(name).march
        assert choice is not None and choice.name == (
            name if march.archspec else EXTRA_NAMED[name]
        ), (name, choice)
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


def test_a_build_from_matrix_names_asks_for_them_and_needs_what_they_imply() -> None:
    """Haswell's TensorFlow extensions (AVX2, FMA, F16C) as matrix.yaml names them: the build
    asks for those three (its -m options, in the table's order whatever the order written) and
    needs AVX and SSE4.2 under them; a name written twice, or one another implies, keeps its own
    -m option, as the copts string always had it."""
    build = cpu.CpuModel.from_tf_names("haswell's extensions", ["f16c", "fma", "avx2"])
    assert build.asked == ("avx2", "fma", "f16c")
    assert build.copts() == ("-mavx2", "-mfma", "-mf16c")
    assert build.flags == cpu.level_flags()[0] | {
        "avx2", "fma", "f16c", "avx", "sse4_2", "sse4_1", "ssse3", "pni", "popcnt"
    }  # fmt: skip
    assert build.flags == cpu.cpuinfo_flags_for(["avx2", "fma", "f16c"]) | cpu.level_flags()[0]
    assert build.beyond_baseline == cpu.cpuinfo_flags_for(["avx2", "fma", "f16c"])
    redundant = cpu.CpuModel.from_tf_names("redundant", ["avx", "avx2", "sse4_2", "fma", "avx2"])
    assert redundant.copts() == ("-msse4.2", "-mavx", "-mavx2", "-mfma")
    assert cpu.CpuModel.asking("sse3", ["pni"]).copts() == ("-msse3",)
    # what haswell has beyond them is what -march=haswell adds: bit manipulation, MOVBE...
    haswell = cpu.CpuModel.built_for("haswell")
    assert build <= haswell and not haswell <= build
    assert haswell.lacks(build.flags) == []
    assert build.lacks(haswell.flags) == [
        "abm", "aes", "bmi1", "bmi2", "cx16", "lahf_lm", "movbe", "pclmulqdq", "xsave"
    ]  # fmt: skip


def test_a_build_for_a_march_needs_what_the_compiler_may_emit_not_what_tells_it_apart() -> None:
    """-march=skylake lets the compiler emit Broadwell's and AES, not CLFLUSHOPT or XSAVEC
    (which only tell a Skylake apart): a build for it needs the former; the CPU it names has
    both. For every -march the build runs on the CPU it names."""
    built, named = cpu.CpuModel.built_for("skylake"), cpu.CpuModel.named("skylake")
    assert built.flags == cpu.marches()["skylake"].flags
    assert {"clflushopt", "xsavec"} <= named.flags - built.flags
    assert "aes" in built.flags and built.level == 3 and built.vendor_id == "GenuineIntel"
    assert built.copts() == () and built.asked == ()
    for name in cpu.marches():
        assert cpu.CpuModel.built_for(name) <= cpu.CpuModel.named(name), name


def test_a_build_from_compiler_options_takes_the_extensions_they_turn_on() -> None:
    """-mavx2 among a variant's copts is a build for AVX2; -O3, -mtune and -march add none."""
    build = cpu.CpuModel.from_copts("copts", ["-O3", "-mavx2", "-mtune=haswell", "-march=znver4"])
    assert build.asked == ("avx2",)
    assert build == cpu.CpuModel.from_tf_names("copts", ["avx2"])
    assert cpu.CpuModel.from_copts("none", ["-O3"]).flags == cpu.level_flags()[0]


def test_builds_join_to_the_least_cpu_that_runs_both() -> None:
    """`a | b` runs the code of each (and no CPU below it does); what each asks for stays asked,
    in the table's order: AMX's -m option after AVX's however they were joined."""
    amx = cpu.CpuModel.from_tf_names("amx", ["amx_tile"])
    avx = cpu.CpuModel.from_tf_names("floor", ["avx"])
    both = amx | avx
    assert amx <= both and avx <= both and both.flags == amx.flags | avx.flags
    assert both.name == "amx" and both.copts() == ("-mavx", "-mamx-tile")
    assert (avx | amx).copts() == both.copts()
    assert (amx | cpu.CpuModel.built_for("haswell")).vendor_id == "GenuineIntel"


def test_a_native_build_takes_what_the_host_has_that_a_compiler_emits() -> None:
    """-march=native on a Haswell Xeon: every TensorFlow extension and every flag some -march
    may emit that the host has (-march=haswell's and AES); none of its system flags."""
    host = profile_from_cpuinfo(CPUINFO / "haswell-xeon-e5-2680v3.cpuinfo").cpu.isa
    native = host.native()
    assert native <= host and native.tf_flags() == host.tf_flags()
    assert native.flags == cpu.CpuModel.built_for("haswell").flags | {"aes"}
    assert not {"tsc", "vmx", "ht"} & native.flags and {"tsc", "ht"} <= host.flags
    every_tf = cpu.CpuModel.from_tf_names("every", list(cpu.tf_flag_table()))
    assert every_tf.native().flags == every_tf.flags


def test_a_distribution_floor_is_its_extensions_beyond_the_baseline() -> None:
    """What the package index's wheels are declared to need, as the plan lists it: their
    extensions with what they imply, no baseline flag among them."""
    avx512 = cpu.CpuModel.from_tf_names("intel-tensorflow-avx512", ["avx512f", "avx512vl"])
    assert avx512.beyond_baseline == {
        "avx512f", "avx512vl", "avx2", "fma", "f16c", "avx", "sse4_2", "sse4_1", "ssse3", "pni",
        "popcnt",
    }  # fmt: skip
    assert not cpu.level_flags()[0] & avx512.beyond_baseline
