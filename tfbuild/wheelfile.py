"""Wheel files: give a built wheel its variant's local version label and carry its manifest.

``relabel`` rewrites a wheel as ``name-2.17.1+mkl.avx2-tags.whl``: the .dist-info folder is
renamed, METADATA's Version updated, ``tfbuild-manifest.json`` added, and RECORD regenerated for
the files that changed (the others keep their recorded hashes).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import Version

from tfbuild.errors import BadWheel

MANIFEST_NAME = "tfbuild-manifest.json"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def labelled_version(version: Version, label: str) -> str:
    local = f"{version.local}.{label}" if version.local else label
    return f"{version.public}+{local}"


def _dist_info(names: list[str]) -> str:
    roots = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(roots) != 1:
        raise ValueError(f"expected one .dist-info folder, found {sorted(roots)}")
    return roots.pop()


def relabel(wheel: Path, label: str, manifest: dict[str, Any], dest_dir: Path) -> Path:
    """Write a copy of `wheel` with version +label and the manifest inside; returns its path."""
    _, version, _, _ = parse_wheel_filename(wheel.name)
    new_version = labelled_version(version, label)
    old_stem = wheel.name.split("-")
    tags = "-".join(old_stem[2:])
    distribution = old_stem[0]
    target = dest_dir / f"{distribution}-{new_version}-{tags}"
    with zipfile.ZipFile(wheel) as source:
        names = source.namelist()
        old_info = _dist_info(names)
        new_info = f"{distribution}-{new_version}.dist-info"
        recorded: dict[str, list[str]] = {}
        record_name = f"{old_info}/RECORD"
        for row in csv.reader(io.StringIO(source.read(record_name).decode("utf-8"))):
            if row:
                recorded[row[0]] = row
        rows: list[list[str]] = []
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as out:
            for info in source.infolist():
                if info.filename == record_name:
                    continue
                data = source.read(info)
                path = info.filename
                if path.startswith(old_info + "/"):
                    path = new_info + path[len(old_info) :]
                    if path == f"{new_info}/METADATA":
                        data = _set_version(data, new_version)
                    rows.append([path, _record_hash(data), str(len(data))])
                else:
                    rows.append(recorded.get(path, [path, _record_hash(data), str(len(data))]))
                copy = zipfile.ZipInfo(path, date_time=info.date_time)
                copy.external_attr = info.external_attr
                copy.compress_type = info.compress_type
                out.writestr(copy, data)
            embedded = (json.dumps(manifest, indent=2) + "\n").encode()
            out.writestr(f"{new_info}/{MANIFEST_NAME}", embedded, zipfile.ZIP_DEFLATED)
            rows.append([f"{new_info}/{MANIFEST_NAME}", _record_hash(embedded), str(len(embedded))])
            rows.append([f"{new_info}/RECORD", "", ""])
            buffer = io.StringIO()
            csv.writer(buffer, lineterminator="\n").writerows(rows)
            out.writestr(f"{new_info}/RECORD", buffer.getvalue(), zipfile.ZIP_DEFLATED)
    return target


def _set_version(metadata: bytes, version: str) -> bytes:
    lines = metadata.decode("utf-8").split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Version:"):
            lines[i] = f"Version: {version}"
            break
        if not line.strip():  # end of the headers: no Version line
            raise ValueError("METADATA has no Version header")
    return "\n".join(lines).encode("utf-8")


def embedded_manifest(wheel: Path) -> dict[str, Any] | None:
    """The tfbuild manifest a wheel carries in its .dist-info, if any."""
    with zipfile.ZipFile(wheel) as archive:
        info = _dist_info(archive.namelist())
        try:
            data = archive.read(f"{info}/{MANIFEST_NAME}")
        except KeyError:
            return None
    manifest: dict[str, Any] = json.loads(data)
    return manifest


def metadata(wheel: Path) -> dict[str, list[str]]:
    """METADATA headers of a wheel, as name -> values (Requires-Dist repeats)."""
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{_dist_info(archive.namelist())}/METADATA").decode("utf-8")
    headers: dict[str, list[str]] = {}
    for line in text.split("\n"):
        if not line.strip():
            break
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t")):
            headers.setdefault(key.strip(), []).append(value.strip())
    return headers


def top_level(wheel: Path) -> list[str]:
    """Importable top-level packages of a wheel (top_level.txt, else its folders)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = _dist_info(names)
        if f"{info}/top_level.txt" in names:
            text = archive.read(f"{info}/top_level.txt").decode("utf-8")
            return [line.strip() for line in text.splitlines() if line.strip()]
    roots = sorted(
        {n.split("/", 1)[0] for n in names if "/" in n and not n.split("/", 1)[0].endswith(
            (".dist-info", ".data"))}
    )  # fmt: skip
    return [r for r in roots if r.isidentifier()]


def check_wheel(wheel: Path) -> None:
    """Refuse, with what is wrong, a file that is not a readable wheel (name, archive, metadata)."""
    try:
        parse_wheel_filename(wheel.name)
    except InvalidWheelFilename as exc:
        raise BadWheel(
            f"{wheel}: not a wheel file name ({exc}); expected "
            "NAME-VERSION(-BUILD)-PYTHON-ABI-PLATFORM.whl"
        ) from exc
    if not zipfile.is_zipfile(wheel):
        raise BadWheel(f"{wheel}: not a zip archive (a truncated download, or not a wheel)")
    try:
        metadata(wheel)
    except (zipfile.BadZipFile, KeyError, ValueError, UnicodeDecodeError, EOFError) as exc:
        raise BadWheel(f"{wheel}: damaged or incomplete wheel ({exc})") from exc


def cpython_versions(wheel_name: str) -> list[str]:
    """The CPython X.Y versions a wheel's tags are for (cp312 -> 3.12), oldest first; empty for a
    wheel any Python 3 can install (py3 tags, or the stable ABI)."""
    parts = wheel_name.removesuffix(".whl").split("-")
    for interpreter in parts[-3].split(".") if len(parts) >= 5 else ():
        # Checked before packaging parses the name: the versions reach the runtime's install
        # script, and newer packaging refuses such a tag with a message that does not say so.
        if interpreter.startswith("cp") and not re.fullmatch(r"cp3\d+", interpreter):
            raise BadWheel(f"{wheel_name}: {interpreter!r} is not a CPython 3 tag (cp3XY)")
    try:
        _, _, _, tags = parse_wheel_filename(wheel_name)
    except InvalidWheelFilename as exc:
        raise BadWheel(f"{wheel_name}: not a wheel file name ({exc})") from exc
    if any(not t.interpreter.startswith("cp") or t.abi == "abi3" for t in tags):
        return []
    return [f"3.{minor}" for minor in sorted({int(t.interpreter[3:]) for t in tags})]
