"""Bad input a user can hand tfbuild (a damaged results file or wheel, a session it cannot
resume, a corrupted cache): one clear line naming the file and what is wrong, its own exit
code, never a traceback or "internal error"."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, require, run_tfbuild

from tfbuild.bench.runner import session_lock
from tfbuild.store import locked

SESSION = FIXTURES / "results" / "aa-run-epyc.json.gz"


def session() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(gzip.decompress(SESSION.read_bytes()))
    return copy.deepcopy(document)


def edited(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        document = session()
        change(document)
        path = folder / "results.json"
        path.write_text(json.dumps(document))
        return path

    return make


def sample(document: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = document["runs"][3]["benchmarks"]["gru-keras"]["samples"][1]
    return entry


def set_sample(value: object) -> Callable[[dict[str, Any]], None]:
    return lambda d: sample(d).__setitem__("throughput", value)


RESULTS = {
    "no host": (edited(lambda d: d.pop("host")), "results.json: host: missing"),
    "no runs": (edited(lambda d: d.pop("runs")), "results.json: runs: missing"),
    "runs not a list": (edited(lambda d: d.__setitem__("runs", {})), "runs: an object where"),
    "unknown config": (
        edited(lambda d: d["runs"][2].__setitem__("config", "ghost:default")),
        "runs[2].config: 'ghost:default' is not among configs",
    ),
    "negative throughput": (
        edited(set_sample(-5.0)),
        "runs[3].benchmarks.gru-keras.samples[1].throughput: -5.0 is not a positive number",
    ),
    "string throughput": (edited(set_sample("fast")), "'fast' is not a positive number"),
    "NaN throughput": (edited(set_sample(float("nan"))), "nan is not a positive number"),
}


@pytest.mark.parametrize("case", sorted(RESULTS))
def test_compare_refuses_a_damaged_results_file(case: str, tmp_path: Path) -> None:
    make, message = RESULTS[case]
    path = make(tmp_path)
    proc = run_tfbuild("compare", str(path))
    assert proc.returncode == 9, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"tfbuild: {path}") and message in line, line


def test_resume_refuses_what_it_cannot_continue(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    document = json.loads((FIXTURES / "results" / "session-2x2-10rounds.json").read_text())
    document["session"]["complete"] = False
    old.write_text(json.dumps(document))
    proc = run_tfbuild("bench", "--resume", str(old))
    assert proc.returncode == 9 and "recorded with suite v1" in proc.stderr, proc.stderr

    def partial(d: dict[str, Any]) -> None:
        d["session"]["complete"] = False
        del d["order"]

    path = edited(partial)(tmp_path)
    proc = run_tfbuild("bench", "--resume", str(path))
    assert proc.returncode == 9, proc.stderr
    assert "cannot be resumed: order missing or damaged" in proc.stderr


def test_one_session_file_has_one_writer(tmp_path: Path) -> None:
    """While a session holds its file (a bench running, or another resume), --resume is
    refused at once instead of interleaving two writers' runs."""
    document = session()
    document["session"]["complete"] = False
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    with locked(session_lock(path)):
        proc = run_tfbuild("bench", "--resume", str(path))
    assert proc.returncode == 9, proc.stderr
    assert "another tfbuild is running this session" in proc.stderr
    assert json.loads(path.read_text()) == document  # untouched


def shared_object(folder: Path) -> bytes:
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc is not installed")
    assert gcc is not None
    (folder / "m.c").write_text("int f(int x) { return x + 1; }\n")
    subprocess.run(
        [gcc, "-shared", "-fPIC", "-O2", str(folder / "m.c"), "-o", str(folder / "m.so")],
        check=True,
    )
    return (folder / "m.so").read_bytes()


def wheel(path: Path, elf: bytes) -> Path:
    info = "pkg-1.0.dist-info"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: pkg\nVersion: 1.0\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
        archive.writestr(f"{info}/RECORD", "")
        archive.writestr("pkg/m.so", elf)
    return path


NAME = "pkg-1.0-cp311-cp311-linux_x86_64.whl"


def test_inspect_refuses_what_is_not_a_wheel(tmp_path: Path) -> None:
    good = wheel(tmp_path / NAME, shared_object(tmp_path))
    cases = {
        "truncated": good.read_bytes()[: good.stat().st_size // 2],
        "not a zip": b"<html>rate limited</html>",
    }
    for case, data in cases.items():
        path = tmp_path / case / NAME
        path.parent.mkdir()
        path.write_bytes(data)
        proc = run_tfbuild("inspect", str(path), "--cache-dir", str(tmp_path / "cache"))
        assert proc.returncode == 14, proc.stderr
        assert proc.stderr.strip() == (
            f"tfbuild: {path}: not a zip archive (a truncated download, or not a wheel)"
        )
    misnamed = tmp_path / "tensorflow.whl"
    shutil.copy(good, misnamed)
    proc = run_tfbuild("inspect", str(misnamed))
    assert proc.returncode == 14 and f"tfbuild: {misnamed}: not a wheel file name" in proc.stderr


def test_an_unreadable_object_makes_the_verdict_unproven(tmp_path: Path) -> None:
    """A truncated ELF inside a wheel is not skipped in silence: the verdict cannot say the
    wheel runs here, and it names the object."""
    (tmp_path / "cut").mkdir()
    cut = wheel(tmp_path / "cut" / NAME, shared_object(tmp_path)[:300])
    proc = run_tfbuild("inspect", str(cut), "--json", "--cache-dir", str(tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"]["runs"] is None
    assert report["verdict"]["cpu"].startswith("unproven: 1 ELF object(s) could not be read")
    assert [u["path"] for u in report["unreadable"]] == ["pkg/m.so"]


def test_a_corrupted_cache_entry_is_redone(tmp_path: Path) -> None:
    good = wheel(tmp_path / NAME, shared_object(tmp_path))
    cache = tmp_path / "cache"
    first = run_tfbuild("inspect", str(good), "--cache-dir", str(cache), "--json")
    assert first.returncode == 0, first.stderr
    (entry,) = (cache / "inspect").glob("*-v*.json")
    entry.write_text('{"schema": "tfbuild.inspect/1", "baseli')
    again = run_tfbuild("inspect", str(good), "--cache-dir", str(cache), "--json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["cached"] is False and report["verdict"]["runs"] is True
    assert json.loads(entry.read_text())["sha256"] == report["sha256"]  # rewritten whole


def test_index_leaves_out_a_bad_wheel_and_says_so(tmp_path: Path) -> None:
    store = tmp_path / "wheels"
    (store / "good").mkdir(parents=True)
    (store / "bad").mkdir()
    wheel(store / "good" / NAME, shared_object(tmp_path))
    (store / "bad" / "pkg-2.0-cp311-cp311-linux_x86_64.whl").write_bytes(b"\x00" * 64)
    proc = run_tfbuild("index", str(store))
    assert proc.returncode == 14, proc.stderr
    assert "indexed 1 wheels of 1 projects" in proc.stdout
    assert "pkg-2.0-cp311-cp311-linux_x86_64.whl: not a zip archive" in proc.stderr
    page = (store / "simple" / "pkg" / "index.html").read_text()
    assert NAME in page and "pkg-2.0" not in page


def test_a_pinned_wheel_is_checked_before_use(tmp_path: Path) -> None:
    """`source: wheel` with `sha256:`: a wheel that does not match its pin is refused, naming
    the matrix line; a malformed pin is a matrix error; the right pin is accepted."""
    path = wheel(tmp_path / NAME, shared_object(tmp_path))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()

    def inspect(pin: str) -> subprocess.CompletedProcess[str]:
        matrix = tmp_path / "matrix.yaml"
        matrix.write_text(
            f"schema_version: 1\nvariants:\n  - name: mine\n    source: wheel\n"
            f"    path: {NAME}\n    sha256: {pin!r}\n"
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
