"""Reading ELF objects for the audit: sections, symbols, unwind tables (the functions), dynamic
relocations and version needs, straight from the file (mmap), for x86-64 objects."""

from __future__ import annotations

import mmap
import struct
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ELF_MAGIC = b"\x7fELF"


FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment")


_SYM = np.dtype(
    [("name", "<u4"), ("info", "u1"), ("other", "u1"), ("shndx", "<u2"), ("value", "<u8"),
     ("size", "<u8")]
)  # fmt: skip
_RELA = np.dtype([("offset", "<u8"), ("info", "<u8"), ("addend", "<i8")])


@dataclass(frozen=True)
class Functions:
    """Every function of an object, sorted by start: its extent, and where its name is in the
    string table (-1 for none; Elf.name reads it). Arrays, not objects: a large library has
    three quarters of a million functions."""

    starts: np.ndarray
    ends: np.ndarray
    names: np.ndarray

    def __len__(self) -> int:
        return len(self.starts)

    def where(self, keep: np.ndarray) -> Functions:
        return Functions(self.starts[keep], self.ends[keep], self.names[keep])


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

    def name(self, at: int) -> str | None:
        """The string at `at` in the file (a symbol's name), or None for -1."""
        return self._cstr(at) if at >= 0 else None

    def _table(self, section: Section, dtype: np.dtype) -> np.ndarray:
        count = section.size // dtype.itemsize
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=section.offset)

    def symbols(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Defined function symbols from .symtab, else .dynsym: values, sizes and where each
        name is in the file."""
        for table in (".symtab", ".dynsym"):
            if table not in self.sections:
                continue
            section = self.sections[table]
            syms = self._table(section, _SYM)
            keep = ((syms["info"] & 0xF) == 2) & (syms["shndx"] != 0) & (syms["value"] != 0)
            if keep.any():
                found = syms[keep]
                strtab = self.by_index[section.link].offset
                return (
                    found["value"].astype(np.int64),
                    found["size"].astype(np.int64),
                    found["name"].astype(np.int64) + strtab,
                )
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty

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

    def functions(self) -> Functions:
        """Every function with its extent: the unwind table (.eh_frame_hdr) and the symbols
        merged. A start the unwind table gives keeps its extent; a symbol adds its start with
        its size; each function ends at the next one's start at the latest, and one with no
        extent runs to the next start (16 bytes at the end of .text)."""
        values, sizes, names = self.symbols()
        order = np.argsort(values, kind="stable")
        values, sizes, names = values[order], sizes[order], names[order]
        last = np.ones(len(values), dtype=bool)  # of symbols at one value, the last names it
        last[:-1] = values[1:] != values[:-1]
        values, sizes, names = values[last], sizes[last], names[last]
        unwound, unwound_ends = self._eh_frame_extents()
        by_symbol = ~np.isin(values, unwound) & (sizes != 0)
        starts = np.concatenate([unwound, values[by_symbol]])
        ends = np.concatenate([unwound_ends, values[by_symbol] + sizes[by_symbol]])
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        keep = np.ones(len(starts), dtype=bool)  # a start listed twice: its last extent
        keep[:-1] = starts[1:] != starts[:-1]
        starts, ends = starts[keep], ends[keep]
        following = np.empty_like(starts)
        following[:-1] = starts[1:]
        following[-1:] = -1
        has_next = np.arange(len(starts)) < len(starts) - 1
        ends = np.where(
            has_next, np.where(ends > starts, np.minimum(ends, following), following), ends
        )
        text = self.sections.get(".text")
        if text is not None:
            short = ends <= starts
            ends = np.where(short, np.minimum(starts + 16, text.addr + text.size), ends)
        at = np.searchsorted(values, starts)
        named = (at < len(values)) & (values[np.minimum(at, max(len(values) - 1, 0))] == starts)
        name_at = np.full(len(starts), -1, dtype=np.int64)
        if len(values):
            name_at[named] = names[at[named]]
        return Functions(starts, ends, name_at)

    def _eh_frame_extents(self) -> tuple[np.ndarray, np.ndarray]:
        """Starts and ends of the functions the unwind table lists (an end equal to the start
        when its FDE cannot be read)."""
        empty = np.zeros(0, dtype=np.int64)
        if ".eh_frame_hdr" not in self.sections:
            return empty, empty
        hdr = self.sections[".eh_frame_hdr"]
        base = hdr.offset
        version, ptr_enc, count_enc, table_enc = struct.unpack_from("<BBBB", self.data, base)
        if version != 1 or ptr_enc != 0x1B or count_enc != 0x03 or table_enc != 0x3B:
            return empty, empty
        (count,) = struct.unpack_from("<I", self.data, base + 8)
        table = np.frombuffer(self.data, dtype="<i4", count=2 * count, offset=base + 12)
        starts = hdr.addr + table[0::2].astype(np.int64)
        fde_addr = hdr.addr + table[1::2].astype(np.int64)
        ends = starts.copy()
        eh = self.sections.get(".eh_frame")
        if eh is not None:
            inside = (fde_addr >= eh.addr) & (fde_addr + 16 <= eh.addr + eh.size)
            offsets = eh.offset + (fde_addr[inside] - eh.addr)
            raw = np.frombuffer(self.data, dtype=np.uint8)

            def word(at: np.ndarray, dtype: str) -> np.ndarray:
                picked: np.ndarray = raw[at[:, None] + np.arange(4)].copy()
                words: np.ndarray = picked.view(dtype).reshape(-1).astype(np.int64)
                return words

            length = word(offsets, "<u4")
            pc_begin = word(offsets + 8, "<i4")
            pc_range = word(offsets + 12, "<u4")
            fdes = fde_addr[inside]
            good = (length != 0xFFFFFFFF) & (fdes + 8 + pc_begin == starts[inside])
            idx = np.flatnonzero(inside)[good]
            ends[idx] = starts[idx] + pc_range[good]
        return starts, ends

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

    def pointer_slots(self, addresses: Iterable[int]) -> dict[int, int]:
        """Of these data slot addresses, those the dynamic linker stores a code address in
        (GOT entries and pointer tables: R_X86_64_RELATIVE, GLOB_DAT and 64 relocations in
        .rela.dyn), with that address. Looked up for the slots asked about only: a large
        library has millions of relocations."""
        wanted = np.fromiter(set(addresses), dtype=np.uint64)
        if ".rela.dyn" not in self.sections or not len(wanted):
            return {}
        relocs = self._table(self.sections[".rela.dyn"], _RELA)
        relocs = relocs[np.isin(relocs["offset"], wanted)]
        values: np.ndarray | None = None
        if ".dynsym" in self.sections:
            values = self._table(self.sections[".dynsym"], _SYM)["value"]
        slots = {}
        for r_offset, r_info, addend in relocs.tolist():
            kind, index = r_info & 0xFFFFFFFF, r_info >> 32
            if kind == 8:  # RELATIVE
                slots[r_offset] = addend
            elif kind in (1, 6) and values is not None and 0 < index < len(values):
                value = int(values[index])
                if value:  # 64, GLOB_DAT
                    slots[r_offset] = value + (addend if kind == 1 else 0)
        return slots

    def _at(self, addr: int, size: int) -> bytes:
        for s in self.by_index:
            if s.addr and s.addr <= addr < s.addr + s.size and s.type != 8:  # not NOBITS
                off = s.offset + (addr - s.addr)
                return bytes(self.data[off : off + size])
        return b"\0" * size
