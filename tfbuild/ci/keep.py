"""`tfbuild ci keep`: results kept as the reference of their machine class, for the next
night's regression gate; `tfbuild ci history`: every night kept, and the page of their trend."""

from __future__ import annotations

import gzip
import re
from collections.abc import Sequence
from pathlib import Path

from tfbuild.analysis.history import nights_by_class
from tfbuild.analysis.sessions import Session, load_sessions
from tfbuild.errors import ResultsError
from tfbuild.files import atomic_write_text, atomic_writer
from tfbuild.report.history import history_html
from tfbuild.results.codec import load

HISTORY = "history"
"""The folder, beside the reference results, where every night's results stay."""
_SAFE = re.compile(r"[^A-Za-z0-9._-]")
PAGE = "history.html"
"""The trend page written beside them."""


def keep(new: Sequence[Path], into: Path) -> tuple[list[Path], list[Path]]:
    """Make results the reference of their machine class in `into`: results there of the same
    classes go, other classes' stay (a hosted runner's CPU model changes from night to night).
    Returns (kept, removed)."""
    sessions = load_sessions(new)
    classes = {s.host_key for s in sessions}
    earlier = sorted([*into.glob("*.json"), *into.glob("*.json.gz")])
    kept = []
    for s in sessions:  # written before anything is removed
        target = into / s.path.name
        with atomic_writer(target, "wb") as out:
            out.write(s.path.read_bytes())
        kept.append(target)
    removed = []
    for old in earlier:
        if old in kept:
            continue
        try:
            old_class = Session(old, load(old)).host_key
        except (ResultsError, KeyError, TypeError):
            old_class = None  # unreadable: replaced, never compared
        if old_class is None or old_class in classes:
            old.unlink()
            removed.append(old)
    return kept, removed


def record_history(new: Sequence[Path], into: Path) -> tuple[list[Path], Path, int, int]:
    """Add these results to INTO/history/ (gzip-compressed, named by their session's id, so
    a session added twice is one night however its file was named) and write
    INTO/history.html from every night there. Returns the files added, the page, and how many
    nights of how many machine classes it shows."""
    folder = into / HISTORY
    folder.mkdir(parents=True, exist_ok=True)
    added = []
    for session in load_sessions(new, same_work=False):  # each read: nothing broken is kept
        target = folder / f"{_SAFE.sub('-', session.id)}.json.gz"
        data = session.path.read_bytes()
        with atomic_writer(target, "wb") as out:
            out.write(data if session.path.name.endswith(".gz") else gzip.compress(data, mtime=0))
        added.append(target)
    kept = sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")])
    by_class = nights_by_class(load_sessions(kept, same_work=False))
    page = into / PAGE
    atomic_write_text(page, history_html(by_class))
    return added, page, sum(len(n) for n in by_class.values()), len(by_class)
