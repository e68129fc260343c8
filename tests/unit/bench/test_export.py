"""`tfbuild export` where no form can be made, run as a user runs it: the form and the file
are made only from a SavedModel, only by a Python that has TensorFlow (and for litert LiteRT's
interpreter, tested with real TensorFlow in tests/integration/test_forms.py), and nothing is
written at --output when they are missing."""

from __future__ import annotations

import sys
from pathlib import Path

from support.cli import run_tfbuild


def test_a_script_workload_has_no_litert_form(tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text("def step(state):\n    return 1\n")
    out = tmp_path / "model.tflite"
    proc = run_tfbuild("export", "--workload", str(script), "-o", str(out))
    assert proc.returncode == 15, proc.stdout + proc.stderr
    assert "the litert form is made from a SavedModel signature, not a script" in proc.stderr
    assert not out.exists()


def test_a_python_without_tensorflow_or_no_python_is_named(tmp_path: Path) -> None:
    """This interpreter (the one running the tests) has no TensorFlow: the message says which
    interpreter to give; a path that is no interpreter is said as such."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "saved_model.pb").write_bytes(b"")
    out = tmp_path / "out" / "model.tflite"
    proc = run_tfbuild("export", "--workload", str(model), "--python", sys.executable, "-o",
                       str(out))  # fmt: skip
    assert proc.returncode == 12, proc.stdout + proc.stderr
    assert f"--python {sys.executable} has no TensorFlow: give the interpreter of the runtime" in (
        " ".join(proc.stderr.split())
    )
    assert not out.exists() and list(out.parent.iterdir()) == []  # no temporary file left
    proc = run_tfbuild("export", "--workload", str(model), "--python", str(tmp_path / "nope"),
                       "-o", str(out))  # fmt: skip
    assert proc.returncode == 12 and f"--python {tmp_path / 'nope'}: no such interpreter" in (
        proc.stderr
    ), proc.stderr
