"""The host's theoretical FP32 peak for real CPUs (saved /proc/cpuinfo files): cores x base
clock x SIMD lanes (16 with AVX-512, 8 with AVX, 4 with SSE) x FMA units x 2 flops, the
clock from the model name before the one /proc/cpuinfo reported, the cores those a config
may use, and none when no clock is known."""

from __future__ import annotations

import dataclasses

import pytest
from support.env import FIXTURES

from tfbuild.machine.cpu import CpuModel
from tfbuild.machine.detect import profile_from_cpuinfo, profile_from_cpuinfo_text
from tfbuild.machine.peak import fp32_peak, nominal_ghz
from tfbuild.machine.profile import HostProfile

CPUINFO = FIXTURES / "cpuinfo"
SKYLAKE = profile_from_cpuinfo(CPUINFO / "skylake-sp-xeon-gold-6132.cpuinfo")
ZEN4 = profile_from_cpuinfo(CPUINFO / "zen4-epyc-9654.cpuinfo")
HASWELL = profile_from_cpuinfo(CPUINFO / "haswell-xeon-e5-2680v3.cpuinfo")
NEHALEM = profile_from_cpuinfo(CPUINFO / "nehalem-xeon-x3430.cpuinfo")


def sandy_bridge() -> HostProfile:
    """A Xeon E5-2670 (Sandy Bridge-EP, 8 cores): AVX without FMA, /proc/cpuinfo caught it
    at 1.2 GHz (one block kept)."""
    flags = " ".join(sorted(CpuModel.named("sandybridge").flags))
    text = (
        "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 45\n"
        "model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz\ncpu MHz\t\t: 1200.000\n"
        "physical id\t: 0\nsiblings\t: 8\ncore id\t\t: 0\ncpu cores\t: 8\n"
        f"flags\t\t: {flags}\n"
    )
    return profile_from_cpuinfo_text(text, "e5-2670")


def test_an_avx512_xeon_with_two_fma_units() -> None:
    """Xeon Gold 6132, two sockets of 14 cores at 2.6 GHz: 28 x 2.6 x 16 x 2 x 2."""
    peak = fp32_peak(SKYLAKE, None)
    assert peak is not None
    assert (peak.cores, peak.ghz, peak.lanes, peak.fma_units) == (28, 2.6, 16, 2)
    assert peak.gflops == pytest.approx(4659.2)
    assert peak.assumptions == (
        "28 cores x 2.60 GHz (base clock from the model name) x 16 FP32 lanes x 2 FMA units "
        "x 2 flops; turbo clocks can exceed it"
    )
    assert peak.to_json()["gflops"] == pytest.approx(4659.2)


def test_zen4_runs_avx512_through_one_fma_unit_at_the_reported_clock() -> None:
    """The EPYC 9654's model name carries no clock: the 3699.993 MHz /proc/cpuinfo reported
    is used. Zen 4 executes a 512-bit FMA in two halves: one unit of 16 lanes."""
    peak = fp32_peak(ZEN4, None)
    assert peak is not None
    assert (peak.cores, peak.lanes, peak.fma_units) == (96, 16, 1)
    assert peak.ghz == pytest.approx(3.699993)
    assert peak.gflops == pytest.approx(11366.378496)
    assert peak.assumptions == (
        "96 cores x 3.70 GHz (clock reported by /proc/cpuinfo) x 16 FP32 lanes x 1 FMA unit "
        "x 2 flops; turbo clocks can exceed it"
    )


def test_the_base_clock_in_the_model_name_wins_over_the_reported_one() -> None:
    """The E5-2680 v3 was caught at 1757.91 MHz; its base clock is 2.5 GHz."""
    assert HASWELL.cpu.mhz == pytest.approx(1757.91)
    assert nominal_ghz(HASWELL) == (2.5, "base clock from the model name")
    reported = nominal_ghz(ZEN4)
    assert reported is not None
    assert reported[0] == pytest.approx(3.699993)
    assert reported[1] == "clock reported by /proc/cpuinfo"


def test_avx_without_fma_and_sse_only_cpus() -> None:
    """Sandy Bridge: 8 lanes, no FMA (a multiply and an add a cycle: one unit's worth);
    Nehalem: 4 SSE lanes, one unit, and no core ids (each of its 4 CPUs counts as a core)."""
    sandy = fp32_peak(sandy_bridge(), None)
    assert sandy is not None
    assert (sandy.cores, sandy.ghz, sandy.lanes, sandy.fma_units) == (8, 2.6, 8, 1)
    assert sandy.gflops == pytest.approx(332.8)
    nehalem = fp32_peak(NEHALEM, None)
    assert nehalem is not None
    assert (nehalem.cores, nehalem.lanes, nehalem.fma_units) == (4, 4, 1)
    assert nehalem.gflops == pytest.approx(76.8)


def test_intra_op_threads_bound_the_cores_counted() -> None:
    """A config of one intra-op thread uses one core (and says so in the singular); more
    threads than cores count the cores."""
    one = fp32_peak(HASWELL, 1)
    assert one is not None and one.cores == 1
    assert one.gflops == pytest.approx(80.0)
    assert one.assumptions.startswith("1 core x 2.50 GHz")
    many = fp32_peak(HASWELL, 100)
    assert many is not None and many.cores == 24
    assert many.gflops == pytest.approx(1920.0)


def test_the_cores_this_process_may_use_are_counted_not_the_machines() -> None:
    """Six of the Haswell's 24 cores in this process's affinity (or its cgroup quota)."""
    limited = dataclasses.replace(
        HASWELL, topology=dataclasses.replace(HASWELL.topology, usable_physical_cores=6)
    )
    peak = fp32_peak(limited, None)
    assert peak is not None and peak.cores == 6
    assert peak.gflops == pytest.approx(480.0)
    capped = fp32_peak(limited, 4)
    assert capped is not None and capped.cores == 4


def test_no_peak_without_a_clock() -> None:
    """A model name without `@ x GHz` and no MHz reported: no figure rather than a guess."""
    unclocked = dataclasses.replace(
        ZEN4, cpu=dataclasses.replace(ZEN4.cpu, model_name="AMD EPYC 9654", mhz=None)
    )
    assert nominal_ghz(unclocked) is None
    assert fp32_peak(unclocked, None) is None
