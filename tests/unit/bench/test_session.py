"""A bench session and its results file: what --resume continues and what it refuses, and the one
writer of a file."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from support.cli import run_tfbuild
from support.env import FIXTURES
from support.synthetic import edited, recorded_document, session, write

from tfbuild.bench.session import session_lock
from tfbuild.config.suite import SUITE_VERSION
from tfbuild.files import locked


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

    path = edited(partial)(tmp_path)  # what a resume needs, the schema requires of a file
    proc = run_tfbuild("bench", "--resume", str(path))
    assert proc.returncode == 9, proc.stderr
    assert f"{path}: order: missing; not a results file tfbuild can read" in proc.stderr


def test_one_session_file_has_one_writer(tmp_path: Path) -> None:
    """While a session holds its file (a bench running, or another resume), --resume is
    refused at once instead of interleaving two writers' runs."""
    document = recorded_document()
    document["session"]["complete"] = False
    document["suite"]["version"] = SUITE_VERSION  # resumable by this tfbuild
    path = tmp_path / "results.json"
    path.write_text(json.dumps(document))
    with locked(session_lock(path)):
        proc = run_tfbuild("bench", "--resume", str(path))
    assert proc.returncode == 9, proc.stderr
    assert "another tfbuild is running this session" in proc.stderr
    assert json.loads(path.read_text()) == document  # untouched


def test_resume_refuses_a_session_of_another_suite(tmp_path: Path) -> None:
    """A session's runs must all measure the same work: resuming one recorded with another
    suite version is refused before anything runs."""
    from tfbuild.config.suite import SUITE_VERSION

    doc = session({"v:default": 1.0}, seed=1)
    doc = replace(
        doc,
        session=replace(doc.session, complete=False),
        suite=replace(doc.suite, version=SUITE_VERSION - 1),
    )
    path = write(tmp_path / "results" / "s.json", doc)
    proc = run_tfbuild("bench", "--resume", str(path), cwd=tmp_path)
    assert proc.returncode == 9, proc.stderr
    assert f"recorded with suite v{SUITE_VERSION - 1}, and this tfbuild runs suite" in proc.stderr
    assert "Traceback" not in proc.stderr
