"""Reading ELF objects for the audit: sections, symbols, unwind tables (the functions), dynamic
relocations and version needs, straight from the file (mmap), for x86-64 objects."""

from __future__ import annotations

import mmap
import struct
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"


FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment")


@dataclass(frozen=True)
class Function:
    start: int
    end: int
    name: str | None


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
