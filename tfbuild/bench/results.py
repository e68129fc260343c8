"""The results document of a bench session: every raw sample, and everything needed to trust,
resume and re-analyse it. Written atomically after every finished config-run."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
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
    """A results file, checked for everything tfbuild reads from it."""
    document = load_any(path, *READABLE)
    problem = check(document)
    if problem is not None:
        raise ResultsError(f"{path}: {problem}; not a results file tfbuild can read")
    return document


def _kind(value: Any) -> str:
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else (
        repr(value) if isinstance(value, (int, float, str, bool)) or value is None
        else type(value).__name__
    )  # fmt: skip


def check(document: dict[str, Any]) -> str | None:
    """What is wrong with a results document (first problem, with its place), or None."""
    for key, kind in (("session", dict), ("host", dict), ("suite", dict), ("baseline", dict),
                      ("configs", list), ("failures", list), ("runs", list)):  # fmt: skip
        if key not in document:
            return f"{key}: missing"
        if not isinstance(document[key], kind):
            wanted = "an object" if kind is dict else "a list"
            return f"{key}: {_kind(document[key])} where {wanted} belongs"
    keys = set()
    for i, config in enumerate(document["configs"]):
        if not isinstance(config, dict) or not isinstance(config.get("key"), str):
            return f"configs[{i}]: {_kind(config)} is not a config with a key"
        keys.add(config["key"])
    if document["baseline"].get("config") not in keys:
        return f"baseline.config: {document['baseline'].get('config')!r} is not among configs"
    for i, run in enumerate(document["runs"]):
        where = f"runs[{i}]"
        if not isinstance(run, dict):
            return f"{where}: {_kind(run)} where a run belongs"
        if run.get("config") not in keys:
            return f"{where}.config: {run.get('config')!r} is not among configs"
        round_ = run.get("round")
        if not isinstance(round_, int) or isinstance(round_, bool) or round_ < 0:
            return f"{where}.round: {_kind(round_)} is not a round number"
        if run.get("status") != "ok":
            continue
        benchmarks = run.get("benchmarks")
        if not isinstance(benchmarks, dict) or not benchmarks:
            return f"{where}.benchmarks: {_kind(benchmarks)} where measurements belong"
        for name, entry in benchmarks.items():
            if isinstance(entry, dict) and isinstance(entry.get("error"), str):
                continue  # a benchmark that raised is recorded with its error, not samples
            samples = entry.get("samples") if isinstance(entry, dict) else None
            if not isinstance(samples, list) or not samples:
                return (
                    f"{where}.benchmarks.{name}.samples: {_kind(samples)} is not a list of samples"
                )
            for k, sample in enumerate(samples):
                value: Any = sample.get("throughput") if isinstance(sample, dict) else sample
                number = isinstance(value, (int, float)) and not isinstance(value, bool)
                if not (number and math.isfinite(value) and value > 0):
                    return (f"{where}.benchmarks.{name}.samples[{k}].throughput: {_kind(value)} "
                            "is not a positive number")  # fmt: skip
    return None


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
