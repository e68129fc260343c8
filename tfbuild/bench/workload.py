"""`--workload`: the user's own model, as a session records it and as the payload is told of it.

What the model is (a SavedModel directory, a Keras file or a script) is decided here from the
path, and everything the user can get wrong without TensorFlow is refused here, before anything
is installed: a path that is no model, options that do not apply to its kind, a --shape that is
not NAME=D1,D2. What needs TensorFlow (the signature, the inputs against it) is checked by the
smoke test of each build (workload_payload.check)."""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild.bench.workload_payload import (
    CALLS,
    LATENCY,
    LATENCY_FACTOR,
    PERCENTILES,
    SAMPLES,
    THROUGHPUT,
    WORKLOAD_VERSION,
)
from tfbuild.errors import WorkloadError
from tfbuild.files import portable, sha256_of
from tfbuild.results.model import Workload

WORKLOAD_BENCHMARKS = (THROUGHPUT, *LATENCY)
"""What a session measures of the user's model: its throughput and latency percentiles."""
KERAS_SUFFIXES = (".keras", ".h5", ".hdf5")
_SHAPE_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_.:/-]*)=([1-9]\d*(?:,[1-9]\d*)*)")
FLAGS = {
    "signature": "--signature",
    "batch": "--batch",
    "shapes": "--shape",
    "inputs": "--inputs",
    "calls": "--calls",
    "atol": "--atol",
    "rtol": "--rtol",
}
"""WorkloadRequest field -> the command-line option that sets it."""
EXPECTED = (
    "a SavedModel directory (with saved_model.pb), a Keras model file (.keras, .h5) or a "
    "Python script (.py) defining step(state)"
)


@dataclass(frozen=True, kw_only=True)
class WorkloadRequest:
    """What the command line asks for (`--workload` and the options that go with it)."""

    path: Path
    signature: str | None = None
    batch: int | None = None
    shapes: tuple[str, ...] = ()
    inputs: Path | None = None
    calls: int | None = None
    atol: float | None = None
    rtol: float | None = None


def digest_of(path: Path, files: Sequence[str] = ()) -> str:
    """sha256 over a file's bytes, or over a directory's files: relative paths and contents.
    With `files` (a script's FILES, relative to its folder), over the script and those, each
    named by its path relative to the script's folder."""
    if path.is_file() and not files:
        return sha256_of(path)
    root = path.parent if files else path
    chosen = [path, *(root / f for f in files)] if files else [path]
    found = {f for c in chosen for f in ([c] if c.is_file() else c.rglob("*")) if f.is_file()}
    h = hashlib.sha256()
    for f in sorted(found):
        h.update(f.relative_to(root).as_posix().encode("utf-8") + b"\0")
        h.update(bytes.fromhex(sha256_of(f)))
    return h.hexdigest()


def script_files(path: Path) -> tuple[str, ...]:
    """A script's FILES: a top-level assignment of a list or tuple of string literals, each a
    file or folder beside the script or below its folder; read without running the script
    (the host may have no TensorFlow)."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        where = f"{path}:{line}" if line else str(path)
        raise WorkloadError(f"--workload {where}: not valid Python ({exc.args[0]})") from exc
    found: tuple[str, ...] = ()
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, given = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:  # FILES: list[str] = ...
            targets, given = [node.target], node.value
        else:
            continue
        if not any(isinstance(t, ast.Name) and t.id == "FILES" for t in targets):
            continue
        where = f"--workload {path}:{node.lineno}: FILES"
        try:
            value = ast.literal_eval(given)
        except ValueError:
            raise WorkloadError(
                f"{where} is computed; expected a list of paths written out, relative to the "
                'script\'s folder, e.g. FILES = ["model.keras", "vocab/"]'
            ) from None
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise WorkloadError(
                f"{where} = {value!r}; expected a list of paths (strings) relative to the "
                "script's folder"
            )
        found = tuple(_beside(path, where, v) for v in value)
    return found


def _beside(script: Path, where: str, given: str) -> str:
    """A FILES entry as a clean relative path below the script's folder; WorkloadError for one
    that is absolute, climbs out, is the script itself or does not exist."""
    relative = Path(given)
    if not relative.parts or relative.is_absolute() or ".." in relative.parts:
        raise WorkloadError(
            f"{where} names {given!r}; expected a path relative to the script's folder, below "
            "it (shipped beside the script into a container)"
        )
    target = script.parent / relative
    if not target.exists():
        raise WorkloadError(f"{where} names {given!r}, and {target} does not exist")
    if target.resolve() == script.resolve():
        raise WorkloadError(f"{where} names the script itself ({given!r}): it is shipped anyway")
    return relative.as_posix()


def kind_of(path: Path) -> str:
    if not path.exists():
        raise WorkloadError(f"--workload {path}: no such file or directory; expected {EXPECTED}")
    if path.is_dir():
        if (path / "saved_model.pb").is_file() or (path / "saved_model.pbtxt").is_file():
            return "savedmodel"
        raise WorkloadError(
            f"--workload {path}: a directory without saved_model.pb, so not a SavedModel; "
            f"expected {EXPECTED}"
        )
    if path.suffix.lower() in KERAS_SUFFIXES:
        return "keras"
    if path.suffix == ".py":
        return "script"
    suffix = path.suffix or "no suffix"
    raise WorkloadError(f"--workload {path}: not a model ({suffix}); expected {EXPECTED}")


def parse_shapes(given: Sequence[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for text in given:
        m = _SHAPE_RE.fullmatch(text)
        if m is None:
            raise WorkloadError(
                f"--shape {text!r}: expected NAME=D1,D2,... with the input's name and every "
                "dimension (each at least 1), e.g. --shape tokens=1,20"
            )
        shapes[m.group(1)] = tuple(int(d) for d in m.group(2).split(","))
    return shapes


def resolve(request: WorkloadRequest) -> Workload:
    """The record of the workload a session will measure; WorkloadError for what is wrong."""
    path = request.path.resolve()
    kind = kind_of(path)
    if kind == "script":
        given = [
            FLAGS[name]
            for name in ("signature", "batch", "shapes", "inputs")
            if getattr(request, name)
        ]
        if given:
            raise WorkloadError(
                f"{', '.join(given)}: a script workload ({request.path}) makes its own inputs; "
                "these options are for a SavedModel or a Keras file"
            )
    if kind == "keras" and request.signature:
        raise WorkloadError(
            f"--signature {request.signature}: a Keras file ({request.path}) has no signatures; "
            "it is called as a model"
        )
    files = script_files(path) if kind == "script" else ()
    inputs = inputs_digest = None
    if request.inputs is not None:
        if request.batch or request.shapes:
            raise WorkloadError(
                "--inputs gives the arrays, with their shapes: --batch and --shape do not apply"
            )
        if not request.inputs.is_file() or request.inputs.suffix != ".npz":
            raise WorkloadError(
                f"--inputs {request.inputs}: expected an .npz file (numpy.savez), one array "
                "per input by name"
            )
        inputs = portable(request.inputs.resolve())
        inputs_digest = digest_of(request.inputs)
    return Workload(
        kind=kind,
        path=portable(path),
        digest=digest_of(path, files),
        version=WORKLOAD_VERSION,
        signature=(request.signature or "serving_default") if kind == "savedmodel" else None,
        batch=request.batch or 1,
        shapes=parse_shapes(request.shapes),
        inputs=inputs,
        inputs_digest=inputs_digest,
        calls=request.calls or CALLS,
        files=files,
        atol=request.atol,
        rtol=request.rtol,
    )


def suite_entries(workload: Workload) -> tuple[dict[str, int], dict[str, int], dict[str, str]]:
    """The workload's benchmarks as a session's suite records them: iterations (calls) per
    sample, samples per process, units."""
    latency = LATENCY_FACTOR * workload.calls
    iterations = {THROUGHPUT: workload.calls, **{name: latency for name in LATENCY}}
    samples = {THROUGHPUT: SAMPLES, **{name: 1 for name in LATENCY}}
    units = {
        THROUGHPUT: "items/s",
        **{name: f"calls/s (1/p{p} latency)" for name, p in zip(LATENCY, PERCENTILES, strict=True)},
    }
    return iterations, samples, units


def payload_spec(workload: Workload) -> dict[str, Any]:
    """What the payload is told: the model and inputs by their paths on this machine (a
    container runtime copies them in, read-only, and rewrites the paths)."""
    return {
        "kind": workload.kind,
        "path": str(Path(workload.path).resolve()),
        "signature": workload.signature,
        "batch": workload.batch,
        "shapes": {k: list(v) for k, v in workload.shapes.items()},
        "inputs": str(Path(workload.inputs).resolve()) if workload.inputs else None,
        "calls": workload.calls,
        "files": list(workload.files),
        **{k: v for k, v in (("atol", workload.atol), ("rtol", workload.rtol)) if v is not None},
    }
