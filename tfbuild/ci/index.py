"""A PEP 503 simple index over the wheel store (`tfbuild index`), for pip --index-url."""

from __future__ import annotations

import hashlib
import html
import shutil
from pathlib import Path

from packaging.utils import canonicalize_name, parse_wheel_filename

from tfbuild.errors import BadWheel
from tfbuild.files import atomic_write_text
from tfbuild.wheelfile import check_wheel, metadata


def write_index(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """A PEP 503 simple index over every wheel in the store, at ROOT/simple/.

    Links are relative, carry #sha256= fragments and data-requires-python, so the folder works
    with `pip install --index-url file:///.../simple` and behind any static web server.
    Returns the (project, wheel) pairs indexed, and a line for each file left out because it
    is not a readable wheel.
    """
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
