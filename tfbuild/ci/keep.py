"""`tfbuild ci keep`: results kept as the reference of their machine class, for the next
night's regression gate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tfbuild.analysis.sessions import Session, load_sessions
from tfbuild.errors import ResultsError
from tfbuild.files import atomic_writer
from tfbuild.results.codec import load


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
