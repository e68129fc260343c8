"""The ELF reader on real objects: a library compiled here with gcc, the interpreter running
the tests and an extension module of its installation. Every section, dynamic entry, needed
library, version need, exported function, function extent, load-time entry point, PLT stub and
relocated pointer it reads is held to what binutils' readelf and objdump say of the same file."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from support.env import require

from tfbuild.audit.elf import Elf, OtherMachine

GCC = shutil.which("gcc")
READELF = shutil.which("readelf")
OBJDUMP = shutil.which("objdump")
STRIP = shutil.which("strip")

LIBRARY = r"""
#include <math.h>
int exported_add(int x) { return x + 1; }
static int hidden_twice(int x) { return 2 * x; }
/* -O0 and default visibility: the call to exported_add goes through this library's PLT */
int calls_through_plt(int x) { return exported_add(x) + hidden_twice(x); }
/* two slots the dynamic linker fills: an exported function (R_X86_64_64 against its symbol)
   and a static one (R_X86_64_RELATIVE) */
int (*table[2])(int) = {exported_add, hidden_twice};
static int ran;
__attribute__((constructor)) static void on_load(void) { ran = 1; }
double uses_libm(double x) { return cos(x); }
"""

MINE = ("exported_add", "hidden_twice", "calls_through_plt", "on_load", "uses_libm")
"""The functions LIBRARY defines."""

SECTION_TYPES = {
    "NULL": 0, "PROGBITS": 1, "SYMTAB": 2, "STRTAB": 3, "RELA": 4, "HASH": 5, "DYNAMIC": 6,
    "NOTE": 7, "NOBITS": 8, "REL": 9, "DYNSYM": 11, "INIT_ARRAY": 14, "FINI_ARRAY": 15,
    "GNU_HASH": 0x6FFFFFF6, "VERDEF": 0x6FFFFFFD, "VERNEED": 0x6FFFFFFE, "VERSYM": 0x6FFFFFFF,
}  # fmt: skip
"""sh_type of the section types readelf names (the ELF specification's and GNU's values)."""


@pytest.fixture(autouse=True)
def _binutils() -> None:
    """gcc compiles the library; readelf and objdump say what is in it, strip strips it."""
    require(GCC is not None, "gcc is not installed")
    require(None not in (READELF, OBJDUMP, STRIP), "binutils is not installed")


def compile_library(folder: Path, name: str, *flags: str) -> Path:
    source = folder / "library.c"
    source.write_text(LIBRARY)
    out = folder / name
    assert GCC is not None
    subprocess.run(
        [GCC, "-shared", "-fPIC", "-O0", *flags, str(source), "-o", str(out),
         "-Wl,--no-as-needed", "-lm"],
        check=True, timeout=120,
    )  # fmt: skip
    return out


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require(GCC is not None, "gcc is not installed")
    return compile_library(tmp_path_factory.mktemp("elf"), "library.so")


def objects(library: Path) -> list[Path]:
    """Real x86-64 objects: the compiled library, the interpreter, one of its extension
    modules, and libpython when the interpreter links it."""
    found = [library, Path(os.path.realpath(sys.executable))]
    spec = importlib.util.find_spec("_ctypes")
    if spec is not None and spec.origin and spec.origin.endswith(".so"):
        found.append(Path(spec.origin))
    shared = sysconfig.get_config_var("LDLIBRARY") or ""
    libpython = Path(sysconfig.get_config_var("LIBDIR") or "/nonexistent") / shared
    if shared.endswith(".so") and libpython.is_file():
        found.append(libpython)
    return found


@pytest.fixture(params=["compiled", "interpreter", "extension", "libpython"])
def elf_path(request: pytest.FixtureRequest, library: Path) -> Path:
    kinds = ["compiled", "interpreter", "extension", "libpython"]
    found = objects(library)
    index = kinds.index(request.param)
    if index >= len(found):
        pytest.skip(f"this Python has no {request.param} object")
    return found[index]


def readelf(*args: str) -> str:
    assert READELF is not None
    return subprocess.run(
        [READELF, "-W", *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout


def readelf_sections(path: Path) -> list[dict[str, object]]:
    """readelf -S: each section header in order (name, type when readelf names a known one,
    address, offset, size, entry size, link)."""
    sections: list[dict[str, object]] = []
    for line in readelf("-S", str(path)).splitlines():
        found = re.match(r"\s*\[\s*(\d+)\](.*)$", line)
        if not found or not re.search(r"[0-9a-f]{16}", found.group(2)):
            continue  # the column titles
        tokens = found.group(2).split()
        at = next(i for i, t in enumerate(tokens) if i >= 1 and re.fullmatch(r"[0-9a-f]{16}", t))
        name = " ".join(tokens[: at - 1])
        type_name = tokens[at - 1]
        offset, size, entsize, *rest = tokens[at + 1 :]
        link = rest[-3]
        sections.append({
            "name": name,
            "type": SECTION_TYPES.get(type_name),
            "addr": int(tokens[at], 16),
            "offset": int(offset, 16),
            "size": int(size, 16),
            "entsize": int(entsize, 16),
            "link": int(link),
        })  # fmt: skip
    return sections


def readelf_dynamic(path: Path) -> tuple[dict[int, list[int]], list[str], set[int]]:
    """readelf -d: the numeric values of each tag, the needed libraries in order, and every tag
    listed (but the closing NULL)."""
    values: dict[int, list[int]] = {}
    needed: list[str] = []
    tags: set[int] = set()
    for line in readelf("-d", str(path)).splitlines():
        found = re.match(r"\s*0x([0-9a-f]+)\s+\((\w+)\)\s+(.*)$", line)
        if not found or found.group(2) == "NULL":
            continue
        tag, said = int(found.group(1), 16), found.group(3).strip()
        tags.add(tag)
        if library_name := re.fullmatch(r"Shared library: \[(.*)\]", said):
            needed.append(library_name.group(1))
        elif re.fullmatch(r"0x[0-9a-f]+", said):
            values.setdefault(tag, []).append(int(said, 16))
        elif number := re.fullmatch(r"(\d+)( \(bytes\))?", said):
            values.setdefault(tag, []).append(int(number.group(1)))
    return values, needed, tags


def readelf_version_needs(path: Path) -> list[str]:
    """readelf -V: the version names of the version needs section, in order."""
    names: list[str] = []
    inside = False
    for line in readelf("-V", str(path)).splitlines():
        if line.startswith("Version "):  # a section's title: the needs, or another
            inside = line.startswith("Version needs section")
        elif inside and (found := re.search(r"\bName: (\S+)\s+Flags:", line)):
            names.append(found.group(1))
    return names


def readelf_symbols(path: Path, table: str) -> dict[str, tuple[int, int, str, str]]:
    """readelf -s: each named symbol of `table` (.symtab or .dynsym): value, size, type and
    section index (UND for undefined), the version suffix left out."""
    out: dict[str, tuple[int, int, str, str]] = {}
    inside = False
    for line in readelf("--syms", str(path)).splitlines():
        if line.startswith("Symbol table"):
            inside = f"'{table}'" in line
            continue
        fields = line.split()
        if inside and len(fields) == 8 and re.fullmatch(r"\d+:", fields[0]):
            _, value, size, kind, _, _, ndx, name = fields
            out[name.split("@")[0]] = (int(value, 16), int(size, 0), kind, ndx)
    return out


def fde_ranges(path: Path) -> list[tuple[int, int]]:
    """readelf --debug-dump=frames: each FDE's pc range (start, end) in .eh_frame."""
    text = readelf("--debug-dump=frames", str(path))
    return [
        (int(a, 16), int(b, 16))
        for a, b in re.findall(r"FDE .*pc=([0-9a-f]+)\.\.([0-9a-f]+)", text)
    ]


def test_every_section_header_is_read_as_readelf_lists_it(elf_path: Path) -> None:
    expected = readelf_sections(elf_path)
    elf = Elf(elf_path)
    try:
        assert len(elf.by_index) == len(expected)
        read = [
            {"name": s.name, "type": s.type if expected[i]["type"] is not None else None,
             "addr": s.addr, "offset": s.offset, "size": s.size, "entsize": s.entsize,
             "link": s.link}
            for i, s in enumerate(elf.by_index)
        ]  # fmt: skip
        assert read == expected
        assert {".text", ".dynamic", ".dynsym"} <= set(elf.sections)
        assert elf.sections[".dynsym"].type == 11 and elf.sections[".dynsym"].entsize == 24
    finally:
        elf.close()


def test_dynamic_entries_and_needed_libraries_are_those_readelf_lists(elf_path: Path) -> None:
    """Each tag's values, in order; DT_NEEDED's values are offsets into .dynstr, which name the
    libraries the object needs."""
    values, needed, tags = readelf_dynamic(elf_path)
    elf = Elf(elf_path)
    try:
        dynamic = elf.dynamic()
        assert set(dynamic) == tags
        assert {tag: dynamic[tag] for tag in values} == values
        dynstr = elf.sections[".dynstr"].offset
        assert [elf.name(dynstr + at) for at in dynamic[1]] == needed
        assert "libc.so.6" in needed
    finally:
        elf.close()


def test_the_compiled_library_needs_libm_and_libc(library: Path) -> None:
    """Independently of readelf: the library is linked with -lm and calls cos."""
    elf = Elf(library)
    try:
        dynstr = elf.sections[".dynstr"].offset
        assert sorted(elf.name(dynstr + at) or "" for at in elf.dynamic()[1]) == [
            "libc.so.6",
            "libm.so.6",
        ]
        # cos from libm and __cxa_finalize from libc, each at glibc's first x86-64 version
        assert elf.version_needs() == ["GLIBC_2.2.5", "GLIBC_2.2.5"]
    finally:
        elf.close()


def test_version_needs_are_those_readelf_lists(elf_path: Path) -> None:
    expected = readelf_version_needs(elf_path)
    elf = Elf(elf_path)
    try:
        assert elf.version_needs() == expected
        assert any(name.startswith("GLIBC_") for name in expected)
    finally:
        elf.close()


def test_dynamic_symbols_are_the_functions_the_object_exports(elf_path: Path) -> None:
    """Defined FUNC symbols of .dynsym at a non-zero address; undefined ones (cos, imported)
    and data (table) are not functions it exports."""
    expected = {
        name: value
        for name, (value, _, kind, ndx) in readelf_symbols(elf_path, ".dynsym").items()
        if kind == "FUNC" and ndx != "UND" and value
    }
    assert expected  # every one of these objects exports a function (main, PyInit_...)
    elf = Elf(elf_path)
    try:
        assert elf.dynamic_symbols() == expected
    finally:
        elf.close()


def test_the_compiled_library_exports_its_three_global_functions(library: Path) -> None:
    symbols = readelf_symbols(library, ".symtab")
    elf = Elf(library)
    try:
        exported = elf.dynamic_symbols()
        assert sorted(exported) == ["calls_through_plt", "exported_add", "uses_libm"]
        assert exported["exported_add"] == symbols["exported_add"][0]
    finally:
        elf.close()


def test_functions_take_extents_from_the_unwind_table_and_names_from_the_symbols(
    library: Path,
) -> None:
    """Every FDE's range is a function (the PLT's included, which has no symbol); each
    function LIBRARY defines starts at its symbol, ends where its size says, and is named."""
    symbols = readelf_symbols(library, ".symtab")
    elf = Elf(library)
    try:
        functions = elf.functions()
        extents = list(zip(functions.starts.tolist(), functions.ends.tolist(), strict=True))
        assert extents == sorted(fde_ranges(library))
        names = {start: elf.name(int(at)) for start, at in zip(
            functions.starts.tolist(), functions.names.tolist(), strict=True)}  # fmt: skip
        for name in MINE:
            value, size, kind, _ = symbols[name]
            assert kind == "FUNC" and (value, value + size) in extents, name
            assert names[value] == name
        plt = elf.sections[".plt"].addr
        assert names[plt] is None  # unwound, but no symbol names it
        assert len(functions) == len(extents)
    finally:
        elf.close()


def test_a_stripped_library_keeps_its_functions_and_names_only_the_exported(
    library: Path, tmp_path: Path
) -> None:
    """Without .symtab the names come from .dynsym: the static functions are still found
    (the unwind table lists them) but have no name."""
    stripped = tmp_path / "stripped.so"
    assert STRIP is not None
    subprocess.run([STRIP, "--strip-all", "-o", str(stripped), str(library)], check=True)
    assert ".symtab" not in readelf("-S", str(stripped))
    symbols = readelf_symbols(library, ".symtab")
    elf = Elf(stripped)
    try:
        assert ".symtab" not in elf.sections
        functions = elf.functions()
        names = {start: elf.name(int(at)) for start, at in zip(
            functions.starts.tolist(), functions.names.tolist(), strict=True)}  # fmt: skip
        assert {symbols[n][0]: names[symbols[n][0]] for n in MINE} == {
            symbols["exported_add"][0]: "exported_add",
            symbols["hidden_twice"][0]: None,
            symbols["calls_through_plt"][0]: "calls_through_plt",
            symbols["on_load"][0]: None,
            symbols["uses_libm"][0]: "uses_libm",
        }
        values, sizes, _ = elf.symbols()  # .dynsym's defined functions
        assert sorted(zip(values.tolist(), sizes.tolist(), strict=True)) == sorted(
            symbols[n][:2] for n in ("exported_add", "calls_through_plt", "uses_libm")
        )
    finally:
        elf.close()


def test_the_loader_calls_dt_init_and_every_init_array_entry(library: Path) -> None:
    """DT_INIT, and the INIT_ARRAY slots as the dynamic linker fills them (R_X86_64_RELATIVE
    addends): the constructor on_load among them."""
    values, _, _ = readelf_dynamic(library)
    (init,), (array,), (array_size,) = values[12], values[25], values[27]
    relocations = readelf("-r", str(library))
    filled = [
        int(addend, 16)
        for offset, addend in re.findall(
            r"^([0-9a-f]{16})\s+[0-9a-f]{16}\s+R_X86_64_RELATIVE\s+([0-9a-f]+)$",
            relocations,
            re.MULTILINE,
        )
        if array <= int(offset, 16) < array + array_size
    ]
    assert len(filled) == array_size // 8 == 2
    on_load = readelf_symbols(library, ".symtab")["on_load"][0]
    elf = Elf(library)
    try:
        entries = elf.init_entry_points()
        assert sorted(entries) == sorted([init, *filled])
        assert on_load in entries
    finally:
        elf.close()


@pytest.mark.parametrize(
    ("flags", "stubs"),
    [((), ".plt"), (("-fcf-protection=full", "-Wl,-z,ibtplt"), ".plt.sec")],
    ids=["plt", "plt.sec"],
)
def test_a_call_through_the_plt_reaches_the_function_defined_here(
    tmp_path: Path, flags: tuple[str, ...], stubs: str
) -> None:
    """The stub objdump names exported_add@plt leads to exported_add; cos's stub leads out of
    the library and is not listed. With IBT's second PLT (.plt.sec) the stubs are there."""
    library = compile_library(tmp_path, "library.so", *flags)
    assert OBJDUMP is not None
    disassembly = subprocess.run(
        [OBJDUMP, "-d", str(library)], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    stub = {
        name: int(address, 16)
        for address, name in re.findall(r"^([0-9a-f]+) <(\w+)@plt>:$", disassembly, re.MULTILINE)
    }
    symbols = readelf_symbols(library, ".symtab")
    elf = Elf(library)
    try:
        assert stubs in elf.sections
        assert elf.plt_targets() == {stub["exported_add"]: symbols["exported_add"][0]}
        assert stub["cos"] not in elf.plt_targets()
    finally:
        elf.close()


def test_pointer_slots_hold_the_addresses_the_dynamic_linker_stores(library: Path) -> None:
    """The two slots of `table`: exported_add by an R_X86_64_64 relocation against its symbol,
    hidden_twice by a RELATIVE one. A slot with no relocation, and a GOT slot of a symbol
    defined elsewhere (address 0 here), are left out."""
    symbols = readelf_symbols(library, ".symtab")
    table = symbols["table"][0]
    got = readelf_sections(library)
    (got_section,) = [s for s in got if s["name"] == ".got"]
    got_slot = got_section["addr"]
    assert isinstance(got_slot, int)
    elf = Elf(library)
    try:
        assert elf.pointer_slots([table, table + 8, table + 16, got_slot]) == {
            table: symbols["exported_add"][0],
            table + 8: symbols["hidden_twice"][0],
        }
        assert elf.pointer_slots([]) == {}
    finally:
        elf.close()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({0: b"\x7fELG"}, "not a 64-bit little-endian ELF object"),
        ({4: b"\x01"}, "not a 64-bit little-endian ELF object"),  # ELFCLASS32
        ({5: b"\x02"}, "not a 64-bit little-endian ELF object"),  # big-endian
        ({18: b"\xb7\x00"}, "not x86-64 code (machine 183)"),  # EM_AARCH64
    ],
    ids=["magic", "32-bit", "big-endian", "aarch64"],
)
def test_an_object_of_another_kind_or_machine_is_refused(
    library: Path, tmp_path: Path, change: dict[int, bytes], said: str
) -> None:
    data = bytearray(library.read_bytes())
    for at, replacement in change.items():
        data[at : at + len(replacement)] = replacement
    other = tmp_path / "other.so"
    other.write_bytes(bytes(data))
    with pytest.raises(OtherMachine, match=re.escape(f"other.so: {said}")):
        Elf(other)
