"""Files tfbuild produces, locks, digests and archives.

Every output (manifests, results, reports, JSON documents) goes to a temporary file in the
target folder and is renamed into place, so a reader never sees half of one and an interrupted
write leaves the old file intact.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import json
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import IO, Any


def portable(path: Path) -> str:
    """A path as a results file records it: relative to the folder the session runs in when it
    lies below it (what the user types there, and the file stays true when the project moves;
    `--resume` runs from that folder), else absolute."""
    here = Path.cwd()
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


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


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def digest(*parts: Any) -> str:
    """A stable sha256 over JSON-able parts (rendered files, arguments, source revisions)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def tar_of(
    files: Mapping[str, tuple[bytes, int]], read_only: Mapping[str, bytes] | None = None
) -> bytes:
    """A tar of `files` (name -> (data, owner uid = gid)), and of `read_only` ones (name ->
    data): owned by root, 0444, in folders of root's at 0555, so nobody else can change them."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, (data, owner) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, owner, owner
            tar.addfile(info, io.BytesIO(data))
        read_only = read_only or {}
        folders = sorted({str(p) for n in read_only for p in PurePosixPath(n).parents} - {"."})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o555
            tar.addfile(info)
        for name, data in read_only.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o444
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def extract_tree(archive: tarfile.TarFile, dest: Path) -> None:
    """Plain files and folders only, never outside `dest` (tarfile's "data" filter needs
    Python >= 3.10.12)."""
    for member in archive.getmembers():
        relative = Path(member.name)
        if relative.is_absolute() or ".." in relative.parts:
            continue
        target = dest / relative
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile() and (source := archive.extractfile(member)) is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                shutil.copyfileobj(source, out)
