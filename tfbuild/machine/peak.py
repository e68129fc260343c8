"""The host's theoretical FP32 peak, to put matmul GFLOP/s in proportion. Pure arithmetic."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from tfbuild.machine.profile import HostProfile
from tfbuild.resources import load_table


@dataclass(frozen=True)
class Peak:
    gflops: float
    cores: int
    ghz: float
    lanes: int
    fma_units: int
    assumptions: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def nominal_ghz(host: HostProfile) -> tuple[float, str] | None:
    """The base clock from the model name (``@ 2.60GHz``), else what /proc/cpuinfo reported."""
    match = re.search(r"@\s*([0-9.]+)\s*GHz", host.cpu.model_name)
    if match:
        return float(match.group(1)), "base clock from the model name"
    if host.cpu.mhz:
        return host.cpu.mhz / 1000, "clock reported by /proc/cpuinfo"
    return None


def fp32_peak(host: HostProfile, intra_op: int | None) -> Peak | None:
    """cores x clock x SIMD lanes x FMA units x 2, for the cores a config may use."""
    clock = nominal_ghz(host)
    if clock is None:
        return None
    ghz, clock_source = clock
    flags = host.cpu.flags
    lanes = 16 if "avx512f" in flags else 8 if "avx" in flags else 4
    march = host.cpu.march.name if host.cpu.march else ""
    units = 1 if march in load_table("microarchitectures")["fma_units_one"] else 2
    usable = host.topology.usable_physical_cores or host.topology.physical_cores
    cores = min(usable, intra_op) if intra_op else usable
    gflops = cores * ghz * lanes * units * 2
    return Peak(
        gflops=gflops,
        cores=cores,
        ghz=ghz,
        lanes=lanes,
        fma_units=units,
        assumptions=(
            f"{cores} core{'s' if cores != 1 else ''} x {ghz:.2f} GHz ({clock_source}) x "
            f"{lanes} FP32 lanes x {units} FMA unit{'s' if units > 1 else ''} x 2 flops; "
            "turbo clocks can exceed it"
        ),
    )
