"""Files tfbuild writes, locks, digests and archives: an output is written to a hidden temporary
file beside it and renamed into place, so a reader sees the old file or the new one, never half
of one, and a write that fails leaves the old file and no temporary file; a lock is held by one
process at a time and dies with it; digests are sha256 (of a file, or of JSON-able parts in any
key order); tars hold files with the owner given, or root's read-only ones; extracting one writes
plain files and folders only, never outside the destination."""

from __future__ import annotations

import hashlib
import io
import os
import re
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tfbuild.files import (
    Busy,
    atomic_write_json,
    atomic_write_text,
    atomic_writer,
    digest,
    extract_tree,
    locked,
    portable,
    sha256_of,
    tar_of,
)

HOLD = textwrap.dedent(
    """\
    import sys
    from pathlib import Path
    from tfbuild.files import locked
    with locked(Path(sys.argv[1])):
        print("held", flush=True)
        sys.stdin.readline()
    """
)
"""A process that holds the lock on argv[1] until its stdin is closed (or it is killed)."""


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    lock = tmp_path / "locks" / "session.lock"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(lock)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    yield proc, lock
    proc.kill()
    proc.communicate(timeout=10)


def test_a_path_below_the_working_folder_is_recorded_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    here = Path.cwd()
    assert portable(here / "results" / "run.json") == "results/run.json"
    assert portable(here) == "."


def test_a_path_elsewhere_is_recorded_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    elsewhere = Path.cwd().parent / "store" / "wheel.whl"
    assert portable(elsewhere) == str(elsewhere)
    assert portable(elsewhere).startswith("/")


def test_a_written_file_replaces_the_old_one_and_creates_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "results" / "deep" / "out.txt"
    atomic_write_text(target, "first\n")
    atomic_write_text(target, "second\n")
    assert target.read_text() == "second\n"
    assert names(target.parent) == ["out.txt"]


def test_while_writing_the_new_text_is_in_a_hidden_temporary_file_beside_the_target(
    tmp_path: Path,
) -> None:
    """A reader during the write still sees the whole old file."""
    target = tmp_path / "out.json"
    target.write_text("old\n")
    with atomic_writer(target) as fh:
        fh.write("new\n")
        fh.flush()
        assert target.read_text() == "old\n"
        (temporary,) = [p for p in tmp_path.iterdir() if p != target]
        assert re.fullmatch(r"\.out\.json\..+\.tmp", temporary.name), temporary.name
        assert temporary.read_text() == "new\n"
    assert target.read_text() == "new\n"
    assert not temporary.exists()


@pytest.mark.parametrize("interruption", [RuntimeError("disk full"), KeyboardInterrupt()])
def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(
    tmp_path: Path, interruption: BaseException
) -> None:
    target = tmp_path / "out.json"
    target.write_text("old\n")
    with pytest.raises(type(interruption)), atomic_writer(target) as fh:
        fh.write("new, but only ha")
        raise interruption
    assert target.read_text() == "old\n"
    assert names(tmp_path) == ["out.json"]


def test_a_process_killed_while_writing_leaves_the_old_file_whole(tmp_path: Path) -> None:
    """SIGKILL runs no cleanup: what the reader sees is still the old file, entire."""
    target = tmp_path / "results.json"
    target.write_text('{"old": true}\n')
    writer = textwrap.dedent(
        """\
        import sys
        from pathlib import Path
        from tfbuild.files import atomic_writer
        with atomic_writer(Path(sys.argv[1])) as fh:
            fh.write('{"new": ')
            fh.flush()
            print("half written", flush=True)
            sys.stdin.readline()
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "half written\n"
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    assert target.read_text() == '{"old": true}\n'


def test_an_output_gets_the_usual_mode_of_the_umask_not_mkstemps_private_one(
    tmp_path: Path,
) -> None:
    before = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "report.html", "<html></html>")
        assert os.umask(0o027) == 0o027  # reading the umask left it as it was
    finally:
        os.umask(before)
    assert (tmp_path / "report.html").stat().st_mode & 0o777 == 0o640


def test_a_binary_writer_writes_bytes_as_given(tmp_path: Path) -> None:
    target = tmp_path / "wheel.bin"
    with atomic_writer(target, "wb") as fh:
        fh.write(b"\x00\xff\r\n")
    assert target.read_bytes() == b"\x00\xff\r\n"


def test_a_json_document_is_indented_by_two_in_its_own_key_order_with_a_final_newline(
    tmp_path: Path,
) -> None:
    target = tmp_path / "host.json"
    atomic_write_json(target, {"name": "café", "cores": [1, 2], "gpu": None})
    assert target.read_text() == (
        '{\n  "name": "caf\\u00e9",\n  "cores": [\n    1,\n    2\n  ],\n  "gpu": null\n}\n'
    )


def test_a_held_lock_refuses_another_process_that_will_not_wait(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    _, lock = holder
    with pytest.raises(Busy) as busy, locked(lock, wait=False):
        pytest.fail("took a lock another process holds")
    assert str(busy.value) == str(lock)


def test_a_lock_dies_with_the_process_that_held_it(
    holder: tuple[subprocess.Popen[str], Path],
) -> None:
    """A killed session never leaves a stale lock behind."""
    proc, lock = holder
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    with locked(lock, wait=False):
        assert lock.exists()


def test_a_waiting_lock_is_taken_once_the_holder_lets_go(tmp_path: Path) -> None:
    lock = tmp_path / "store.lock"
    got = tmp_path / "got"
    waiter = textwrap.dedent(
        """\
        import sys
        from pathlib import Path
        from tfbuild.files import locked
        print("trying", flush=True)
        with locked(Path(sys.argv[1])):
            Path(sys.argv[2]).write_text("got")
        """
    )
    with locked(lock):
        proc = subprocess.Popen(
            [sys.executable, "-c", waiter, str(lock), str(got)], stdout=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None and proc.stdout.readline() == "trying\n"
        time.sleep(0.5)
        assert not got.exists(), "took the lock while this process held it"
        assert proc.poll() is None
    proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert got.read_text() == "got"


def test_a_lock_is_let_go_when_its_block_ends_even_by_an_exception(tmp_path: Path) -> None:
    """Two opens of one lock file conflict even in one process (flock locks an open file)."""
    lock = tmp_path / "new" / "folder" / "x.lock"
    with locked(lock), pytest.raises(Busy), locked(lock, wait=False):
        pass
    with pytest.raises(ValueError, match="inside"), locked(lock):
        raise ValueError("inside")
    with locked(lock, wait=False):
        pass


def test_a_files_sha256_is_read_in_chunks_to_the_same_digest(tmp_path: Path) -> None:
    small = tmp_path / "abc"
    small.write_bytes(b"abc")
    assert sha256_of(small) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    data = bytes(range(256)) * 4100 + b"tail"  # past the 1 MiB chunk
    big = tmp_path / "big"
    big.write_bytes(data)
    assert sha256_of(big) == hashlib.sha256(data).hexdigest()


def test_a_digest_is_of_the_parts_as_json_with_keys_sorted() -> None:
    expected = hashlib.sha256(b'[{"a": 1, "b": [2, 3]}, "x"]').hexdigest()
    assert digest({"b": [2, 3], "a": 1}, "x") == expected
    assert digest({"a": 1, "b": (2, 3)}, "x") == expected


def test_a_digest_tells_the_order_of_parts_and_reads_other_values_as_text() -> None:
    assert digest("a", "b") != digest("b", "a")
    assert digest(Path("/srv/matrix.yaml")) == digest("/srv/matrix.yaml")
    assert digest({"a": 1}) != digest({"a": 2})


def test_a_tar_holds_owned_files_then_roots_read_only_folders_and_files() -> None:
    data = tar_of({"home/me/run.sh": (b"echo\n", 1000)}, {"etc/tfbuild/pip.conf": b"[global]\n"})
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = [(m.name, m.isdir(), oct(m.mode), m.uid, m.gid, m.size) for m in tar.getmembers()]
        read_only = tar.extractfile("etc/tfbuild/pip.conf")
        assert read_only is not None and read_only.read() == b"[global]\n"
    assert members == [
        ("home/me/run.sh", False, "0o644", 1000, 1000, 5),
        ("etc", True, "0o555", 0, 0, 0),
        ("etc/tfbuild", True, "0o555", 0, 0, 0),
        ("etc/tfbuild/pip.conf", False, "0o444", 0, 0, 9),
    ]


def test_extracting_writes_plain_files_and_folders_only_inside_the_destination(
    tmp_path: Path,
) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:

        def add(name: str, data: bytes = b"", kind: bytes = tarfile.REGTYPE, to: str = "") -> None:
            info = tarfile.TarInfo(name)
            info.type, info.size, info.linkname = kind, len(data), to
            tar.addfile(info, io.BytesIO(data) if data else None)

        add("logs", kind=tarfile.DIRTYPE)
        add("logs/build.log", b"ok\n")
        add("deep/er/result.json", b"{}")  # no folder members before it
        add(str(tmp_path / "absolute.txt"), b"abs")
        add("../escaped.txt", b"up")
        add("logs/../../escaped-too.txt", b"up")
        add("logs/passwd", kind=tarfile.SYMTYPE, to="/etc/passwd")
        add("logs/hard", kind=tarfile.LNKTYPE, to="logs/build.log")
    dest = tmp_path / "out" / "dest"
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        extract_tree(tar, dest)
    written = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    assert written == ["deep", "deep/er", "deep/er/result.json", "logs", "logs/build.log"]
    assert (dest / "logs" / "build.log").read_bytes() == b"ok\n"
    assert (dest / "deep" / "er" / "result.json").read_bytes() == b"{}"
    assert names(tmp_path / "out") == ["dest"]
    assert names(tmp_path) == ["out"]


def test_what_tar_of_packs_extract_tree_unpacks(tmp_path: Path) -> None:
    data = tar_of({"a/b.txt": (b"hi", 0)}, {"r/o/c.txt": b"ro"})
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        extract_tree(tar, tmp_path)
    found = {str(p.relative_to(tmp_path)): p.read_bytes() for p in tmp_path.rglob("*.txt")}
    assert found == {"a/b.txt": b"hi", "r/o/c.txt": b"ro"}
