"""The PEP 503 index over the wheel store (`tfbuild index`)."""

from __future__ import annotations

import json
from pathlib import Path

from support.cext import ELF_WHEEL_NAME, elf_wheel, shared_object
from support.cli import run_tfbuild


def test_index_leaves_out_a_bad_wheel_and_says_so(tmp_path: Path) -> None:
    store = tmp_path / "wheels"
    (store / "good").mkdir(parents=True)
    (store / "bad").mkdir()
    elf_wheel(store / "good" / ELF_WHEEL_NAME, shared_object(tmp_path))
    (store / "bad" / "pkg-2.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"\x00" * 64)
    proc = run_tfbuild("index", str(store))
    assert proc.returncode == 14, proc.stderr
    assert "indexed 1 wheels of 1 projects" in proc.stdout
    assert "pkg-2.0-cp311-cp311-linux_x86_64.whl: not a zip archive" in proc.stderr
    page = (store / "simple" / "pkg" / "index.html").read_text()
    assert ELF_WHEEL_NAME in page and "pkg-2.0" not in page
    # the same, as a document for scripts: the wheel indexed and the file left out (exit 14)
    said = run_tfbuild("index", str(store), "--format", "json")
    assert said.returncode == 14, said.stderr
    document = json.loads(said.stdout)
    assert document["index"] == str((store / "simple").resolve())
    assert document["wheels"] == [{"project": "pkg", "wheel": ELF_WHEEL_NAME}]
    (left_out,) = document["left_out"]
    assert "pkg-2.0-cp311-cp311-linux_x86_64.whl: not a zip archive" in left_out
