"""The wheel store (wheels/): one folder per variant id, holding the wheel and its manifest,
and the wheel as it goes into a runtime (an Artifact)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild.files import atomic_write_json

MANIFEST_SCHEMA = "tfbuild.manifest/1"


class WheelStore:
    """wheels/: one folder per variant id, holding the wheel and its manifest.json."""

    def __init__(self, root: Path) -> None:
        self.root = root.absolute()

    def folder(self, variant_id: str) -> Path:
        return self.root / variant_id

    def manifest_path(self, variant_id: str) -> Path:
        return self.folder(variant_id) / "manifest.json"

    def read_manifest(self, variant_id: str) -> dict[str, Any] | None:
        """The stored manifest, or None if there is none or it is unreadable."""
        try:
            data = json.loads(self.manifest_path(variant_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("schema") != MANIFEST_SCHEMA:
            return None
        return data

    def write_manifest(self, variant_id: str, manifest: dict[str, Any]) -> None:
        atomic_write_json(self.manifest_path(variant_id), {"schema": MANIFEST_SCHEMA, **manifest})


@dataclass(frozen=True)
class Artifact:
    """A wheel ready to install into a runtime, with what it takes to install it."""

    variant_id: str
    wheel: Path
    sha256: str
    constraints: tuple[str, ...]
    manifest: dict[str, Any]
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
    def from_json(cls, recorded: Mapping[str, Any], manifest: dict[str, Any]) -> Artifact:
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
