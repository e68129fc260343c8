"""The results document of a bench session: every raw sample, and everything needed to trust,
resume and re-analyse it. Written atomically after every finished config-run."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import re
import signal
from pathlib import Path
from typing import Any

from tfbuild.errors import ResultsError
from tfbuild.runtime import RunOutcome
from tfbuild.store import atomic_write_json

SCHEMA = "tfbuild.results/2"
# Version 1 (suite v1, fixed rounds) is still read by compare.
READABLE = (SCHEMA, "tfbuild.results/1")
AA_SUFFIX = "~aa"


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def save(path: Path, document: dict[str, Any]) -> None:
    document["session"]["updated_at"] = now()
    atomic_write_json(path, document)


def load(path: Path) -> dict[str, Any]:
    return load_any(path, *READABLE)


def load_any(path: Path, *schemas: str) -> dict[str, Any]:
    """A JSON document (gzip-compressed when the name ends in .gz) with one of these schemas,
    or a ResultsError naming what is wrong."""
    try:
        raw = path.read_bytes()
        if path.suffix == ".gz":
            raw = gzip.decompress(raw)
        document = json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read ({exc.strerror})") from exc
    except (ValueError, EOFError, gzip.BadGzipFile) as exc:
        raise ResultsError(f"{path}: not a JSON results file ({exc})") from exc
    if not isinstance(document, dict) or document.get("schema") not in schemas:
        found = document.get("schema") if isinstance(document, dict) else type(document).__name__
        expected = " or ".join(repr(s) for s in schemas)
        raise ResultsError(f"{path}: schema is {found!r}; expected {expected}")
    return document


def classify(outcome: RunOutcome, timeout: float) -> dict[str, Any] | None:
    """Why a payload run failed, in words a user can act on; None when it did not fail."""
    tail = outcome.stderr_tail
    if outcome.timed_out:
        return {
            "kind": "timeout",
            "reason": f"did not finish within {timeout:.0f} s; killed",
            "stderr_tail": tail,
        }
    code = outcome.returncode
    if code < 0:
        number = -code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        if number == signal.SIGILL:
            reason = (
                "this build uses CPU instructions this machine lacks "
                f"(killed by SIGILL, signal {number})"
            )
            return {"kind": "sigill", "signal": number, "reason": reason, "stderr_tail": tail}
        return {
            "kind": "signal",
            "signal": number,
            "reason": f"killed by {name} (signal {number})",
            "stderr_tail": tail,
        }
    result = outcome.result
    if code != 0 or result is None:
        last = _exception_line(outcome.stderr) or f"exit code {code}"
        if result is None or "smoke" not in result:
            if _NUMPY2 in " ".join(outcome.stderr.split()):
                last = (
                    "it was built against NumPy 1.x and NumPy 2 is installed; "
                    'add constraints: ["numpy<2"] to this variant'
                )
            return {
                "kind": "import",
                "exit_code": code,
                "reason": f"TensorFlow failed to import: {last}",
                "stderr_tail": tail,
            }
        return {
            "kind": "exit",
            "exit_code": code,
            "reason": f"exited with code {code}: {last}",
            "stderr_tail": tail,
        }
    return None


_NUMPY2 = "compiled using NumPy 1.x cannot be run in NumPy 2"


def _exception_line(stderr: str) -> str | None:
    """The last 'SomeError: message' line of a traceback, else the last line."""
    lines = stderr.splitlines()
    for line in reversed(lines):
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b", line):
            return line.strip()
    return next((line.strip() for line in reversed(lines) if line.strip()), None)


def finished_runs(document: dict[str, Any]) -> set[tuple[int, str]]:
    return {(run["round"], run["config"]) for run in document["runs"]}


def is_aa(key: str) -> bool:
    return key.endswith(AA_SUFFIX)
