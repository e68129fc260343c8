"""The audit report of a wheel (``tfbuild.inspect/1``): what its code needs of a machine and
why, as frozen records. The audit cache and `tfbuild inspect --format json` hold the same JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from tfbuild.store import Manifest

SCHEMA = "tfbuild.inspect/1"

Json = Mapping[str, Any]
Reasons = Mapping[str, tuple[str, ...]]
"""extension -> why (one line per object or function)."""


def _reasons(data: Json) -> dict[str, tuple[str, ...]]:
    return {flag: tuple(why) for flag, why in data.items()}


def _lists(reasons: Reasons) -> dict[str, list[str]]:
    return {flag: list(why) for flag, why in reasons.items()}


@dataclass(frozen=True)
class CudaListing:
    """The CUDA architectures of one object's device code, as cuobjdump lists them; `checked`
    False (and a note why) when they could not be listed."""

    checked: bool
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    note: str | None

    @classmethod
    def from_json(cls, data: Json) -> CudaListing:
        return cls(data["checked"], tuple(data["sass"]), tuple(data["ptx"]), data.get("note"))

    def to_json(self) -> dict[str, Any]:
        return {"checked": self.checked, "sass": list(self.sass), "ptx": list(self.ptx),
                "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class CudaTool:
    """The cuobjdump that listed the device code: its path, the release it reports (None when
    it would not say) and where it came from (``PATH``, or the distribution and version from
    the package index)."""

    path: str
    version: str | None
    source: str

    @classmethod
    def from_json(cls, data: Json) -> CudaTool:
        return cls(str(data["path"]), data.get("version"), str(data["source"]))

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "version": self.version, "source": self.source}


@dataclass(frozen=True)
class CudaSummary:
    """Every object's device code together: the union of their architectures, how many
    objects have device code, the cuobjdump that listed them and, when some object could not be
    listed, why (`checked` False, `note`)."""

    objects: int
    checked: bool
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    tool: CudaTool | None
    """The cuobjdump used."""
    note: str | None

    @classmethod
    def from_json(cls, data: Json) -> CudaSummary:
        tool = CudaTool.from_json(data["tool"]) if data.get("tool") else None
        return cls(data["objects"], data["checked"], tuple(data["sass"]), tuple(data["ptx"]),
                   tool, data.get("note"))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        tool = self.tool.to_json() if self.tool else None
        return {"objects": self.objects, "checked": self.checked, "sass": list(self.sass),
                "ptx": list(self.ptx), "tool": tool, "note": self.note}  # fmt: skip


@dataclass(frozen=True)
class ExtensionUse:
    """How much of one object's code uses one extension."""

    instructions: int
    functions: int
    share: float
    """Of the object's functions."""
    examples: tuple[str, ...]
    """Functions using it (demangled)."""

    @classmethod
    def from_json(cls, data: Json) -> ExtensionUse:
        return cls(data["instructions"], data["functions"], data["share"],
                   tuple(data["examples"]))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"instructions": self.instructions, "functions": self.functions,
                "share": self.share, "examples": list(self.examples)}  # fmt: skip


@dataclass(frozen=True)
class ObjectFindings:
    """One ELF object of the wheel: its functions, the extensions its code uses, which of them
    it needs (and why), its glibc and libstdc++ symbol versions and its device code."""

    path: str
    functions: int
    entry_points: int
    reachable_on_load: int
    usage: Mapping[str, ExtensionUse]
    baseline: Reasons
    unchecked: Reasons
    """Extensions of code whose address is taken on load, in an object with no CPU check."""
    glibc: str | None
    glibcxx: str | None
    cuda: CudaListing | None

    @classmethod
    def from_json(cls, data: Json) -> ObjectFindings:
        cuda = data.get("cuda")
        return cls(
            data["path"], data["functions"], data["entry_points"], data["reachable_on_load"],
            {flag: ExtensionUse.from_json(u) for flag, u in data["usage"].items()},
            _reasons(data["baseline"]), _reasons(data.get("unchecked") or {}),
            data.get("glibc"), data.get("glibcxx"),
            CudaListing.from_json(cuda) if cuda else None,
        )  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "functions": self.functions,
            "entry_points": self.entry_points,
            "reachable_on_load": self.reachable_on_load,
            "usage": {flag: u.to_json() for flag, u in self.usage.items()},
            "baseline": _lists(self.baseline),
            "unchecked": _lists(self.unchecked),
            "glibc": self.glibc,
            "glibcxx": self.glibcxx,
            "cuda": self.cuda.to_json() if self.cuda else None,
        }


@dataclass(frozen=True)
class Needs:
    """The instruction-set extensions a CPU must have to load and use the wheel."""

    flags: tuple[str, ...]
    """The least set that implies the others (cpuinfo names)."""
    every: tuple[str, ...]
    """Every extension found needed (``all`` in the JSON)."""
    why: Reasons
    explanation: str
    """How an extension is decided needed, in words."""

    @classmethod
    def from_json(cls, data: Json) -> Needs:
        return cls(tuple(data["flags"]), tuple(data["all"]), _reasons(data["why"]),
                   data["explanation"])  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"flags": list(self.flags), "all": list(self.every), "why": _lists(self.why),
                "explanation": self.explanation}  # fmt: skip


@dataclass(frozen=True)
class WheelMetadata:
    name: str
    version: str
    tags: tuple[str, ...]
    requires_dist: tuple[str, ...]
    requires_python: str | None

    @classmethod
    def from_json(cls, data: Json) -> WheelMetadata:
        return cls(data["name"], data["version"], tuple(data["tags"]),
                   tuple(data["requires_dist"]), data.get("requires_python"))  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "tags": list(self.tags),
                "requires_dist": list(self.requires_dist),
                "requires_python": self.requires_python}  # fmt: skip


@dataclass(frozen=True)
class Unreadable:
    """An ELF object that could not be read (truncated, damaged): nothing else is known of it."""

    path: str
    error: str


@dataclass(frozen=True)
class AuditReport:
    """What a wheel's code needs of a machine (instruction sets, glibc, CUDA architectures) and
    why, per object and for the wheel; `cached` when it was read from the audit cache."""

    analysis_version: int
    wheel: str
    sha256: str
    metadata: WheelMetadata
    manifest: Manifest | None
    """The tfbuild manifest the wheel carries (a source build's), if any."""
    unreadable: tuple[Unreadable, ...]
    unchecked: Reasons
    """Extensions of code called through a pointer taken on load without a CPU check, with
    the objects and functions."""
    objects: tuple[ObjectFindings, ...]
    needs: Needs
    glibc: str | None
    """The highest GLIBC_ symbol version needed."""
    manylinux: str | None
    """The manylinux tag that glibc floor allows."""
    glibcxx: str | None
    cuda: CudaSummary | None
    seconds: float
    cached: bool = False

    @classmethod
    def from_json(cls, data: Json) -> AuditReport:
        """A report as written (ValueError or KeyError when it is not one)."""
        if data.get("schema") != SCHEMA:
            raise ValueError(f"not an audit report: schema {data.get('schema')!r}")
        manifest, glibc, cuda = data.get("manifest"), data["glibc"], data.get("cuda")
        return cls(
            data["analysis_version"], data["wheel"], data["sha256"],
            WheelMetadata.from_json(data["metadata"]),
            Manifest.from_json(manifest) if manifest else None,
            tuple(Unreadable(u["path"], u["error"]) for u in data.get("unreadable") or ()),
            _reasons(data.get("unchecked") or {}),
            tuple(ObjectFindings.from_json(o) for o in data["objects"]),
            Needs.from_json(data["baseline"]),
            glibc["floor"], glibc["manylinux"], glibc["glibcxx"],
            CudaSummary.from_json(cuda) if cuda else None,
            data["seconds"], bool(data.get("cached", False)),
        )  # fmt: skip

    def to_json(self, cached: bool = False) -> dict[str, Any]:
        """The report as written; with `cached`, as shown (whether it came from the cache)."""
        data = {
            "schema": SCHEMA,
            "analysis_version": self.analysis_version,
            "wheel": self.wheel,
            "sha256": self.sha256,
            "metadata": self.metadata.to_json(),
            "manifest": self.manifest.to_json() if self.manifest else None,
            "unreadable": [{"path": u.path, "error": u.error} for u in self.unreadable],
            "unchecked": _lists(self.unchecked),
            "objects": [o.to_json() for o in self.objects],
            "baseline": self.needs.to_json(),
            "glibc": {"floor": self.glibc, "manylinux": self.manylinux, "glibcxx": self.glibcxx},
            "cuda": self.cuda.to_json() if self.cuda else None,
            "seconds": self.seconds,
        }
        return {**data, "cached": self.cached} if cached else data

    def as_cached(self) -> AuditReport:
        return replace(self, cached=True)
