"""Prebuilt and local wheels into the store (`tfbuild fetch`): a pinned wheel is checked before
use."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
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


def test_sessions_sharing_a_store_download_a_wheel_once(tmp_path: Path) -> None:
    """Two `tfbuild fetch` of one variant into one store at the same moment, from a file://
    index with real pip: one downloads, the other waits and finds the wheel in the store."""
    wheel = tmp_path / "index-files" / "tinypkg-1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("tinypkg/__init__.py", "")
        archive.writestr("tinypkg-1.0.dist-info/METADATA",
                         "Metadata-Version: 2.1\nName: tinypkg\nVersion: 1.0\n")  # fmt: skip
        archive.writestr("tinypkg-1.0.dist-info/WHEEL",
                         "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n")  # fmt: skip
        archive.writestr("tinypkg-1.0.dist-info/RECORD", "")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    project = tmp_path / "simple" / "tinypkg"
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        f'<a href="{wheel.as_uri()}#sha256={digest}">{wheel.name}</a>\n'
    )
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "defaults:\n"
        f"  pip: {{index_url: '{(tmp_path / 'simple').as_uri()}/', extra_index_urls: []}}\n"
        "variants:\n  - {name: tiny, source: pypi, requirement: tinypkg==1.0}\n"
    )
    argv = [sys.executable, "-m", "tfbuild", "fetch", "--matrix", str(matrix),
            "--store", str(tmp_path / "store")]  # fmt: skip
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]  # fmt: skip
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    said = sorted(out.split(" (", 1)[1].split(",")[0] for out, _ in outputs)
    assert said == ["already in store", "downloaded"], outputs
    (stored,) = (tmp_path / "store").glob("*/tinypkg-1.0-py3-none-any.whl")
    assert stored.read_bytes() == wheel.read_bytes()
