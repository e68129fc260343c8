"""qemu-user: run a wheel on an emulated CPU model, the ground truth for the ISA audit.

`tfbuild verify` installs the wheel into a cached venv and runs ``python -c SNIPPET`` under
``qemu-x86_64 -cpu MODEL``: a CPU model without an instruction the wheel executes dies with
SIGILL, exactly as real hardware would.
"""

from __future__ import annotations

import functools
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tfbuild.config.values import did_you_mean
from tfbuild.errors import ToolMissing, UsageError

INSTALL_HINT = (
    "qemu-user is not installed; install it (Debian/Ubuntu: apt-get install qemu-user; "
    "Fedora: dnf install qemu-user) to run wheels on emulated CPUs"
)
OK_MARKER = "tfbuild-verify-ok"

TF_SNIPPET = f"""
import tensorflow as tf
m = tf.matmul(tf.ones((64, 64)), tf.ones((64, 64)))
assert float(m[0, 0]) == 64.0
gru = tf.keras.layers.GRU(8)
with tf.GradientTape() as tape:
    loss = tf.reduce_sum(gru(tf.ones((2, 5, 4))))
grads = tape.gradient(loss, gru.trainable_variables)
assert len(grads) == 3
print({OK_MARKER!r}, tf.__version__)
"""


def import_snippet(modules: Sequence[str]) -> str:
    imports = "".join(f"import {m}\n" for m in modules)
    return f"{imports}print({OK_MARKER!r})\n"


@functools.cache
def binary() -> str:
    for name in ("qemu-x86_64", "qemu-x86_64-static"):
        path = shutil.which(name)
        if path:
            return path
    raise ToolMissing(INSTALL_HINT)


@functools.cache
def models() -> list[str]:
    """CPU models this qemu knows (qemu-x86_64 -cpu help)."""
    out = subprocess.run([binary(), "-cpu", "help"], capture_output=True, text=True, check=False)
    return [m.group(1) for m in re.finditer(r"^x86\s+(\S+)", out.stdout, re.MULTILINE)]


def check_model(model: str) -> None:
    known = models()
    if model not in known:
        versioned = [m for m in known if re.search(r"-v\d+$", m)]
        raise UsageError(
            f"--cpu {model!r}: qemu does not know this CPU model (e.g. Nehalem-v1, "
            "SandyBridge-v1, Haswell-v1, Skylake-Server-v1, Icelake-Server-v1; "
            "`qemu-x86_64 -cpu help` lists them all)" + did_you_mean(model, versioned)
        )


@dataclass(frozen=True)
class Emulated:
    model: str
    passed: bool
    returncode: int
    message: str
    seconds: float
    stderr_tail: str


def run(model: str, python: Path, snippet: str, env: Mapping[str, str], timeout: float) -> Emulated:
    started = time.perf_counter()
    # Isolated (-I: no current folder or user site on sys.path) and run from an empty folder,
    # so that a source checkout the caller stands in cannot shadow the installed wheel.
    try:
        with tempfile.TemporaryDirectory(prefix="tfbuild-verify-") as empty:
            proc = subprocess.run(
                [binary(), "-cpu", model, str(python), "-I", "-c", snippet],
                capture_output=True, text=True, env=dict(env), timeout=timeout, check=False,
                cwd=empty,
            )  # fmt: skip
    except subprocess.TimeoutExpired:
        return Emulated(model, False, -9, f"did not finish within {timeout:.0f} s", timeout, "")
    took = time.perf_counter() - started
    code = proc.returncode
    # qemu itself exits 128+N when the program dies with signal N.
    number = -code if code < 0 else code - 128 if 128 < code < 160 else 0
    tail = "\n".join(
        line for line in proc.stderr.splitlines()[-15:] if "TCG doesn't support" not in line
    )
    if code == 0 and OK_MARKER in proc.stdout:
        return Emulated(model, True, 0, "passes: imported and ran the check", took, tail)
    if number == signal.SIGILL:
        message = f"dies with SIGILL: this build uses instructions {model} lacks"
    elif number:
        message = f"dies with {signal.Signals(number).name} (signal {number})"
    else:
        last = next((ln for ln in reversed(tail.splitlines()) if ln.strip()), "")
        message = f"fails with exit code {code}: {last}"
    return Emulated(model, False, code, message, took, tail)
