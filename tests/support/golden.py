"""Golden files: the expected output of a command, committed. A developer rewrites them after an
intended change with TFBUILD_UPDATE_GOLDEN=1; that run then skips instead of passing (it checked
nothing), and under CI the variable is refused (there golden files are checked, never written)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from support.env import in_ci

UPDATE = "TFBUILD_UPDATE_GOLDEN"


def check_golden(expected: Mapping[Path, str]) -> None:
    """Each golden file holds the text given for it (or, when asked, becomes it)."""
    if os.environ.get(UPDATE):
        if in_ci():
            pytest.fail(
                f"{UPDATE} is set under CI: golden files are checked there, never rewritten",
                pytrace=False,
            )
        for path, text in expected.items():
            path.write_text(text, encoding="utf-8")
        names = ", ".join(path.name for path in expected)
        pytest.skip(f"rewrote {names}; run the tests again without {UPDATE}")
    for path, text in expected.items():
        assert text == path.read_text(encoding="utf-8"), f"{path.name} differs from the output"
