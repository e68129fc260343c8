"""archspec's x86-64 micro-architectures: the Spack project's model of CPUs (as Spack, conda and
their peers use it), asked which targets exist, what each one has, from which compiler release
its -march name is accepted, and which target a CPU is.

This is the one module that imports archspec. tfbuild keeps in data/microarchitectures.yaml only
what archspec does not say: which extensions a compiler emits on its own, the x86-64 baseline,
TensorFlow's names for extensions, and the few -march names GCC accepts that archspec has no
target for. Features are given in /proc/cpuinfo's spelling, as everywhere in tfbuild.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

import archspec
import archspec.cpu
from archspec.cpu import detect

VERSION: str = archspec.__version__
LEVELS = ("x86_64", "x86_64_v2", "x86_64_v3", "x86_64_v4")
"""archspec's generic targets, one per x86-64 psABI level."""
_SPELLING = {"sse3": "pni"}
"""archspec's feature names that /proc/cpuinfo spells otherwise."""


@dataclass(frozen=True)
class Microarch:
    """One archspec x86-64 target, under the name GCC's -march takes for it."""

    name: str
    """archspec's name (zen4, skylake_avx512, x86_64_v3)."""
    march: str
    """GCC's -march name for it (znver4, skylake-avx512, x86-64-v3)."""
    vendor_id: str
    """/proc/cpuinfo's vendor_id (GenuineIntel, AuthenticAMD); empty for a generic level."""
    features: frozenset[str]
    """Every feature a CPU of this target has, its ancestors' included."""
    gcc: str
    """The first GCC release whose -march accepts `march`."""
    clang: str
    lineage: tuple[str, ...] = ()
    """The -march names of it and of every target it descends from, most capable first."""


def _cpuinfo(features: Iterable[str]) -> frozenset[str]:
    return frozenset(_SPELLING.get(f, f) for f in features)


def _first_release(target: archspec.cpu.Microarchitecture, compiler: str) -> tuple[str, str]:
    """(-march name, first release) of the compiler entry that is still open (`versions: "X:"`):
    the name today's releases take. archspec's older entries name an older target plus -m
    options (zen4 as znver3 before GCC 12.3), which tfbuild does not build with."""
    for entry in target.compilers.get(compiler, ()):
        low, _, high = str(entry["versions"]).partition(":")
        if not high:
            return str(entry.get("name", target.name)).format(name=target.name), low
    return "", ""


def _newest(t: archspec.cpu.Microarchitecture) -> tuple[int, int]:
    """archspec's order of targets: deeper in the tree, then more features."""
    return len(t.ancestors), len(t.features)


def _capable(t: archspec.cpu.Microarchitecture) -> tuple[int, int]:
    """Ancestors by what they have: more features first (a generic x86-64-v3 before a Nehalem,
    though the Nehalem is deeper in the tree), then deeper."""
    return len(t.features), len(t.ancestors)


def _x86_64(target: archspec.cpu.Microarchitecture) -> bool:
    root = archspec.cpu.TARGETS[LEVELS[0]]
    return target == root or root in target.ancestors


@functools.cache
def targets() -> dict[str, Microarch]:
    """Every x86-64 target archspec knows that GCC can name, by its -march name."""
    found: dict[str, Microarch] = {}
    for target in archspec.cpu.TARGETS.values():
        if not _x86_64(target):
            continue
        march, gcc = _first_release(target, "gcc")
        _, clang = _first_release(target, "clang")
        if not march:
            continue
        line = sorted([target, *target.ancestors], key=_capable, reverse=True)
        found[march] = Microarch(
            name=target.name,
            march=march,
            vendor_id="" if target.vendor == "generic" else target.vendor,
            features=_cpuinfo(target.features),
            gcc=gcc,
            clang=clang,
            lineage=tuple(m for t in line if (m := _first_release(t, "gcc")[0])),
        )
    return found


def level_features(level: int) -> frozenset[str]:
    """What archspec's generic target of psABI level 1..4 has (level 1, x86-64, lists none)."""
    return _cpuinfo(archspec.cpu.TARGETS[LEVELS[level - 1]].features)


def best(vendor_id: str, flags: Iterable[str]) -> Microarch:
    """The target archspec names a CPU with this vendor and these /proc/cpuinfo flags, by the
    rule its `archspec.cpu.host()` names the machine it runs on: the newest target of that
    vendor whose every feature the CPU has, descended from the best generic level it reaches;
    that level when there is none. One difference: cpuinfo's pni counts as archspec's sse3
    (archspec infers SSE3 only from SSSE3), so a CPU with SSE3 and no SSSE3 can be a Nocona.
    archspec has no targets for vendors other than Intel and AMD (a Hygon CPU is a level)."""
    features = set(flags) | ({"sse3"} if "pni" in flags else set())
    info = detect.partial_uarch(vendor=vendor_id, features=features)
    fits = [
        t
        for t in archspec.cpu.TARGETS.values()
        if _x86_64(t) and detect.compatibility_check_for_x86_64(info, t)
    ]

    generic = max((t for t in fits if t.vendor == "generic"), key=_newest)
    named = [t for t in fits if t > generic]
    chosen = max(named, key=_newest) if named else generic
    by_name = {t.name: t for t in targets().values()}
    while chosen.name not in by_name:  # a target GCC has no name for: its nearest that has one
        chosen = max(chosen.parents, key=_newest)
    return by_name[chosen.name]
