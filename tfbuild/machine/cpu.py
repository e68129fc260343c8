"""x86-64 CPU facts: /proc/cpuinfo parsing, psABI levels, safe -march names and build flags.

One model of a CPU, :class:`CpuModel` (a host's, a -march's, the one a build is made for), and
pure functions over flag sets. The named micro-architectures, their -march names and compiler
releases, and which one a CPU is come from archspec (tfbuild.machine.uarch); what archspec does
not say (TensorFlow's extensions and their -m options, the x86-64 baseline, which features a
compiler emits on its own) is in ``data/microarchitectures.yaml``.
Flags are kept in /proc/cpuinfo spelling (``pni`` for SSE3, ``abm`` for LZCNT); the names users
write in matrix.yaml (``sse3``, ``avx512_vnni``...) are the keys of :func:`tf_flag_table`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tfbuild.machine import uarch
from tfbuild.resources import load_table

LEVEL_NAMES = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4")


@dataclass(frozen=True)
class TfFlag:
    name: str
    cpuinfo: str
    copt: str
    implies: tuple[str, ...]


@dataclass(frozen=True)
class March:
    name: str
    vendor: str
    flags: frozenset[str]
    """Every cpuinfo flag a compiler may emit code for with this -march (inherited included)."""
    identify: frozenset[str]
    """The features a CPU must also have to be this target, which a build never needs."""
    gcc: str
    clang: str
    level: int
    archspec: str = ""
    """archspec's name for it (zen4 for znver4); empty for a name archspec lacks."""


@dataclass(frozen=True)
class Processor:
    """One ``processor`` block of /proc/cpuinfo: where that logical CPU sits."""

    index: int
    package: int | None
    core: int | None


@dataclass(frozen=True)
class CpuInfo:
    vendor_id: str
    model_name: str
    family: int | None
    model: int | None
    stepping: int | None
    mhz: float | None
    flags: frozenset[str]
    processors: tuple[Processor, ...] = field(default=())
    siblings: int | None = None
    """Logical CPUs per package, as the first block states (``siblings``)."""
    cores_per_package: int | None = None
    """Physical cores per package, as the first block states (``cpu cores``)."""


def _table() -> Mapping[str, Any]:
    table: Mapping[str, Any] = load_table("microarchitectures")
    return table


@functools.cache
def tf_flag_table() -> dict[str, TfFlag]:
    """The TF-relevant extensions, keyed by their matrix.yaml name, in display order."""
    return {
        name: TfFlag(name, spec["cpuinfo"], spec["copt"], tuple(spec.get("implies", ())))
        for name, spec in _table()["tf_flags"].items()
    }


@functools.cache
def level_flags() -> tuple[frozenset[str], ...]:
    """Cumulative flag sets of levels v1..v4 (index 0 is the x86-64 baseline): the baseline,
    then what archspec's generic targets x86_64_v2..v4 have."""
    baseline = frozenset(_table()["baseline"])
    return tuple(baseline | uarch.level_features(n) for n in range(1, len(LEVEL_NAMES) + 1))


def isa_level(flags: Iterable[str]) -> int:
    """psABI micro-architecture level 1..4, or 0 when even the x86-64 baseline is missing."""
    have = set(flags)
    level = 0
    for needed in level_flags():
        if not needed <= have:
            break
        level += 1
    return level


def level_name(level: int) -> str:
    return LEVEL_NAMES[level - 1] if level >= 1 else "below x86-64 baseline"


@functools.cache
def marches() -> dict[str, March]:
    """Every -march name tfbuild knows: archspec's x86-64 targets under GCC's names, then the
    names GCC accepts that archspec has no target for (the table's extra_marches)."""
    emits = frozenset(_table()["compiler_emits"])
    also: Mapping[str, list[str]] = _table()["emits_also"]
    base = level_flags()[0]
    by_vendor: Mapping[str, str] = _table()["vendors"]
    result: dict[str, March] = {}
    for target in uarch.targets().values():
        gcc_adds = frozenset(f for m in target.lineage for f in also.get(m, ()))
        flags = (target.features & emits) | gcc_adds | base
        result[target.march] = March(
            name=target.march,
            vendor=by_vendor.get(target.vendor_id, "other") if target.vendor_id else "any",
            flags=flags,
            identify=target.features - flags,
            gcc=target.gcc,
            clang=target.clang,
            level=isa_level(flags),
            archspec=target.name,
        )
    for name, spec in _table()["extra_marches"].items():
        parent = result[spec["inherits"]]
        flags = parent.flags | frozenset(spec.get("flags", ()))
        result[name] = March(
            name, parent.vendor, flags, parent.identify, str(spec["gcc"]), str(spec["clang"]),
            isa_level(flags),
        )  # fmt: skip
    return result


@dataclass(frozen=True)
class CpuModel:
    """A CPU as code built for it sees it: its name, its vendor and every extension it has, in
    /proc/cpuinfo's words. It knows its x86-64 level, which code it runs (the partial order:
    `a <= b` when b runs all code built for a; `a | b` is the least CPU that runs code built for
    either), what it lacks of a wheel's needs, and the -march it is safe to build for. The CPU a
    build is made for also knows the extensions that build turns on by name (`asked`), and so
    its -m options. TensorFlow's names of extensions (matrix.yaml's), the compiler's options and
    the names a person reads are at its edges: `from_tf_names`, `from_copts`, `copts`,
    `tf_flags`, `display_name`."""

    name: str
    vendor_id: str
    flags: frozenset[str]
    asked: tuple[str, ...] = ()
    """The extensions a build for it turns on by name (-mavx2...), TensorFlow's in table order,
    then the rest; `flags` holds them, what they imply and the baseline under them."""

    @classmethod
    def named(cls, march: str) -> CpuModel:
        """The CPU a -march name (haswell, znver4, x86-64-v3) stands for: every extension a
        compiler may use for it, and those that tell it apart from the one before it."""
        spec = marches()[march]
        return cls(march, _vendor_of(spec), spec.flags | spec.identify)

    @classmethod
    def built_for(cls, march: str) -> CpuModel:
        """What code built with -march=`march` may use: every extension a compiler may emit for
        it, without those that only tell that CPU apart (a build never needs them)."""
        spec = marches()[march]
        return cls(march, _vendor_of(spec), spec.flags)

    @classmethod
    def asking(cls, name: str, extensions: Iterable[str]) -> CpuModel:
        """A build that turns these extensions on by name (cpuinfo's words): them, what they
        imply (AVX2 brings AVX, SSE4.2...) and the x86-64 baseline."""
        asked = frozenset(extensions)
        return cls(name, "", _implied(asked) | level_flags()[0], _in_table_order(asked))

    @classmethod
    def from_tf_names(cls, name: str, tf_names: Iterable[str]) -> CpuModel:
        """A build with the extensions matrix.yaml names (and what they imply)."""
        table = tf_flag_table()
        return cls.asking(name, (table[n].cpuinfo for n in tf_names))

    @classmethod
    def from_copts(cls, name: str, copts: Iterable[str]) -> CpuModel:
        """A build with the extensions these compiler options turn on by name (-mavx2...;
        any other option, -march among them, adds none)."""
        by_copt = {flag.copt: flag.cpuinfo for flag in tf_flag_table().values()}
        return cls.asking(name, (by_copt[c] for c in copts if c in by_copt))

    def native(self) -> CpuModel:
        """What code built with -march=native on this CPU may use: each of its extensions that
        a compiler may emit for some -march."""
        emitted = frozenset[str]().union(*(m.flags for m in marches().values()))
        return CpuModel(self.name, self.vendor_id, self.flags & emitted)

    def __or__(self, other: CpuModel) -> CpuModel:
        """The least CPU that runs code built for either: the extensions of both, the asked of
        both; this one's name, and its vendor (the other's when it has none)."""
        return CpuModel(
            self.name,
            self.vendor_id or other.vendor_id,
            self.flags | other.flags,
            _in_table_order({*self.asked, *other.asked}),
        )

    @property
    def level(self) -> int:
        """psABI level 1..4, 0 below the x86-64 baseline."""
        return isa_level(self.flags)

    @property
    def level_name(self) -> str:
        return level_name(self.level)

    @property
    def beyond_baseline(self) -> frozenset[str]:
        """Its extensions beyond x86-64's baseline (which every x86-64 CPU has)."""
        return self.flags - level_flags()[0]

    def __le__(self, other: CpuModel) -> bool:
        """Whether `other` runs every instruction code built for this CPU may use."""
        return self.flags <= other.flags

    def runs(self, needs: Iterable[str]) -> bool:
        """Whether code needing these extensions runs on this CPU."""
        return not self.lacks(needs)

    def lacks(self, needs: Iterable[str]) -> list[str]:
        """The extensions of `needs` this CPU lacks: TensorFlow's in table order, then the rest."""
        return missing_flags(needs, self.flags)

    @property
    def march(self) -> MarchChoice | None:
        """The most specific -march whose code this CPU runs."""
        return closest_march(self.vendor_id, self.flags)

    @property
    def widest(self) -> str:
        """Its widest SIMD extension, for messages ("up to AVX2")."""
        return next((display_name(f) for f in _WIDEST_FIRST if f in self.flags), "no SSE2")

    def copts(self) -> tuple[str, ...]:
        """The -m options that turn on the extensions it asks for, in TensorFlow's table order
        (-mavx2 -mfma); an extension TensorFlow's table does not name has none."""
        return tuple(flag.copt for flag in tf_flag_table().values() if flag.cpuinfo in self.asked)

    def tf_flags(self) -> dict[str, bool]:
        """matrix.yaml's extension names -> whether this CPU has it."""
        return {name: flag.cpuinfo in self.flags for name, flag in tf_flag_table().items()}


_WIDEST_FIRST = ("amx_tile", "avx512f", "avx2", "avx", "sse4_2", "sse4_1", "ssse3", "pni", "sse2")


def _vendor_of(spec: March) -> str:
    """The /proc/cpuinfo vendor id of a -march's vendor; empty for a generic x86-64 level."""
    return next((v for v, key in _table()["vendors"].items() if key == spec.vendor), "")


def _implied(extensions: Iterable[str]) -> frozenset[str]:
    """These extensions and every one they imply, in cpuinfo's words."""
    table = tf_flag_table()
    by_cpuinfo = {flag.cpuinfo: flag for flag in table.values()}
    found: set[str] = set()
    todo = list(extensions)
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            if name in by_cpuinfo:
                todo.extend(table[n].cpuinfo for n in by_cpuinfo[name].implies)
    return frozenset(found)


def _in_table_order(extensions: Iterable[str]) -> tuple[str, ...]:
    """TensorFlow's extensions in its table's order, then the rest by name."""
    order = {flag.cpuinfo: i for i, flag in enumerate(tf_flag_table().values())}
    return tuple(sorted(set(extensions), key=lambda f: (order.get(f, 99), f)))


def vendor_key(vendor_id: str) -> str:
    vendors: Mapping[str, str] = _table()["vendors"]
    return vendors.get(vendor_id, "other")


@dataclass(frozen=True)
class MarchChoice:
    name: str
    reason: str


def closest_march(vendor_id: str, flags: Iterable[str]) -> MarchChoice | None:
    """The -march name of the target archspec names this CPU (every feature of that target
    present), or None below x86-64. A generic x86-64-vN where archspec names no target of the
    CPU's vendor that it fully has (a hypervisor hiding one feature is enough)."""
    have = frozenset(flags)
    level = isa_level(have)
    if level == 0:
        return None
    generic = level_name(level)
    named = uarch.best(vendor_id, have)
    table = marches()
    # archspec's target, or the most capable one it descends from whose every extension GCC
    # may emit for it (emits_also included) this CPU has.
    fitting = next(m for m in named.lineage if table[m].flags <= have)
    target = uarch.targets()[fitting]
    if fitting != named.march:
        lacking = ", ".join(display_name(f) for f in missing_flags(table[named.march].flags, have))
        return MarchChoice(
            target.march,
            f"archspec {uarch.VERSION} names this CPU {named.name}, but GCC's "
            f"-march={named.march} may emit {lacking}, which it lacks: {target.march} is the "
            f"most capable target it descends from that this CPU runs (psABI level {generic})",
        )
    if not target.vendor_id:
        return MarchChoice(
            target.march,
            f"psABI level {generic}; archspec {uarch.VERSION} names no "
            f"{vendor_id or 'unknown vendor'} target whose every feature this CPU has",
        )
    return MarchChoice(
        target.march,
        f"archspec {uarch.VERSION} names this CPU {target.name}: it has every feature of that "
        f"target (psABI level {generic})",
    )


def missing_flags(required: Iterable[str], have: Iterable[str]) -> list[str]:
    """Required cpuinfo flags the CPU lacks: TF-relevant ones in table order, then the rest."""
    have_set = set(have)
    return list(_in_table_order(f for f in required if f not in have_set))


_DISPLAY = {
    "pni": "SSE3",
    "sse4_1": "SSE4.1",
    "sse4_2": "SSE4.2",
    "abm": "LZCNT",
    "lahf_lm": "LAHF",
    "bmi1": "BMI1",
}


def display_name(cpuinfo_flag: str) -> str:
    """User-facing name of a cpuinfo flag: SSE3 for pni, SSE4.2 for sse4_2, AVX512F..."""
    return _DISPLAY.get(cpuinfo_flag, cpuinfo_flag.upper())


def cpuinfo_flags_for(tf_flags: Iterable[str]) -> set[str]:
    """cpuinfo flags a build with these matrix.yaml flags needs, implications followed."""
    table = tf_flag_table()
    return set(_implied(table[name].cpuinfo for name in tf_flags))


def onednn_default_on(flags: Iterable[str]) -> bool:
    """Whether stock (non --config=mkl) x86 Linux TensorFlow turns oneDNN on by default here."""
    return bool(set(_table()["onednn_default_on"]) & set(flags))


def parse_cpuinfo(text: str) -> CpuInfo:
    """Parse /proc/cpuinfo text. Raises ValueError with a readable reason when it is not x86."""
    blocks = [b for b in text.replace("\r\n", "\n").split("\n\n") if b.strip()]
    entries: list[dict[str, str]] = []
    for block in blocks:
        entry: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                entry[key.strip().lower()] = value.strip()
        if "processor" in entry:
            entries.append(entry)
    if not entries:
        raise ValueError("no 'processor' entries: this is not /proc/cpuinfo output")
    first = entries[0]
    if "flags" not in first:
        if "features" in first or "cpu implementer" in first:
            raise ValueError("this describes an ARM CPU; tfbuild plans x86-64 builds only")
        raise ValueError("no 'flags' line: cannot tell which instruction sets the CPU has")

    def as_int(entry: Mapping[str, str], key: str) -> int | None:
        value = entry.get(key, "")
        return int(value) if value.isdigit() else None

    mhz: float | None
    try:
        mhz = float(first.get("cpu mhz", ""))
    except ValueError:
        mhz = None
    processors = tuple(
        Processor(
            index=i if (n := as_int(e, "processor")) is None else n,
            package=as_int(e, "physical id"),
            core=as_int(e, "core id"),
        )
        for i, e in enumerate(entries)
    )
    return CpuInfo(
        vendor_id=first.get("vendor_id", ""),
        model_name=" ".join(first.get("model name", "").split()),
        family=as_int(first, "cpu family"),
        model=as_int(first, "model"),
        stepping=as_int(first, "stepping"),
        mhz=mhz,
        flags=frozenset(first["flags"].split()),
        processors=processors,
        siblings=as_int(first, "siblings"),
        cores_per_package=as_int(first, "cpu cores"),
    )
