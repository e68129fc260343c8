"""The CPython interpreters of this machine, for local runtimes."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

RUNNING_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


@functools.cache
def find_python(version: str) -> str | None:
    """An interpreter of CPython `version` (X.Y) on this machine: the one running tfbuild when
    it matches, else a `pythonX.Y` on PATH, else one pyenv installed, that runs and says it is
    X.Y (a version manager's shim for a version it has not activated does not); None when there
    is none."""
    if version == RUNNING_PYTHON:
        return sys.executable
    root = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}")]
    candidates += sorted(str(p) for p in root.glob(f"versions/{version}.*/bin/python{version}"))
    for found in filter(None, candidates):
        try:
            proc = subprocess.run(
                [found, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip() == version:
            return found
    return None
