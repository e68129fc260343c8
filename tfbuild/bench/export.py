"""`tfbuild export`: a SavedModel workload written in the litert form a session measured, made
by the same code (bench/workload_payload.py and workload_forms.py, run by the interpreter of a
Python that has the build: the runtime 'use this' installs), checked against the as-given
outputs on the workload's inputs before the file is written, so it can be deployed without
tfbuild."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild.bench.failures import form_check_of
from tfbuild.bench.workload import payload_spec
from tfbuild.config.values import FORM_PACKAGES, TIMEOUT_S
from tfbuild.errors import FormFailed, ToolMissing, WorkloadError
from tfbuild.files import sha256_of
from tfbuild.results.forms import FormCheck
from tfbuild.results.model import Workload

TAIL = 25


@dataclass(frozen=True)
class Exported:
    """The file written, and what it is."""

    path: Path
    form: str
    size: int
    sha256: str
    inputs: tuple[str, ...]
    """Each input as it was fed for the check: name, dtype and shape."""
    check: FormCheck


def export(workload: Workload, form: str, python: str, out: Path, threads: int | None) -> Exported:
    """Make `form` of the workload with `python` (which must import tensorflow and, for litert,
    ai_edge_litert) and write it to `out` (through a temporary file beside it): WorkloadError
    for inputs that do not fit, FormFailed where the form cannot be made or its outputs are
    outside the tolerances (with the figures), ToolMissing for a Python without them."""
    if workload.kind != "savedmodel":
        raise WorkloadError(
            f"--workload {workload.path}: the {form} form is made from a SavedModel signature, "
            f"not a {workload.kind}"
        )
    interpreter = shutil.which(python) or python
    if not Path(interpreter).is_file():
        raise ToolMissing(f"--python {python}: no such interpreter")
    spec = {**payload_spec(workload), "form": form, "threads": threads}
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfbuild-export-") as folder:
        spec_file, result_file = Path(folder) / "spec.json", Path(folder) / "result.json"
        spec_file.write_text(json.dumps(spec), encoding="utf-8")
        partial = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        script = Path(__file__).resolve().with_name("workload_payload.py")
        command = [interpreter, str(script), "--export", str(spec_file), str(partial),
                   str(result_file)]  # fmt: skip
        try:
            proc = subprocess.run(
                command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
            )
            said = _answer(proc, result_file, python, form)
            if "error" not in said:
                partial.replace(out)
        finally:
            partial.unlink(missing_ok=True)
    if said.get("kind") == "inputs":
        raise WorkloadError(f"--workload {workload.path}: {said['error']}")
    if "error" in said:
        raise FormFailed(f"cannot export the {form} form of {workload.path}: {said['error']}")
    fed = tuple(
        f"{i['name']} {i['dtype']} ({','.join(map(str, i['shape']))})" for i in said["inputs"]
    )
    check = form_check_of(said["form"])
    assert check is not None, "a form written was checked"
    return Exported(out, form, int(said["bytes"]), sha256_of(out), fed, check)


def _answer(
    proc: subprocess.CompletedProcess[str], result: Path, python: str, form: str
) -> dict[str, Any]:
    """What the export script answered, or why it could not: a Python without TensorFlow or
    without the form's interpreter package is named with what to install."""
    if result.is_file():
        said: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        if form in FORM_PACKAGES and said.get("missing"):
            packages = " ".join(FORM_PACKAGES[form])
            raise ToolMissing(
                f"--python {python}: {said['error']}; install it beside the build "
                f"(pip install {packages}) or give another --python"
            )
        return said
    tail = "\n".join(proc.stderr.splitlines()[-TAIL:])
    if "No module named 'tensorflow'" in proc.stderr:
        raise ToolMissing(
            f"--python {python} has no TensorFlow: give the interpreter of the runtime the "
            "build is installed in ('use this' of compare says how to make one)"
        )
    raise FormFailed(f"the export script failed (exit {proc.returncode}):\n{tail}")
