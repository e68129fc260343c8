"""Golden files are checked in CI, never rewritten there: the tests that compare output with a
committed file refuse TFBUILD_UPDATE_GOLDEN when CI is set, and leave the files as they were."""

from __future__ import annotations

import os
import subprocess
import sys

from support.env import FIXTURES, REPO

GOLDEN = [
    FIXTURES / "results" / "golden.table.txt",
    FIXTURES / "results" / "golden.md",
    *sorted((FIXTURES / "render").glob("*.Dockerfile")),
    *sorted((FIXTURES / "render").glob("*.build.sh")),
]
TESTS = [
    "tests/unit/report/test_comparison.py::test_golden_output",
    "tests/unit/build/test_render.py::test_golden_render",
]


def test_ci_refuses_to_rewrite_golden_files() -> None:
    before = {path: path.read_bytes() for path in GOLDEN}
    assert len(before) >= 10
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-q", *TESTS],
        cwd=REPO,
        env={**os.environ, "CI": "true", "TFBUILD_UPDATE_GOLDEN": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert "TFBUILD_UPDATE_GOLDEN is set under CI" in proc.stdout
    assert " passed" not in proc.stdout.splitlines()[-1]  # every golden test failed
    assert {path: path.read_bytes() for path in GOLDEN} == before
