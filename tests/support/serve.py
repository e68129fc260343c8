"""A folder served over HTTP as a static site (GitHub Pages serves the nightly's index so)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def served(folder: Path) -> Iterator[str]:
    """`python -m http.server` on a free port while the block runs: its base URL."""
    command = [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]
    server = subprocess.Popen(
        command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert server.stdout is not None
        port = re.search(r"port (\d+)", server.stdout.readline())
        assert port, "http.server says where it serves"
        yield f"http://127.0.0.1:{port.group(1)}/"
    finally:
        server.terminate()
        server.wait(timeout=30)
