"""The wheel store (wheels/): one folder per variant id, holding the wheel and its Manifest,
and the wheel as it goes into a runtime (an Artifact)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild import wheelfile
from tfbuild.files import atomic_write_json, sha256_of
from tfbuild.jsonrecords import frozen_record

MANIFEST_SCHEMA = "tfbuild.manifest/1"

Json = Mapping[str, Any]


def _json(record: SourceBuild | Manifest, skip: frozenset[str]) -> dict[str, Any]:
    """A record's fields as a manifest's keys: what is absent (None) is left out, tuples are
    lists."""
    data: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if f.name not in skip and value is not None:
            data[f.name] = list(value) if isinstance(value, tuple) else value
    return data


@dataclass(frozen=True, kw_only=True)
class SourceBuild:
    """How a source build's wheel was made: what `tfbuild build` ran, on what, for which plan.
    Older manifests may lack a key (None here); nothing read from them is ever required."""

    tensorflow: str | None = None
    git_ref: str | None = None
    tf_source: str | None = None
    era: str | None = None
    bazel_version: str | None = None
    bazel_command: str | None = None
    configs: tuple[str, ...] = ()
    copts: tuple[str, ...] = ()
    host_copts: tuple[str, ...] | None = None
    base_image: Json | None = None
    """The base image's reference and what the engine reported of it (id, digests)."""
    builder_host: Json | None = None
    """The HostProfile (as its JSON) of the machine whose engine built the wheel."""
    build_seconds: float | None = None
    content_key: str | None = None
    """The hash of the rendered recipe: an unchanged recipe is not built again."""
    build_key: str | None = None
    """What the plan asked for (the variant's definition and its compiler flags for the planned
    machine); absent in manifests of a tfbuild that did not record it."""
    compiler_flags: tuple[str, ...] | None = None
    recipe_key: str | None = None
    templates: Json | None = None
    """Template name -> the file it was rendered from."""

    @property
    def builder_cpus(self) -> int | None:
        """The logical CPUs of the machine that built the wheel, when recorded."""
        topology = (self.builder_host or {}).get("topology") or {}
        cpus = topology.get("logical_cpus")
        return int(cpus) if cpus else None


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """What the store knows of a variant's wheel (``tfbuild.manifest/1``): which file, where it
    came from (``source``: pypi, wheel or bazel) and, for a source build, how it was made. The
    same record is written beside the wheel, inside a built wheel's .dist-info (without the
    wheel's own name and digest, which it cannot know) and into every results file."""

    variant: Json
    """The variant's definition when the wheel was stored."""
    source: str
    name: str | None = None
    version: str | None = None
    wheel: str | None = None
    """The file name in the store's folder (None for ``source: wheel``, whose file stays at
    `path`, and inside a built wheel)."""
    sha256: str | None = None
    tags: tuple[str, ...] | None = None
    constraints: tuple[str, ...] = ()
    tfbuild_version: str | None = None
    requirement: str | None = None
    """source: pypi: the requirement resolved, the URL the wheel came from, the Python it was
    resolved for, when."""
    index_url: str | None = None
    python: str | None = None
    fetched_at: str | None = None
    path: str | None = None
    """source: wheel: the file recorded, when."""
    recorded_at: str | None = None
    build: SourceBuild | None = None
    """source: bazel: how it was built (its keys sit beside the others in the JSON)."""
    other: Json = field(default_factory=dict)
    """Keys this tfbuild does not know (a later tfbuild's), kept as they were."""

    @classmethod
    def from_json(cls, data: Json) -> Manifest:
        """A manifest as stored (the schema key, if any, is the store's); ValueError when it
        lacks what every manifest has."""
        if missing := [key for key in ("variant", "source") if key not in data]:
            raise ValueError(f"a manifest without {' or '.join(missing)}")
        known = {f.name for f in dataclasses.fields(cls)} | {
            f.name for f in dataclasses.fields(SourceBuild)
        }
        build = frozen_record(SourceBuild, data) if data.get("source") == "bazel" else None
        other = {k: v for k, v in data.items() if k not in known and k != "schema"}
        return frozen_record(cls, data, build=build, other=other)

    def to_json(self) -> dict[str, Any]:
        build = _json(self.build, frozenset()) if self.build is not None else {}
        own = _json(self, frozenset({"build", "other"}))
        return {"schema": MANIFEST_SCHEMA, **own, **build, **self.other}

    @classmethod
    def of_wheel(cls, wheel: Path) -> Manifest | None:
        """The manifest a tfbuild-built wheel carries in its .dist-info, if any."""
        data = wheelfile.embedded_manifest(wheel)
        return cls.from_json(data) if data is not None else None

    @property
    def build_key(self) -> str | None:
        return self.build.build_key if self.build is not None else None

    @property
    def origin(self) -> str | None:
        """Where the wheel came from, in one line: its index URL, its path, or its bazel
        command."""
        return self.index_url or self.path or (self.build.bazel_command if self.build else None)


class WheelStore:
    """wheels/: one folder per variant id, holding the wheel and its manifest.json."""

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()

    def folder(self, variant_id: str) -> Path:
        return self.root / variant_id

    def manifest_path(self, variant_id: str) -> Path:
        return self.folder(variant_id) / "manifest.json"

    def read_manifest(self, variant_id: str) -> Manifest | None:
        """The stored manifest, or None if there is none or it is unreadable."""
        try:
            data = json.loads(self.manifest_path(variant_id).read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
                return None
            return Manifest.from_json(data)
        except (OSError, ValueError):
            return None

    def stored(self, variant_id: str) -> tuple[Path, Manifest] | None:
        """The stored wheel and its manifest, when both are there and the wheel's sha256 is
        still the manifest's."""
        manifest = self.read_manifest(variant_id)
        if manifest is None or manifest.wheel is None:
            return None
        wheel = self.folder(variant_id) / manifest.wheel
        if not wheel.is_file() or sha256_of(wheel) != manifest.sha256:
            return None
        return wheel, manifest

    def write_manifest(self, variant_id: str, manifest: Manifest) -> None:
        atomic_write_json(self.manifest_path(variant_id), manifest.to_json())


@dataclass(frozen=True)
class Artifact:
    """A wheel ready to install into a runtime, with what it takes to install it."""

    variant_id: str
    wheel: Path
    sha256: str
    constraints: tuple[str, ...]
    manifest: Manifest | None
    extras: tuple[str, ...] = ()
    """Extras installed with the wheel: and-cuda for a CUDA source build, whose wheel carries no
    CUDA libraries (built with --config=cuda_wheel, as TensorFlow's own wheels are)."""

    @property
    def wants_gpu(self) -> bool:
        return "and-cuda" in self.extras

    @property
    def install_target(self) -> str:
        """The wheel file name as pip takes it, with its extras."""
        return self.wheel.name + (f"[{','.join(self.extras)}]" if self.extras else "")

    @classmethod
    def from_json(cls, recorded: Json, manifest: Manifest | None) -> Artifact:
        """The artifact a results file recorded (to_json), with the wheel at its recorded path."""
        return cls(
            recorded["variant_id"],
            Path(recorded["wheel"]),
            recorded["sha256"],
            tuple(recorded["constraints"]),
            manifest,
            tuple(recorded.get("extras", ())),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "variant_id": self.variant_id,
            "wheel": str(self.wheel),
            "sha256": self.sha256,
            "constraints": list(self.constraints),
            "extras": list(self.extras),
        }
