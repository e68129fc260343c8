"""archspec asked about real CPUs: the Linux x86-64 /proc/cpuinfo dumps archspec ships as its own
test data (installed with it, under archspec/json/tests/targets, each named after the target
archspec must name it), read by tfbuild's parser. tfbuild names each the target archspec names
it, chooses a -march whose every extension the CPU has, and answers as its own table did before
it asked archspec, or more safely, or with a name that table did not have."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import archspec
import pytest
from support.env import FIXTURES

from tfbuild.machine import cpu, uarch
from tfbuild.machine.detect import profile_from_cpuinfo

DUMPS = Path(archspec.__file__).parent / "json" / "tests" / "targets"
BEFORE = json.loads((FIXTURES / "cpuinfo" / "archspec-dumps-before.json").read_text())


def linux_x86_64_dumps() -> list[str]:
    return sorted(
        p.name
        for p in DUMPS.glob("linux-*")
        if any(line.startswith("vendor_id") for line in p.read_text().splitlines())
    )


def test_archspec_ships_the_dumps_the_answers_were_recorded_for() -> None:
    """Every dump whose answer was recorded is still there (20 in archspec 0.2.7), so the
    comparison below cannot pass by comparing nothing."""
    assert set(BEFORE["answers"]) <= set(linux_x86_64_dumps())
    assert len(BEFORE["answers"]) == 20


@pytest.mark.parametrize("dump", linux_x86_64_dumps())
def test_each_dump_is_the_target_archspec_names_it(dump: str) -> None:
    """The target tfbuild reads from the dump is the one archspec's test data names it
    (linux-rhel7-x86_64_v3: a Haswell whose hypervisor hides a feature, x86_64_v3)."""
    info = cpu.parse_cpuinfo((DUMPS / dump).read_text())
    assert uarch.best(info.vendor_id, info.flags).name == dump.split("-", 2)[2]


@pytest.mark.parametrize("dump", sorted(BEFORE["answers"]))
def test_each_answer_is_safe_and_the_same_or_safer_than_before(dump: str) -> None:
    """The -march chosen is one whose every extension a compiler may emit the CPU has; it is the
    one tfbuild's own table chose, or one whose build needs no more than that one's did (the
    Haswell with a hidden feature is now x86-64-v3), or a target the old table had no name for
    (AMD before Zen, Zen 6, Arrow Lake), where the old answer was a generic level or an older
    CPU of the same vendor."""
    info = cpu.parse_cpuinfo((DUMPS / dump).read_text())
    choice = cpu.closest_march(info.vendor_id, info.flags)
    assert choice is not None
    needs = cpu.marches()[choice.name].flags
    assert needs <= info.flags, sorted(needs - info.flags)
    before = BEFORE["answers"][dump]
    if choice.name != before["march"]:
        older = set(before["emits"])
        if not needs <= older:  # not safer: a CPU the old table could only call something older
            assert choice.name not in BEFORE["names"] and older <= needs, (choice.name, before)
    assert f"archspec {uarch.VERSION}" in choice.reason


def test_the_changed_answers_are_the_ones_named() -> None:
    """Which answers changed, and to what: one safer, six CPUs the old table had no name for."""
    changed = {}
    for dump, before in BEFORE["answers"].items():
        info = cpu.parse_cpuinfo((DUMPS / dump).read_text())
        choice = cpu.closest_march(info.vendor_id, info.flags)
        assert choice is not None
        if choice.name != before["march"]:
            changed[dump] = (before["march"], choice.name)
    assert changed == {
        "linux-rhel7-x86_64_v3": ("haswell", "x86-64-v3"),
        "linux-rhel6-piledriver": ("x86-64-v2", "bdver2"),
        "linux-scientific7-piledriver": ("x86-64-v2", "bdver2"),
        "linux-scientificfermi6-piledriver": ("x86-64-v2", "bdver2"),
        "linux-scientificfermi6-bulldozer": ("x86-64-v2", "bdver1"),
        "linux-scientific7-k10": ("x86-64", "amdfam10"),
        "linux-rocky9-zen6": ("znver5", "znver6"),
        "linux-ubuntu26.04-arrowlake_s": ("alderlake", "arrowlake-s"),
    }


def test_compiler_releases_are_archspecs() -> None:
    """The releases a -march needs are archspec's: Zen 3 from GCC 10.3 (tfbuild's table said
    11), Zen 4 by its own name from GCC 12.3, the generic levels from GCC 11.1; and `tfbuild
    detect` on a Zen 3 says so, naming archspec's version."""
    table = cpu.marches()
    assert (table["znver3"].gcc, table["znver3"].clang) == ("10.3", "12.0")
    assert (table["znver4"].gcc, table["znver4"].archspec) == ("12.3", "zen4")
    assert table["x86-64-v3"].gcc == "11.1" and table["x86-64-v3"].vendor == "any"
    zen3 = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "zen3-ryzen9-5950x.cpuinfo")
    notes = " ".join(zen3.recommendations.notes)
    assert f"-march=znver3 needs GCC >= 10.3 or Clang >= 12.0 (archspec {uarch.VERSION})" in notes
    detect = [sys.executable, "-m", "tfbuild", "detect", "--cpuinfo",
              str(FIXTURES / "cpuinfo" / "zen3-ryzen9-5950x.cpuinfo")]  # fmt: skip
    said = " ".join(
        subprocess.run(detect, capture_output=True, text=True, check=True).stdout.split()
    )
    assert "needs GCC >= 10.3 or Clang >= 12.0" in said, said


def test_the_levels_are_archspecs_generic_targets() -> None:
    """x86-64-v2..v4 are archspec's generic targets over tfbuild's baseline: v3 adds AVX2, FMA,
    BMI, MOVBE, XSAVE and LZCNT (cpuinfo's abm) to v2, as the psABI says."""
    v1, v2, v3, v4 = cpu.level_flags()
    assert v3 - v2 == {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
    assert v4 - v3 == {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
    assert "pni" in v2 and "sse3" not in v2  # in /proc/cpuinfo's spelling
    assert uarch.level_features(1) == frozenset() and v1 == frozenset(cpu._table()["baseline"])


def test_a_cpu_lacking_what_gcc_emits_for_its_target_gets_the_most_capable_ancestor() -> None:
    """An EPYC 9654 whose hypervisor hides SHA: archspec still names it zen4 (SHA is not among
    its features), but GCC's -march=znver4 may emit SHA, so the choice is the most capable
    target zen4 descends from that the CPU runs, x86-64-v4 (every Zen has SHA for GCC), and
    the reason says so; a generic level comes before an older named CPU in that order."""
    info = cpu.parse_cpuinfo((FIXTURES / "cpuinfo" / "zen4-epyc-9654.cpuinfo").read_text())
    hidden = info.flags - {"sha_ni"}
    assert uarch.best(info.vendor_id, hidden).name == "zen4"
    choice = cpu.closest_march(info.vendor_id, hidden)
    assert choice is not None and choice.name == "x86-64-v4"
    assert "names this CPU zen4, but GCC's -march=znver4 may emit SHA_NI" in choice.reason
    assert cpu.marches()[choice.name].flags <= hidden
    lineage = uarch.targets()["arrowlake-s"].lineage
    assert lineage.index("x86-64-v3") < lineage.index("nehalem")
