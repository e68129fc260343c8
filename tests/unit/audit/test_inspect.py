"""The audit report of a wheel (`tfbuild inspect`): what is not a wheel is refused, an unreadable
object makes the verdict unproven, a damaged cache entry is redone, and two sessions sharing a
cache audit a wheel once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from support.cext import ELF_WHEEL_NAME, elf_wheel, shared_object
from support.cli import run_tfbuild
from support.env import require


def test_inspect_refuses_what_is_not_a_wheel(tmp_path: Path) -> None:
    good = elf_wheel(tmp_path / ELF_WHEEL_NAME, shared_object(tmp_path))
    cases = {
        "truncated": good.read_bytes()[: good.stat().st_size // 2],
        "not a zip": b"<html>rate limited</html>",
    }
    for case, data in cases.items():
        path = tmp_path / case / ELF_WHEEL_NAME
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
    cut = elf_wheel(tmp_path / "cut" / ELF_WHEEL_NAME, shared_object(tmp_path)[:300])
    proc = run_tfbuild(
        "inspect", str(cut), "--format", "json", "--cache-dir", str(tmp_path / "cache")
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"]["runs"] is None
    assert report["verdict"]["cpu"].startswith("unproven: 1 ELF object(s) could not be read")
    assert [u["path"] for u in report["unreadable"]] == ["pkg/m.so"]


def test_a_corrupted_cache_entry_is_redone(tmp_path: Path) -> None:
    good = elf_wheel(tmp_path / ELF_WHEEL_NAME, shared_object(tmp_path))
    cache = tmp_path / "cache"
    first = run_tfbuild("inspect", str(good), "--cache-dir", str(cache), "--format", "json")
    assert first.returncode == 0, first.stderr
    (entry,) = (cache / "inspect").glob("*-v*.json")
    entry.write_text('{"schema": "tfbuild.inspect/1", "baseli')
    again = run_tfbuild("inspect", str(good), "--cache-dir", str(cache), "--format", "json")
    assert again.returncode == 0, again.stderr
    report = json.loads(again.stdout)
    assert report["cached"] is False and report["verdict"]["runs"] is True
    assert json.loads(entry.read_text())["sha256"] == report["sha256"]  # rewritten whole


def test_sessions_sharing_a_cache_audit_a_wheel_once(tmp_path: Path) -> None:
    """Two `tfbuild inspect` of one wheel with one cache at the same moment: one audits, the
    other waits and reads its report. The wheel holds six copies of this machine's libcrypto,
    an audit of a few seconds, so the two would otherwise both audit."""
    libraries = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libcrypto.so.*"))
    require(bool(libraries), "libcrypto (libssl3) is not installed")
    wheel = tmp_path / "big-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            "big-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: big\nVersion: 1.0\n"
        )
        archive.writestr("big-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
        archive.writestr("big-1.0.dist-info/RECORD", "")
        for n in range(6):
            archive.write(libraries[0], f"big/lib{n}.so")
    argv = [sys.executable, "-m", "tfbuild", "inspect", str(wheel), "--format", "json",
            "--cache-dir", str(tmp_path / "cache")]  # fmt: skip
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]  # fmt: skip
    outputs = [proc.communicate(timeout=600) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outputs
    reports = [json.loads(out) for out, _ in outputs]
    assert sorted(r["cached"] for r in reports) == [False, True]
    assert reports[0]["objects"] == reports[1]["objects"]


def test_a_cold_audit_shows_progress_and_the_verdict_comes_first(tmp_path: Path) -> None:
    """Auditing says what it is doing on stderr as it goes (the amount of code, then each step
    with elapsed time and an estimate of what is left); a cached report needs none; the verdict
    is the first thing printed."""
    good = elf_wheel(tmp_path / ELF_WHEEL_NAME, shared_object(tmp_path))
    cache = tmp_path / "cache"
    cold = run_tfbuild("inspect", str(good), "--cache-dir", str(cache))
    assert cold.returncode == 0, cold.stderr
    progress = cold.stderr.strip().splitlines()
    assert progress[0] == f"auditing {ELF_WHEEL_NAME}, MB of code (1)"
    assert progress[-1].startswith("[") and "s left)" in progress[-1]
    assert cold.stdout.splitlines()[0].startswith("Verdict for ")
    warm = run_tfbuild("inspect", str(good), "--cache-dir", str(cache))
    assert warm.returncode == 0 and warm.stderr == "", warm.stderr
