"""Reference results kept per machine class (`tfbuild ci keep`)."""

from __future__ import annotations

import json
from pathlib import Path

from support.cli import run_tfbuild
from support.synthetic import session, write

ZEN4 = "zen4-epyc-9654.cpuinfo"


def test_keep_replaces_only_the_same_machine_class(tmp_path: Path) -> None:
    reference = tmp_path / "previous"
    write(reference / "haswell-old.json", session({}, seed=1, session_id="h-old"))
    write(reference / "zen4-old.json", session({}, seed=2, cpuinfo=ZEN4, session_id="z-old"))
    new = write(tmp_path / "new" / "haswell-new.json", session({}, seed=3, session_id="h-new"))
    proc = run_tfbuild("ci", "keep", str(new.parent), "--into", str(reference))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in reference.iterdir()) == ["haswell-new.json", "zen4-old.json"]
    kept = json.loads((reference / "haswell-new.json").read_text())
    assert kept["session"]["id"] == "h-new"
    proc = run_tfbuild("ci", "keep", str(tmp_path / "none"), "--into", str(reference))
    assert proc.returncode == 64 and "RESULTS" in proc.stderr
