"""What a wheel's machine code needs from the CPU: an audit of every ELF object inside it.

Every function (from the unwind tables, named from the symbol tables) is decoded with iced-x86
and the instruction-set extensions its instructions belong to are counted. The *baseline* (what
a CPU must have for the wheel to load and run) is told apart from code that is only reached
after a run-time CPU check (oneDNN, XNNPACK, ruy and others dispatch to AVX-512 kernels through
function pointers): an extension is part of the baseline when

1. code reachable by direct calls from the object's load-time entry points (ELF initialisers
   and Python module init functions) uses it: that code runs on import, on any CPU; or
2. it is pervasive: used by at least PERVASIVE_SHARE of all functions, as compiler flags such
   as -mavx2 make it (dispatched kernels are a small share); or
3. the wheel's own tfbuild manifest says it was compiled for it (its copts).

The glibc floor comes from the GLIBC_x.y symbol versions the objects need, and the GPU
architectures of CUDA device code (SASS and PTX) are listed by cuobjdump (tfbuild.cuobjdump).
"""

from __future__ import annotations

import bisect
import functools
import mmap
import multiprocessing
import os
import re
import shutil
import struct
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild import cpu

ANALYSIS_VERSION = 4
PERVASIVE_SHARE = 0.05
PERVASIVE_MIN_FUNCTIONS = 20
ELF_MAGIC = b"\x7fELF"
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment")

DeviceCodeLister = Callable[[Path], dict[str, Any]]
"""An object's file -> its device code: checked, sass, ptx, note (tfbuild.cuobjdump)."""

# iced-x86 CPUID feature names -> the names tfbuild reports (cpuinfo spelling where one
# exists). Everything else (x86-64 baseline, system instructions such as CPUID, XGETBV,
# RDTSCP, used by the dispatchers themselves) is not an instruction-set requirement here.
FEATURES: dict[str, str] = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "SSE4_1": "sse4_1",
    "SSE4_2": "sse4_2",
    "POPCNT": "popcnt",
    "AVX": "avx",
    "AVX2": "avx2",
    "FMA": "fma",
    "F16C": "f16c",
    "AVX512F": "avx512f",
    "AVX512CD": "avx512cd",
    "AVX512BW": "avx512bw",
    "AVX512DQ": "avx512dq",
    "AVX512VL": "avx512vl",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AVX512_FP16": "avx512_fp16",
    "AVX512_IFMA": "avx512ifma",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VBMI2": "avx512_vbmi2",
    "AVX512_BITALG": "avx512_bitalg",
    "AVX512_VPOPCNTDQ": "avx512_vpopcntdq",
    "AVX512_VP2INTERSECT": "avx512_vp2intersect",
    "AVX_VNNI": "avx_vnni",
    "AMX_TILE": "amx_tile",
    "AMX_INT8": "amx_int8",
    "AMX_BF16": "amx_bf16",
    "BMI1": "bmi1",
    "BMI2": "bmi2",
    "LZCNT": "abm",
    "MOVBE": "movbe",
    "ADX": "adx",
    "AES": "aes",
    "PCLMULQDQ": "pclmulqdq",
    "SHA": "sha_ni",
    "GFNI": "gfni",
    "VAES": "vaes",
    "VPCLMULQDQ": "vpclmulqdq",
    "SSE4A": "sse4a",
}


@dataclass(frozen=True)
class Function:
    start: int
    end: int
    name: str | None


@dataclass
class Usage:
    """How one extension is used in one object."""

    instructions: int = 0
    functions: int = 0
    examples: list[tuple[int, str]] = field(default_factory=list)
    """(instruction count, function name) of the heaviest users."""


@dataclass
class ObjectAudit:
    path: str
    functions: int
    usage: dict[str, Usage]
    baseline: dict[str, list[str]]
    """extension -> why it is baseline (entry-point reachable, pervasive...)."""
    glibc: str | None
    glibcxx: str | None
    cuda: dict[str, Any] | None
    entry_points: int
    reachable: int
    error: str | None = None
    """Why the object could not be read (truncated, damaged): then nothing else is known."""
    unchecked: dict[str, list[str]] = field(default_factory=dict)
    """Extensions of code whose address is taken on load, in an object with no CPU check."""


# --------------------------------------------------------------------------------------------
# ELF


@dataclass(frozen=True)
class Section:
    name: str
    type: int
    addr: int
    offset: int
    size: int
    link: int
    entsize: int


class OtherMachine(ValueError):
    """An ELF object for another machine (a bundled tool): nothing of it runs on x86-64."""


class Elf:
    """Just enough ELF64 little-endian x86-64 for the audit."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path.open("rb")
        self.data = mmap.mmap(self.file.fileno(), 0, access=mmap.ACCESS_READ)
        if self.data[:4] != ELF_MAGIC or self.data[4] != 2 or self.data[5] != 1:
            raise OtherMachine(f"{path.name}: not a 64-bit little-endian ELF object")
        (machine,) = struct.unpack_from("<H", self.data, 18)
        if machine != 62:
            raise OtherMachine(f"{path.name}: not x86-64 code (machine {machine})")
        (shoff,) = struct.unpack_from("<Q", self.data, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", self.data, 58)
        raw = []
        for i in range(shnum):
            fields = struct.unpack_from("<IIQQQQIIQQ", self.data, shoff + i * shentsize)
            raw.append(fields)
        names = raw[shstrndx]
        self.sections: dict[str, Section] = {}
        for name_off, type_, _, addr, offset, size, link, _, _, entsize in raw:
            name = self._cstr(names[4] + name_off)
            self.sections.setdefault(name, Section(name, type_, addr, offset, size, link, entsize))
        self.by_index = [
            Section(self._cstr(names[4] + r[0]), r[1], r[3], r[4], r[5], r[6], r[9]) for r in raw
        ]

    def close(self) -> None:
        self.data.close()
        self.file.close()

    def _cstr(self, offset: int) -> str:
        end = self.data.find(b"\0", offset)
        return self.data[offset:end].decode("utf-8", "replace")

    def symbols(self) -> list[tuple[int, int, str]]:
        """Defined function symbols (value, size, name) from .symtab, else .dynsym."""
        out = []
        for table in (".symtab", ".dynsym"):
            if table not in self.sections:
                continue
            section = self.sections[table]
            strtab = self.by_index[section.link]
            for off in range(section.offset, section.offset + section.size, 24):
                name_off, info, _, shndx, value, size = struct.unpack_from(
                    "<IBBHQQ", self.data, off
                )
                if info & 0xF == 2 and shndx != 0 and value:  # STT_FUNC, defined
                    out.append((value, size, self._cstr(strtab.offset + name_off)))
            if out:
                break
        return out

    def dynamic_symbols(self) -> dict[str, int]:
        out = {}
        if ".dynsym" in self.sections:
            section = self.sections[".dynsym"]
            strtab = self.by_index[section.link]
            for off in range(section.offset, section.offset + section.size, 24):
                name_off, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", self.data, off)
                if info & 0xF == 2 and shndx != 0 and value:
                    out[self._cstr(strtab.offset + name_off)] = value
        return out

    def dynamic(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        if ".dynamic" in self.sections:
            s = self.sections[".dynamic"]
            for off in range(s.offset, s.offset + s.size, 16):
                tag, value = struct.unpack_from("<qQ", self.data, off)
                if tag == 0:
                    break
                out[tag].append(value)
        return out

    def version_needs(self) -> list[str]:
        """Symbol versions required from other objects (GLIBC_2.27, GLIBCXX_3.4.29...)."""
        if ".gnu.version_r" not in self.sections:
            return []
        s = self.sections[".gnu.version_r"]
        strtab = self.by_index[s.link]
        names = []
        off = s.offset
        while True:
            _, count, _, aux, next_ = struct.unpack_from("<HHIII", self.data, off)
            aux_off = off + aux
            for _ in range(count):
                _, _, _, name, aux_next = struct.unpack_from("<IHHII", self.data, aux_off)
                names.append(self._cstr(strtab.offset + name))
                if not aux_next:
                    break
                aux_off += aux_next
            if not next_:
                break
            off += next_
        return names

    def functions(self) -> list[Function]:
        """Every function with its extent: unwind table (.eh_frame_hdr) and symbols merged."""
        named = {value: (size, name) for value, size, name in self.symbols()}
        extents: dict[int, int] = {}
        if ".eh_frame_hdr" in self.sections:
            extents = self._eh_frame_extents()
        for value, (size, _) in named.items():
            if value not in extents and size:
                extents[value] = value + size
        text = self.sections.get(".text")
        starts = sorted(extents)
        functions = []
        for i, start in enumerate(starts):
            end = extents[start]
            if i + 1 < len(starts):
                end = min(end, starts[i + 1]) if end > start else starts[i + 1]
            if end <= start and text is not None:
                end = min(start + 16, text.addr + text.size)
            functions.append(Function(start, end, named.get(start, (0, None))[1]))
        return functions

    def _eh_frame_extents(self) -> dict[int, int]:
        hdr = self.sections[".eh_frame_hdr"]
        base = hdr.offset
        version, ptr_enc, count_enc, table_enc = struct.unpack_from("<BBBB", self.data, base)
        if version != 1 or ptr_enc != 0x1B or count_enc != 0x03 or table_enc != 0x3B:
            return {}
        (count,) = struct.unpack_from("<I", self.data, base + 8)
        eh = self.sections.get(".eh_frame")
        extents = {}
        for i in range(count):
            loc, fde = struct.unpack_from("<ii", self.data, base + 12 + 8 * i)
            start = hdr.addr + loc
            fde_addr = hdr.addr + fde
            end = start
            if eh is not None and eh.addr <= fde_addr < eh.addr + eh.size:
                fde_off = eh.offset + (fde_addr - eh.addr)
                (length,) = struct.unpack_from("<I", self.data, fde_off)
                if length != 0xFFFFFFFF:
                    pc_begin, pc_range = struct.unpack_from("<iI", self.data, fde_off + 8)
                    if fde_addr + 8 + pc_begin == start:  # pcrel sdata4, the usual encoding
                        end = start + pc_range
            extents[start] = end
        return extents

    def init_entry_points(self) -> list[int]:
        """Functions the dynamic loader calls on load: DT_INIT and the DT_INIT_ARRAY entries."""
        dyn = self.dynamic()
        roots = list(dyn.get(12, []))  # DT_INIT
        if 25 in dyn and 27 in dyn:  # DT_INIT_ARRAY, DT_INIT_ARRAYSZ
            start, size = dyn[25][0], dyn[27][0]
            array = self._at(start, size)
            slots = {start + i: struct.unpack_from("<Q", array, i)[0] for i in range(0, size, 8)}
            for rela in (".rela.dyn",):
                if rela not in self.sections:
                    continue
                s = self.sections[rela]
                for off in range(s.offset, s.offset + s.size, 24):
                    r_offset, r_info, r_addend = struct.unpack_from("<QQq", self.data, off)
                    if r_offset in slots and r_info & 0xFFFFFFFF == 8:  # R_X86_64_RELATIVE
                        slots[r_offset] = r_addend
            roots += [v for v in slots.values() if v not in (0, 0xFFFFFFFFFFFFFFFF)]
        return roots

    def plt_targets(self) -> dict[int, int]:
        """PLT stub address -> the function it reaches when that function is defined in this
        object (calls to a library's own exported functions go through its PLT)."""
        if ".rela.plt" not in self.sections or ".dynsym" not in self.sections:
            return {}
        dynsym = self.sections[".dynsym"]
        values = [
            struct.unpack_from("<IBBHQQ", self.data, off)
            for off in range(dynsym.offset, dynsym.offset + dynsym.size, 24)
        ]
        rela = self.sections[".rela.plt"]
        if ".plt.sec" in self.sections:
            first, stride = self.sections[".plt.sec"].addr, 16
        elif ".plt" in self.sections:
            first, stride = self.sections[".plt"].addr + 16, 16
        else:
            return {}
        targets = {}
        for k, off in enumerate(range(rela.offset, rela.offset + rela.size, 24)):
            _, r_info, _ = struct.unpack_from("<QQq", self.data, off)
            index = r_info >> 32
            if index < len(values):
                _, _, _, shndx, value, _ = values[index]
                if shndx != 0 and value:
                    targets[first + stride * k] = value
        return targets

    def pointer_slots(self) -> dict[int, int]:
        """Data slot address -> the code address the dynamic linker stores there (GOT entries
        and pointer tables: R_X86_64_RELATIVE, GLOB_DAT and 64 relocations in .rela.dyn)."""
        if ".rela.dyn" not in self.sections:
            return {}
        values: list[int] = []
        if ".dynsym" in self.sections:
            dynsym = self.sections[".dynsym"]
            values = [
                struct.unpack_from("<IBBHQQ", self.data, off)[4]
                for off in range(dynsym.offset, dynsym.offset + dynsym.size, 24)
            ]
        rela = self.sections[".rela.dyn"]
        slots = {}
        for off in range(rela.offset, rela.offset + rela.size, 24):
            r_offset, r_info, addend = struct.unpack_from("<QQq", self.data, off)
            kind, index = r_info & 0xFFFFFFFF, r_info >> 32
            if kind == 8:  # RELATIVE
                slots[r_offset] = addend
            elif kind in (1, 6) and 0 < index < len(values) and values[index]:  # 64, GLOB_DAT
                slots[r_offset] = values[index] + (addend if kind == 1 else 0)
        return slots

    def _at(self, addr: int, size: int) -> bytes:
        for s in self.by_index:
            if s.addr and s.addr <= addr < s.addr + s.size and s.type != 8:  # not NOBITS
                off = s.offset + (addr - s.addr)
                return bytes(self.data[off : off + size])
        return b"\0" * size


# --------------------------------------------------------------------------------------------
# Decoding (runs in worker processes)


@functools.cache
def _feature_names() -> dict[int, str]:
    import iced_x86

    names = {v: k for k, v in vars(iced_x86.CpuidFeature).items() if not k.startswith("_")}
    return {value: FEATURES[name] for value, name in names.items() if name in FEATURES}


Decoded = tuple[int, dict[str, int], list[int], list[int], bool]


def _decode(job: tuple[str, int, int, list[tuple[int, int]]]) -> list[Decoded]:
    """Decode functions [(start, end)] of one object; per function: extension counts, the
    targets of its direct calls and jumps that leave it, the code addresses it takes
    (RIP-relative LEA, or a GOT slot it loads), and whether it executes CPUID."""
    import iced_x86

    path, text_addr, text_offset, ranges = job
    wanted = _feature_names()
    call_codes = {iced_x86.Code.CALL_REL32_64, iced_x86.Code.JMP_REL32_64}
    # A function's address, taken (LEA) or loaded from a GOT slot (MOV) relative to RIP.
    address_codes = {iced_x86.Code.LEA_R64_M, iced_x86.Code.MOV_R64_RM64}
    # TZCNT and LZCNT are encoded as REP BSF / REP BSR: CPUs without BMI1/LZCNT run them as
    # BSF/BSR instead of faulting, so compilers emit them for any target. They need nothing.
    harmless = {c for n, c in vars(iced_x86.Code).items() if n.startswith(("TZCNT_", "LZCNT_"))}
    features_of: dict[int, tuple[str, ...]] = {}
    out = []
    with Path(path).open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for start, end in ranges:
            offset = text_offset + (start - text_addr)
            decoder = iced_x86.Decoder(64, data[offset : offset + (end - start)], ip=start)
            counts: dict[str, int] = {}
            targets = []
            taken = []
            cpuid = False
            for ins in decoder:
                code = ins.code
                names = features_of.get(code)
                if names is None:
                    names = (
                        ()
                        if code in harmless
                        else tuple(wanted[f] for f in ins.cpuid_features() if f in wanted)
                    )
                    features_of[code] = names
                for name in names:
                    counts[name] = counts.get(name, 0) + 1
                if code in call_codes:
                    target = ins.near_branch_target
                    if not start <= target < end:
                        targets.append(target)
                elif code in address_codes and ins.is_ip_rel_memory_operand:
                    taken.append(ins.ip_rel_memory_address)
                elif code == iced_x86.Code.CPUID:
                    cpuid = True
            out.append((start, counts, targets, taken, cpuid))
    return out


# --------------------------------------------------------------------------------------------
# One object


def minimal(names: Iterable[str]) -> list[str]:
    """The extensions not implied by another one in the set (AVX2 without AVX, AVX512F without
    AVX2 and FMA...), TF-relevant ones in table order, then the rest."""
    present = set(names)
    table = {flag.cpuinfo: flag for flag in cpu.tf_flag_table().values()}
    implied: set[str] = set()
    for name in present:
        if name in table:
            implied |= cpu.cpuinfo_flags_for([table[name].name]) - {name}
    return [n for n in cpu.missing_flags(present, ()) if n not in implied]


def audit_object(
    path: Path,
    label: str,
    workers: int,
    declared: Iterable[str] = (),
    device_code: DeviceCodeLister | None = None,
) -> ObjectAudit:
    elf = Elf(path)
    try:
        functions = [f for f in elf.functions() if f.end > f.start]
        text = elf.sections.get(".text")
        if text is None or not functions:
            return ObjectAudit(label, 0, {}, {}, *_versions(elf), None, 0, 0)
        in_text = [f for f in functions if text.addr <= f.start < text.addr + text.size]
        roots = set(elf.init_entry_points())
        roots |= {v for k, v in elf.dynamic_symbols().items() if k.startswith("PyInit_")}
        plt = elf.plt_targets()
        slots = elf.pointer_slots()
        glibc, glibcxx = _versions(elf)
        cuda = _cuda(elf, path, device_code)
        text_addr, text_offset = text.addr, text.offset
    finally:
        elf.close()
    jobs = _chunks(str(path), text_addr, text_offset, in_text, workers)
    results: list[Decoded] = []
    if workers > 1 and len(jobs) > 1:
        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for part in pool.imap_unordered(_decode, jobs):
                results += part
    else:
        for job in jobs:
            results += _decode(job)
    names = {f.start: f.name for f in in_text}
    per_function = {start: counts for start, counts, _, _, _ in results}
    edges = {start: targets for start, _, targets, _, _ in results}
    pointers = {start: taken for start, _, _, taken, _ in results if taken}
    checks_cpu = any(cpuid for *_, cpuid in results)
    starts = sorted(per_function)
    usage: dict[str, Usage] = defaultdict(Usage)
    for start, counts in per_function.items():
        for name, n in counts.items():
            u = usage[name]
            u.instructions += n
            u.functions += 1
            u.examples.append((n, names.get(start) or f"0x{start:x}"))
    for u in usage.values():
        u.examples = sorted(u.examples, reverse=True)[:3]
    reachable = _reachable(roots, starts, edges, plt)
    baseline: dict[str, list[str]] = defaultdict(list)
    for start in reachable:
        for name in per_function.get(start, {}):
            if "runs on load" not in baseline[name]:
                baseline[name].append("runs on load")
    total = len(per_function)
    for name, u in usage.items():
        if u.functions >= PERVASIVE_MIN_FUNCTIONS and u.functions / total >= PERVASIVE_SHARE:
            baseline[name].append(f"pervasive ({u.functions / total:.0%} of functions)")
    for name in declared:
        if name in usage:
            baseline[name].append("compiled for it (manifest copts)")
    # Code whose address is taken by code that runs on load may be called through the pointer
    # right away. With a CPU check (CPUID) in the object that is the dispatch pattern; without
    # one, nothing shows that the call waits for a check, so the extensions count as unproven.
    unchecked: dict[str, list[str]] = {}
    if not checks_cpu:
        exact = set(starts)
        addresses = (slots.get(a, a) for f in reachable for a in pointers.get(f, ()))
        taken_roots = [a for a in addresses if a in exact]
        for start in _reachable(taken_roots, starts, edges, plt) - reachable:
            for name in per_function.get(start, {}):
                if name not in baseline:
                    unchecked.setdefault(name, []).append(names.get(start) or f"0x{start:x}")
    return ObjectAudit(
        path=label,
        functions=total,
        usage=dict(usage),
        baseline=dict(baseline),
        glibc=glibc,
        glibcxx=glibcxx,
        cuda=cuda,
        entry_points=len(roots),
        reachable=len(reachable),
        unchecked={name: found[:3] for name, found in sorted(unchecked.items())},
    )


def _chunks(
    path: str, text_addr: int, text_offset: int, functions: Sequence[Function], workers: int
) -> list[tuple[str, int, int, list[tuple[int, int]]]]:
    pieces = max(1, workers * 4) if len(functions) > 2000 else 1
    size = -(-len(functions) // pieces)
    return [
        (path, text_addr, text_offset, [(f.start, f.end) for f in functions[i : i + size]])
        for i in range(0, len(functions), size)
    ]


def _reachable(
    roots: Iterable[int], starts: list[int], edges: dict[int, list[int]], plt: dict[int, int]
) -> set[int]:
    def owner(address: int) -> int | None:
        address = plt.get(address, address)
        i = bisect.bisect_right(starts, address) - 1
        return starts[i] if i >= 0 else None

    seen: set[int] = set()
    todo = [f for r in roots if (f := owner(r)) is not None]
    while todo:
        start = todo.pop()
        if start in seen:
            continue
        seen.add(start)
        todo += [f for t in edges.get(start, ()) if (f := owner(t)) is not None and f not in seen]
    return seen


def _versions(elf: Elf) -> tuple[str | None, str | None]:
    def highest(prefix: str) -> str | None:
        found = [n[len(prefix) :] for n in elf.version_needs() if n.startswith(prefix)]
        numeric = [v for v in found if re.fullmatch(r"[\d.]+", v)]
        return max(numeric, key=lambda v: tuple(int(p) for p in v.split(".")), default=None)

    return highest("GLIBC_"), highest("GLIBCXX_")


def _cuda(elf: Elf, path: Path, device_code: DeviceCodeLister | None) -> dict[str, Any] | None:
    """CUDA device code in the object (a fat binary section) and its architectures."""
    if not any(name in elf.sections for name in FATBIN_SECTIONS):
        return None
    if device_code is None:
        return {"checked": False, "sass": [], "ptx": [], "note": "not checked: not listed"}
    return device_code(path)


def manylinux_tag(glibc: str | None) -> str | None:
    if glibc is None:
        return None
    major, minor = (int(p) for p in glibc.split(".")[:2])
    aliases = {(2, 5): "manylinux1", (2, 12): "manylinux2010", (2, 17): "manylinux2014"}
    tag = f"manylinux_{major}_{minor}_x86_64"
    alias = aliases.get((major, minor))
    return f"{tag} ({alias})" if alias else tag


# --------------------------------------------------------------------------------------------
# Wheels


def elf_members(archive: zipfile.ZipFile) -> list[str]:
    members = []
    for info in archive.infolist():
        if info.is_dir() or info.file_size < 64:
            continue
        name = info.filename
        if name.endswith((".so", ".pyd")) or ".so." in name or "/bin/" in name:
            with archive.open(info) as fh:
                if fh.read(4) == ELF_MAGIC:
                    members.append(name)
    return members


def audit_wheel(
    wheel: Path,
    declared: Iterable[str] = (),
    workers: int | None = None,
    device_code: DeviceCodeLister | None = None,
) -> list[ObjectAudit]:
    workers = workers or max(1, len(os.sched_getaffinity(0)))
    audits = []
    with (
        zipfile.ZipFile(wheel) as archive,
        tempfile.TemporaryDirectory(prefix="tfbuild-isa-") as tmp,
    ):
        for name in elf_members(archive):
            target = Path(tmp) / "object.so"
            with archive.open(name) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            try:
                audits.append(audit_object(target, name, workers, declared, device_code))
            except OtherMachine:
                continue  # a bundled tool for another machine: nothing of it runs here
            except (ValueError, struct.error, IndexError, KeyError, OSError) as exc:
                error = f"damaged or truncated ELF ({exc})"
                audits.append(ObjectAudit(name, 0, {}, {}, None, None, None, 0, 0, error))
            finally:
                target.unlink(missing_ok=True)
    return audits


def declared_flags(manifest: dict[str, Any] | None) -> set[str]:
    """Extensions a tfbuild-built wheel was compiled for, from its manifest's copts."""
    if not manifest:
        return set()
    by_copt = {flag.copt: name for name, flag in cpu.tf_flag_table().items()}
    names = {by_copt[c] for c in manifest.get("copts") or [] if c in by_copt}
    flags = cpu.cpuinfo_flags_for(names)
    for c in manifest.get("copts") or []:
        if c.startswith("-march=") and c[7:] in cpu.marches():
            flags |= cpu.marches()[c[7:]].flags
    return flags
