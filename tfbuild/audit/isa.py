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

import functools
import multiprocessing
import os
import re
import shutil
import struct
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tfbuild.audit.elf import ELF_MAGIC, FATBIN_SECTIONS, Elf, Functions, OtherMachine
from tfbuild.audit.model import CudaListing
from tfbuild.config.tensorflow import floor_flags
from tfbuild.machine import cpu
from tfbuild.store import SourceBuild

ANALYSIS_VERSION = 4
PERVASIVE_SHARE = 0.05
PERVASIVE_MIN_FUNCTIONS = 20

DeviceCodeLister = Callable[[Path], CudaListing]
Progress = Callable[[int, int, str], None]
"""Told before the first object and after each: bytes of objects audited, of how many, the
object just done."""
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
    cuda: CudaListing | None
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


_CPUID = ("",)
"""What the action table holds for the CPUID instruction itself."""


@functools.cache
def _actions() -> tuple[dict[int, tuple[str, ...]], Any]:
    """Per instruction code, the extensions it counts as (filled as codes are met; CPUID is
    marked), and the decoder module."""
    import iced_x86

    # TZCNT and LZCNT are encoded as REP BSF / REP BSR: CPUs without BMI1/LZCNT run them as
    # BSF/BSR instead of faulting, so compilers emit them for any target. They need nothing.
    actions: dict[int, tuple[str, ...]] = {
        c: () for n, c in vars(iced_x86.Code).items() if n.startswith(("TZCNT_", "LZCNT_"))
    }
    actions[iced_x86.Code.CPUID] = _CPUID
    return actions, iced_x86


Counted = tuple[list[tuple[int, dict[str, int]]], bool]


@dataclass(frozen=True)
class _Job:
    """The object being counted: its path, where .text is, its functions."""

    path: str
    text_addr: int
    text_offset: int
    functions: Functions


_JOB: list[_Job] = []
"""The object being counted, set before the worker processes fork (so a job is only a slice of
the function table), and cleared after."""


def _count(job: tuple[int, int]) -> Counted:
    """The extensions each function of a slice of the object uses (functions that use none
    are left out), and whether any of them executes CPUID. Each function is read on its own
    (pread), so a process holds one function's bytes, never the object."""
    (job_of,) = _JOB
    path, text_addr, text_offset = job_of.path, job_of.text_addr, job_of.text_offset
    functions = job_of.functions
    lo, hi = job
    ranges = zip(functions.starts[lo:hi].tolist(), functions.ends[lo:hi].tolist(), strict=True)
    actions, iced_x86 = _actions()
    wanted = _feature_names()
    out: list[tuple[int, dict[str, int]]] = []
    cpuid = False
    fd = os.open(path, os.O_RDONLY)
    try:
        for start, end in ranges:
            data = os.pread(fd, end - start, text_offset + (start - text_addr))
            counts: dict[str, int] | None = None
            for ins in iced_x86.Decoder(64, data, ip=start):
                code = ins.code
                names = actions.get(code)
                if names is None:
                    names = tuple(wanted[f] for f in ins.cpuid_features() if f in wanted)
                    actions[code] = names
                if not names:
                    continue
                if names is _CPUID:
                    cpuid = True
                    continue
                if counts is None:
                    counts = {}
                for name in names:
                    counts[name] = counts.get(name, 0) + 1
            if counts:
                out.append((start, counts))
    finally:
        os.close(fd)
    return out, cpuid


class _Calls:
    """The direct calls and jumps leaving a function, and the code addresses it takes
    (RIP-relative LEA, or a GOT slot it loads): decoded when first asked for, which the walk
    from the load-time entry points does for the few functions it reaches."""

    def __init__(self, path: Path, text_addr: int, text_offset: int, functions: Functions):
        self.fd = os.open(path, os.O_RDONLY)
        self.text_addr, self.text_offset, self.functions = text_addr, text_offset, functions
        self.known: dict[int, tuple[list[int], list[int]]] = {}

    def starts_at(self, address: int) -> bool:
        """Whether a function starts at this address."""
        starts = self.functions.starts
        i = int(np.searchsorted(starts, address))
        return i < len(starts) and int(starts[i]) == address

    def close(self) -> None:
        os.close(self.fd)

    def of(self, start: int) -> tuple[list[int], list[int]]:
        found = self.known.get(start)
        if found is None:
            i = int(np.searchsorted(self.functions.starts, start))
            end = int(self.functions.ends[i])
            found = self.known[start] = self._decode(start, end)
        return found

    def _decode(self, start: int, end: int) -> tuple[list[int], list[int]]:
        _, iced_x86 = _actions()
        code = iced_x86.Code
        jumps = {code.CALL_REL32_64, code.JMP_REL32_64}
        loads = {code.LEA_R64_M, code.MOV_R64_RM64}
        data = os.pread(self.fd, end - start, self.text_offset + (start - self.text_addr))
        targets, taken = [], []
        for ins in iced_x86.Decoder(64, data, ip=start):
            if ins.code in jumps:
                target = ins.near_branch_target
                if not start <= target < end:
                    targets.append(target)
            elif ins.code in loads and ins.is_ip_rel_memory_operand:
                taken.append(ins.ip_rel_memory_address)
        return targets, taken


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
    declared: Mapping[str, str] | None = None,
    device_code: DeviceCodeLister | None = None,
) -> ObjectAudit:
    elf = Elf(path)
    try:
        return _audit_elf(elf, path, label, workers, declared or {}, device_code)
    finally:
        elf.close()


def _audit_elf(
    elf: Elf,
    path: Path,
    label: str,
    workers: int,
    declared: Mapping[str, str],
    device_code: DeviceCodeLister | None,
) -> ObjectAudit:
    every = elf.functions()
    every = every.where(every.ends > every.starts)
    text = elf.sections.get(".text")
    if text is None or not len(every):
        return ObjectAudit(label, 0, {}, {}, *_versions(elf), None, 0, 0)
    in_text = every.where((every.starts >= text.addr) & (every.starts < text.addr + text.size))
    del every
    jobs = _chunks(len(in_text), workers)
    used: list[tuple[int, dict[str, int]]] = []
    checks_cpu = False

    def tables() -> tuple[set[int], dict[int, int], tuple[str | None, str | None], Any]:
        roots = set(elf.init_entry_points())
        roots |= {v for k, v in elf.dynamic_symbols().items() if k.startswith("PyInit_")}
        return roots, elf.plt_targets(), _versions(elf), _cuda(elf, path, device_code)

    _JOB[:] = [_Job(str(path), text.addr, text.offset, in_text)]
    try:
        if workers > 1 and len(jobs) > 1:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                counted = pool.imap_unordered(_count, jobs)
                # the tables the walk needs are read while the workers decode
                roots, plt, (glibc, glibcxx), cuda = tables()
                for part, cpuid in counted:
                    used += part
                    checks_cpu = checks_cpu or cpuid
        else:
            roots, plt, (glibc, glibcxx), cuda = tables()
            for job in jobs:
                part, cpuid = _count(job)
                used += part
                checks_cpu = checks_cpu or cpuid
    finally:
        _JOB.clear()

    def name_of(start: int) -> str:
        i = int(np.searchsorted(in_text.starts, start))
        return elf.name(int(in_text.names[i])) or f"0x{start:x}"

    per_function = dict(used)
    usage: dict[str, Usage] = defaultdict(Usage)
    heaviest: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for start, counts in used:
        for name, n in counts.items():
            u = usage[name]
            u.instructions += n
            u.functions += 1
            heaviest[name].append((n, start))
    for name, u in usage.items():
        # the three heaviest users, ties broken by name (only the tied ones are read)
        sizes = sorted((n for n, _ in heaviest[name]), reverse=True)
        floor = sizes[min(2, len(sizes) - 1)]
        tied = [(n, name_of(s)) for n, s in heaviest[name] if n >= floor]
        u.examples = sorted(tied, reverse=True)[:3]
    calls = _Calls(path, text.addr, text.offset, in_text)
    try:
        reachable = _reachable(roots, in_text, calls, plt)
        baseline: dict[str, list[str]] = defaultdict(list)
        for start in reachable:
            for name in per_function.get(start, {}):
                if "runs on load" not in baseline[name]:
                    baseline[name].append("runs on load")
        total = len(in_text)
        for name, u in usage.items():
            if u.functions >= PERVASIVE_MIN_FUNCTIONS and u.functions / total >= PERVASIVE_SHARE:
                baseline[name].append(f"pervasive ({u.functions / total:.0%} of functions)")
        for name, why in declared.items():
            if name in usage:
                baseline[name].append(f"compiled for it ({why})")
        # Code whose address is taken by code that runs on load may be called through the
        # pointer right away. With a CPU check (CPUID) in the object that is the dispatch
        # pattern; without one, nothing shows that the call waits for a check, so the
        # extensions count as unproven.
        unchecked: dict[str, list[str]] = {}
        if not checks_cpu:
            taken = [a for f in reachable for a in calls.of(f)[1]]
            slots = elf.pointer_slots(taken)
            addresses = [slots.get(a, a) for a in taken]
            taken_roots = [a for a in addresses if calls.starts_at(a)]
            for start in _reachable(taken_roots, in_text, calls, plt) - reachable:
                for name in per_function.get(start, {}):
                    if name not in baseline:
                        unchecked.setdefault(name, []).append(name_of(start))
    finally:
        calls.close()
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


def _chunks(count: int, workers: int) -> list[tuple[int, int]]:
    """Slices of the function table, a few per worker for a large object."""
    pieces = max(1, workers * 4) if count > 2000 else 1
    size = -(-count // pieces)
    return [(i, min(count, i + size)) for i in range(0, count, size)]


def _reachable(
    roots: Iterable[int], functions: Functions, calls: _Calls, plt: dict[int, int]
) -> set[int]:
    """The functions reached from `roots` by direct calls and jumps (through the PLT)."""
    starts = functions.starts

    def owner(address: int) -> int | None:
        address = plt.get(address, address)
        i = int(np.searchsorted(starts, address, side="right")) - 1
        return int(starts[i]) if i >= 0 else None

    seen: set[int] = set()
    todo = [f for r in roots if (f := owner(r)) is not None]
    while todo:
        start = todo.pop()
        if start in seen:
            continue
        seen.add(start)
        todo += [f for t in calls.of(start)[0] if (f := owner(t)) is not None and f not in seen]
    return seen


def _versions(elf: Elf) -> tuple[str | None, str | None]:
    def highest(prefix: str) -> str | None:
        found = [n[len(prefix) :] for n in elf.version_needs() if n.startswith(prefix)]
        numeric = [v for v in found if re.fullmatch(r"[\d.]+", v)]
        return max(numeric, key=lambda v: tuple(int(p) for p in v.split(".")), default=None)

    return highest("GLIBC_"), highest("GLIBCXX_")


def _cuda(elf: Elf, path: Path, device_code: DeviceCodeLister | None) -> CudaListing | None:
    """CUDA device code in the object (a fat binary section) and its architectures."""
    if not any(name in elf.sections for name in FATBIN_SECTIONS):
        return None
    if device_code is None:
        return CudaListing(False, (), (), "not checked: not listed")
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
    declared: Mapping[str, str] | None = None,
    workers: int | None = None,
    device_code: DeviceCodeLister | None = None,
    progress: Progress | None = None,
) -> list[ObjectAudit]:
    """Every ELF object of the wheel audited, in archive order; `progress` is told after each
    object how many bytes of objects are done, of how many."""
    workers = workers or max(1, len(os.sched_getaffinity(0)))
    audits = []
    with (
        zipfile.ZipFile(wheel) as archive,
        tempfile.TemporaryDirectory(prefix="tfbuild-isa-") as tmp,
        ThreadPoolExecutor(max_workers=1) as unpacker,
    ):
        members = elf_members(archive)
        sizes = [archive.getinfo(name).file_size for name in members]
        done = 0
        if progress is not None:
            progress(0, sum(sizes), "")

        def extract(i: int) -> Path:
            target = Path(tmp) / f"object-{i}.so"
            with archive.open(members[i]) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            return target

        # The next object is unpacked (zlib lets go of the interpreter) while this one is
        # decoded by the workers.
        pending = unpacker.submit(extract, 0) if members else None
        for i, name in enumerate(members):
            assert pending is not None
            target = pending.result()
            pending = unpacker.submit(extract, i + 1) if i + 1 < len(members) else None
            try:
                audits.append(audit_object(target, name, workers, declared, device_code))
            except OtherMachine:
                continue  # a bundled tool for another machine: nothing of it runs here
            except (ValueError, struct.error, IndexError, KeyError, OSError) as exc:
                error = f"damaged or truncated ELF ({exc})"
                audits.append(ObjectAudit(name, 0, {}, {}, None, None, None, 0, 0, error))
            finally:
                target.unlink(missing_ok=True)
                done += sizes[i]
                if progress is not None:
                    progress(done, sum(sizes), name)
        if pending is not None:
            pending.result().unlink(missing_ok=True)
    return audits


def declared_flags(build: SourceBuild | None) -> dict[str, str]:
    """Extensions a tfbuild-built wheel was compiled for, each with where its manifest says so:
    its copts (-mavx2, or an -march=), or the release's own floor when it was built with
    --config=avx_linux (AVX, and F16C from 2.21)."""
    if build is None:
        return {}
    by_copt = {flag.copt: name for name, flag in cpu.tf_flag_table().items()}
    copts = build.copts
    why: dict[str, str] = {}
    if "avx_linux" in build.configs:
        release = build.tensorflow or ""
        for flag in cpu.cpuinfo_flags_for(set(floor_flags(release))):
            why[flag] = f"TensorFlow {release}'s floor, --config=avx_linux in the manifest"
    for flag in cpu.cpuinfo_flags_for({by_copt[c] for c in copts if c in by_copt}):
        why[flag] = "manifest copts"
    for c in copts:
        if c.startswith("-march=") and c[7:] in cpu.marches():
            for flag in cpu.marches()[c[7:]].flags:
                why.setdefault(flag, f"{c} in the manifest copts")
    return why
