"""Where the repository and its fixtures are, and what a test does when something it needs is
missing: skip on a developer machine, fail in CI (where every test must run)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
FIXTURES = REPO / "tests" / "fixtures"
TOY = FIXTURES / "toy-recipe"
BASE_IMAGE = "tfbuild/base:bookworm"
LOCK = REPO / ".github" / "tfbuild-requirements.txt"
"""What the nightly installs before tfbuild: its dependencies and build backend, hashed."""


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def require(condition: bool, reason: str) -> None:
    """Skip locally, fail in CI, when something a test needs is missing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)
