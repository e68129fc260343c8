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
architectures of CUDA device code (SASS and PTX) are listed by cuobjdump (tfbuild.audit.cuobjdump).
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

from tfbuild.audit.elf import ELF_MAGIC, FATBIN_SECTIONS, Elf, Function, OtherMachine
from tfbuild.machine import cpu

ANALYSIS_VERSION = 4
PERVASIVE_SHARE = 0.05
PERVASIVE_MIN_FUNCTIONS = 20

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
