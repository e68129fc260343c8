"""Files tfbuild produces: written so that a reader never sees half of one.

Every output (manifests, results, reports, JSON documents) goes to a temporary file in the
target folder and is renamed into place; an interrupted write leaves the old file intact.
"""

from __future__ import annotations

import contextlib
import fcntl
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


class Busy(Exception):
    """Another process holds the lock."""


@contextlib.contextmanager
def locked(path: Path, *, wait: bool = True) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created if missing) for the duration of the block.

    With ``wait=False`` it raises Busy at once when another process holds it. The lock dies with
    its holder, so a killed process never leaves a stale one.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError as exc:
            raise Busy(str(path)) from exc
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


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


def write_index(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """A PEP 503 simple index over every wheel in the store, at ROOT/simple/.

    Links are relative, carry #sha256= fragments and data-requires-python, so the folder works
    with `pip install --index-url file:///.../simple` and behind any static web server.
    Returns the (project, wheel) pairs indexed, and a line for each file left out because it
    is not a readable wheel.
    """
    import hashlib
    import html
    import shutil

    from packaging.utils import canonicalize_name, parse_wheel_filename

    from tfbuild.errors import BadWheel
    from tfbuild.wheelfile import check_wheel, metadata

    simple = root / "simple"
    projects: dict[str, list[tuple[Path, str, str | None]]] = {}
    skipped: list[str] = []
    for wheel in sorted(root.glob("*/*.whl")):
        if wheel.parent.name == "simple" or wheel.parent.name.startswith("."):
            continue
        try:
            check_wheel(wheel)
        except BadWheel as exc:
            skipped.append(str(exc))
            continue
        name = str(canonicalize_name(parse_wheel_filename(wheel.name)[0]))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        requires = next(iter(metadata(wheel).get("Requires-Python", [])), None)
        projects.setdefault(name, []).append((wheel, digest, requires))
    page = (
        '<!DOCTYPE html>\n<html><head><meta name="pypi:repository-version" content="1.0">'
        "<title>Simple index</title></head><body>\n"
    )
    links = "".join(f'<a href="{html.escape(n)}/">{html.escape(n)}</a><br>\n' for n in projects)
    atomic_write_text(simple / "index.html", page + links + "</body></html>\n")
    for stale in simple.iterdir():
        if stale.is_dir() and stale.name not in projects:
            shutil.rmtree(stale)
    indexed: list[tuple[str, Path]] = []
    for project, wheels in projects.items():
        rows = []
        for wheel, digest, requires in wheels:
            href = f"../../{wheel.parent.name}/{wheel.name}#sha256={digest}"
            attribute = (
                f' data-requires-python="{html.escape(requires, quote=True)}"' if requires else ""
            )
            rows.append(
                f'<a href="{html.escape(href)}"{attribute}>{html.escape(wheel.name)}</a><br>\n'
            )
            indexed.append((project, wheel))
        body = page.replace("Simple index", f"Links for {html.escape(project)}") + "".join(rows)
        atomic_write_text(simple / project / "index.html", body + "</body></html>\n")
    return indexed, skipped
