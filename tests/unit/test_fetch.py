"""Prebuilt and local wheels into the store (`tfbuild fetch`): a pinned wheel is checked before
use."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from support.cext import ELF_WHEEL_NAME, elf_wheel, shared_object
from support.cli import run_tfbuild


def test_a_pinned_wheel_is_checked_before_use(tmp_path: Path) -> None:
    """`source: wheel` with `sha256:`: a wheel that does not match its pin is refused, naming
    the matrix line; a malformed pin is a matrix error; the right pin is accepted."""
    path = elf_wheel(tmp_path / ELF_WHEEL_NAME, shared_object(tmp_path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def inspect(pin: str) -> subprocess.CompletedProcess[str]:
        matrix = tmp_path / "matrix.yaml"
        matrix.write_text(
            f"schema_version: 1\nvariants:\n  - name: mine\n    source: wheel\n"
            f"    path: {ELF_WHEEL_NAME}\n    sha256: {pin!r}\n"
        )
        return run_tfbuild(
            "inspect", "mine", "--matrix", str(matrix), "--store", str(tmp_path / "store"),
            "--cache-dir", str(tmp_path / "cache"),
        )  # fmt: skip

    wrong = inspect("0" * 64)
    assert wrong.returncode == 8, wrong.stderr
    assert f"variant 'mine' ({tmp_path / 'matrix.yaml'}:3)" in wrong.stderr
    assert f"has sha256 {digest}, but the matrix pins {'0' * 64}" in wrong.stderr
    malformed = inspect("abc")
    assert malformed.returncode == 2, malformed.stderr
    assert malformed.stderr.strip() == (
        f"{tmp_path / 'matrix.yaml'}:6:13: variant 'mine'.sha256: not valid (got 'abc'; "
        "expected 64 lowercase hex digits)"
    )
    right = inspect(digest)
    assert right.returncode == 0, right.stderr
