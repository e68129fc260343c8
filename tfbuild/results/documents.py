"""tfbuild's JSON documents as files: read (gzip-compressed when the name ends in .gz) and
recognised by their schema, or named for what they seem to be when they are not the document
asked for; written atomically."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tfbuild.errors import ResultsError
from tfbuild.files import atomic_writer


def _document(path: Path) -> Any:
    """A JSON file's content (gzip-compressed when the name ends in .gz)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read ({exc.strerror})") from exc
    try:
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        return json.loads(raw.decode("utf-8"))
    except (ValueError, EOFError, gzip.BadGzipFile) as exc:  # BadGzipFile is an OSError
        raise ResultsError(f"{path}: not a JSON results file ({exc})") from exc


def read_json(path: Path, *schemas: str) -> dict[str, Any]:
    """A JSON document (gzip-compressed when the name ends in .gz) with one of these schemas,
    or a ResultsError naming what is wrong."""
    document = _document(path)
    if not isinstance(document, dict) or document.get("schema") not in schemas:
        expected = " or ".join(repr(s) for s in schemas)
        if any(s.startswith("tfbuild.results/") for s in schemas):
            expected += " (what `tfbuild bench` and `tfbuild run` write)"
        raise ResultsError(f"{path}: {what_it_is(document)}; expected a file of schema {expected}")
    return document


def schema_of(path: Path) -> str | None:
    """The schema a JSON file names; None when it names none or cannot be read."""
    try:
        document = _document(path)
    except ResultsError:
        return None
    schema = document.get("schema") if isinstance(document, dict) else None
    return schema if isinstance(schema, str) else None


def what_it_is(document: Any) -> str:
    """What a JSON document that is not the one asked for seems to be, in a person's words."""
    if not isinstance(document, dict):
        return f"not a tfbuild file (a JSON {type(document).__name__}, not an object)"
    schema = document.get("schema")
    if isinstance(schema, str) and schema.startswith("tfbuild.calibration/"):
        return f"a calibration file ({schema}: `tfbuild calibrate --report FILE` reads it)"
    if isinstance(schema, str) and schema.startswith("tfbuild.compare/"):
        return f"the output of `tfbuild compare --format json` ({schema}), not a session's results"
    if isinstance(schema, str) and schema.startswith("tfbuild.results/"):
        return f"results of another tfbuild version ({schema})"
    if isinstance(schema, str) and schema.startswith("tfbuild."):
        return f"another tfbuild document ({schema})"
    if "benchmarks" in document and "metadata" in document:
        return "not a tfbuild file: it looks like pyperf's JSON"
    results = document.get("results")
    if (
        isinstance(results, list)
        and results
        and isinstance(results[0], dict)
        and ("command" in results[0])
    ):
        return "not a tfbuild file: it looks like hyperfine's --export-json"
    keys = ", ".join(sorted(str(k) for k in document)[:5])
    return f'not a tfbuild file (no "schema" key; its keys: {keys or "none"})'


def write_json(path: Path, document: Mapping[str, Any]) -> None:
    """A JSON document written atomically, gzip-compressed when the name ends in .gz."""
    data = (json.dumps(document, indent=2) + "\n").encode("utf-8")
    with atomic_writer(path, "wb") as out:
        out.write(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)
