"""What a variant asks of the machine it is planned for: its target CPU (a model made from its
matrix.yaml names, its copts and its -march), the compiler flags and the CPU flags that model
gives, and TensorFlow's floor added to a build below it. Expected values are those of
`tfbuild matrix --format json` for these variants."""

from __future__ import annotations

from typing import Any

import pytest
from support.env import FIXTURES

from tfbuild.config.model import Variant
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.machine.profile import HostProfile
from tfbuild.plan.target import (
    compiler_flags,
    floor_added,
    named_cpu,
    required_cpu_flags,
    target_cpu,
)

BASELINE = {"lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "syscall", "sse", "sse2"}
V2 = {"cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3"}
SSE42 = {"pni", "ssse3", "sse4_1", "sse4_2", "popcnt"}
HASWELL = {
    *BASELINE, *V2, "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
    "pclmulqdq", "aes",
}  # fmt: skip
"""-march=haswell: archspec's Haswell (AES from its Westmere on) and what GCC emits for it."""


def host(name: str) -> HostProfile:
    return profile_from_cpuinfo(FIXTURES / "cpuinfo" / f"{name}.cpuinfo")


def needed(v: Variant, h: HostProfile) -> set[str] | None:
    """The CPU flags the plan says the variant needs on `h`."""
    flags = required_cpu_flags(v, h)
    return None if flags is None else set(flags)


def variant(name: str, tensorflow: str | None = "2.21.0", **fields: Any) -> Variant:
    source = fields.pop("source", "bazel")
    return Variant(
        name=name, id=name, source=source, python="3.11", tensorflow=tensorflow, **fields
    )


# name, its definition, its compiler flags, the CPU flags it needs, the floor extensions added
CASES: list[tuple[str, dict[str, Any], tuple[str, ...], set[str], tuple[str, ...]]] = [
    ("march-haswell", {"march": "haswell"}, ("-march=haswell",), HASWELL, ()),
    ("march-skylake", {"march": "skylake"}, ("-march=skylake",), HASWELL | {"adx", "aes"}, ()),
    (
        "march-sandybridge",
        {"march": "sandybridge"},
        ("-march=sandybridge", "-mf16c"),
        {*BASELINE, *V2, "avx", "f16c", "pclmulqdq", "aes", "xsave"},
        ("f16c",),
    ),
    (
        "march-nehalem-2.17",
        {"march": "nehalem", "tensorflow": "2.17.1"},
        ("-march=nehalem", "-mavx"),
        {*BASELINE, *V2, "avx"},
        ("avx",),
    ),
    (
        "redundant-names",
        {"cpu_flags": ("avx", "avx2", "sse4_2", "fma")},
        ("-msse4.2", "-mavx", "-mavx2", "-mfma", "-mf16c"),
        {*BASELINE, *SSE42, "avx", "avx2", "fma", "f16c"},
        ("f16c",),
    ),
    (
        "amx-below-the-floor",
        {"cpu_flags": ("amx_tile",)},
        ("-mamx-tile", "-mavx", "-mf16c"),
        {*BASELINE, *SSE42, "amx_tile", "avx", "f16c"},
        ("avx", "f16c"),
    ),
    (
        "names-and-a-level",
        {"cpu_flags": ("avx512f",), "march": "x86-64-v3"},
        ("-mavx512f", "-march=x86-64-v3"),
        HASWELL - {"pclmulqdq", "aes"} | {"avx512f"},
        (),
    ),
    (
        "copts-name-avx2",
        {"copts": ("-mavx2", "-O3")},
        ("-mf16c", "-mavx2", "-O3"),
        {*BASELINE, *SSE42, "avx", "avx2", "f16c"},
        ("f16c",),
    ),
    (
        "names-march-and-copts",
        {
            "tensorflow": "2.17.1",
            "cpu_flags": ("ssse3",),
            "march": "core2",
            "copts": ("-mpopcnt", "-O2"),
        },
        ("-mssse3", "-march=core2", "-mavx", "-mpopcnt", "-O2"),
        {*BASELINE, *V2, "avx"},
        ("avx",),
    ),
    ("plain", {}, (), {*BASELINE, *SSE42, "avx", "f16c"}, ()),
    ("plain-o3", {"copts": ("-O3",)}, ("-O3",), {*BASELINE, *SSE42, "avx", "f16c"}, ()),
]


@pytest.mark.parametrize(("name", "fields", "copts", "needs", "added"), CASES)
def test_a_variants_target_cpu_gives_its_flags(
    name: str,
    fields: dict[str, Any],
    copts: tuple[str, ...],
    needs: set[str],
    added: tuple[str, ...],
) -> None:
    """The same on every machine for a variant that does not build for the machine itself."""
    v = variant(name, **fields)
    for machine in ("haswell-xeon-e5-2680v3", "penryn-core2-duo-t9600"):
        h = host(machine)
        assert compiler_flags(v, h) == copts
        assert needed(v, h) == needs == set(target_cpu(v, h).flags)
        assert floor_added(v, h).asked == added


def test_a_build_for_the_machine_itself_is_not_lifted_above_it() -> None:
    """march: host on a Nehalem (no AVX) is -march=nehalem alone; on a Haswell, -march=haswell;
    march: native needs what the host has that a compiler emits."""
    v = variant("host", march="host")
    nehalem, haswell = host("nehalem-xeon-x3430"), host("haswell-xeon-e5-2680v3")
    assert compiler_flags(v, nehalem) == ("-march=nehalem",)
    assert floor_added(v, nehalem).asked == ()
    assert needed(v, nehalem) == {*BASELINE, *V2}
    assert compiler_flags(v, haswell) == ("-march=haswell",)
    assert needed(v, haswell) == HASWELL
    native = variant("native", march="native")
    penryn = host("penryn-core2-duo-t9600")
    assert compiler_flags(native, penryn) == ("-march=native",)
    assert needed(native, penryn) == {
        *BASELINE, "cx16", "lahf_lm", "pni", "sse4_1", "ssse3", "xsave"
    }  # fmt: skip
    assert needed(native, haswell) == HASWELL | {"aes"}
    assert named_cpu(native, haswell).flags == haswell.cpu.isa.native().flags


def test_a_variant_below_the_floor_gets_it_where_its_machine_has_it() -> None:
    """cpu_flags: [sse4_2] with march: native gets no AVX on a Nehalem, which lacks it (the
    only build that runs there), and needs only what that Nehalem has."""
    v = variant("sse42-native", cpu_flags=("sse4_2",), march="native")
    nehalem = host("nehalem-xeon-x3430")
    assert compiler_flags(v, nehalem) == ("-msse4.2", "-march=native")
    assert floor_added(v, nehalem).asked == ()
    assert target_cpu(v, nehalem) <= nehalem.cpu.isa


def test_a_distribution_needs_what_it_is_declared_to_need_beyond_the_baseline() -> None:
    """tensorflow-cpu: AVX and what it implies; intel-tensorflow-avx512: AVX-512 and what it
    implies; a distribution tfbuild knows nothing of, and a wheel file, are told by the audit."""
    h = host("haswell-xeon-e5-2680v3")
    stock = variant("stock", source="pypi", requirement="tensorflow-cpu")
    assert needed(stock, h) == {*SSE42, "avx"}
    avx512 = variant("avx512", source="pypi", requirement="intel-tensorflow-avx512==2.14.0")
    assert needed(avx512, h) == {
        *SSE42, "avx", "avx2", "fma", "f16c", "avx512f", "avx512cd", "avx512bw", "avx512dq",
        "avx512vl",
    }  # fmt: skip
    other = variant("other", source="pypi", requirement="somethingelse==1.0")
    assert needed(other, h) is None
    assert needed(variant("file", source="wheel"), h) is None
    assert compiler_flags(stock, h) == () and floor_added(stock, h).asked == ()
