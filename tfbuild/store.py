"""Files tfbuild produces: written so that a reader never sees half of one.

Every output (manifests, results, reports, JSON documents) goes to a temporary file in the
target folder and is renamed into place; an interrupted write leaves the old file intact.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


@contextlib.contextmanager
def atomic_writer(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Open a temp file next to ``path``; on success fsync and rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
    try:
        encoding = None if "b" in mode else "utf-8"
        with os.fdopen(fd, mode, encoding=encoding) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    with atomic_writer(path) as fh:
        fh.write(text)


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2) + "\n")


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
