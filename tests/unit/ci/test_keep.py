"""Reference results kept per machine class (`tfbuild ci keep`)."""

from __future__ import annotations

import gzip
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


def test_history_keeps_every_night_and_the_reference_folder_as_it_was(tmp_path: Path) -> None:
    """Nights whose files share a name (each night's bench job writes runner-a.json) are kept
    apart, by session; a night added again is still one night; the reference results beside
    the history are neither read nor changed, and the gate's folder of them holds no history
    (`compare --against` reads the top level only)."""
    reference = tmp_path / "previous"
    old = write(reference / "runner-a.json", session({}, seed=1, session_id="night-1"))
    before = old.read_bytes()
    for n in (2, 3):
        write(tmp_path / f"n{n}" / "runner-a.json", session({}, seed=n, session_id=f"night-{n}"))
        proc = run_tfbuild("ci", "history", str(tmp_path / f"n{n}"), "--into", str(reference))
        assert proc.returncode == 0, proc.stderr
    again = run_tfbuild("ci", "history", str(tmp_path / "n3" / "runner-a.json"),
                        "--into", str(reference))  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert f"wrote {reference / 'history.html'}: 2 nights of 1 machine class(es)" in again.stdout
    history = reference / "history"
    assert sorted(p.name for p in history.iterdir()) == ["night-2.json.gz", "night-3.json.gz"]
    with gzip.open(history / "night-2.json.gz") as f:
        assert json.load(f)["session"]["id"] == "night-2"
    assert old.read_bytes() == before
    assert sorted(p.name for p in reference.iterdir()) == ["history", "history.html", old.name]
    page = (reference / "history.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "2 nights," in page
    read = run_tfbuild("compare", str(reference), "--format", "json")  # as the gate reads it
    assert read.returncode == 0, read.stderr
    assert json.loads(read.stdout)["hosts"][0]["sessions"] == [str(old)]
