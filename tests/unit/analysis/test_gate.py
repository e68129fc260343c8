"""The regression gate (`compare --against`): new results against old ones of the same machine
class."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from support.cli import compare, run_tfbuild
from support.synthetic import session, write

from tfbuild.analysis.gate import gate
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import RunFailure

ZEN4 = "zen4-epyc-9654.cpuinfo"


def test_gate_passes_unchanged_and_fails_slower(tmp_path: Path) -> None:
    old = write(tmp_path / "old.json", session({"v:default": 1.0}, seed=1, session_id="old"))
    same = write(tmp_path / "same.json", session({"v:default": 1.0}, seed=2, session_id="same"))
    proc = compare(str(same), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "REGRESSION" not in proc.stdout
    slower = write(
        tmp_path / "slow.json",
        session({"v:default": {"matmul-pinned": 0.85}}, seed=3, session_id="slow"),
    )
    proc = compare(str(slower), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 10
    assert "v:default matmul-pinned -15." in proc.stderr
    assert proc.stdout.count("REGRESSION") == 1
    assert "Traceback" not in proc.stderr


def test_gate_after_a_suite_upgrade_compares_nothing_and_says_why(tmp_path: Path) -> None:
    """Old results of an earlier suite measured other work: a much slower config tonight is
    not a regression against them, and the gate says they were not compared; new results of
    two suites are refused."""
    from tfbuild.config.suite import SUITE_VERSION

    earlier = session({"v:default": 1.0}, seed=1, session_id="old")
    earlier = replace(earlier, suite=replace(earlier.suite, version=SUITE_VERSION - 1))
    old = write(tmp_path / "old.json", earlier)
    slower = session({"v:default": {"matmul-pinned": 0.5}}, seed=3, session_id="slow")
    new = write(tmp_path / "slow.json", slower)
    proc = compare(str(new), "--against", str(old), "--format", "markdown")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"old results of suite v{SUITE_VERSION - 1} are not compared" in proc.stdout
    assert "REGRESSION" not in proc.stdout
    proc = compare(str(new), str(old))
    assert proc.returncode == 9 and "results of different suites" in proc.stderr


def test_gate_leaves_out_old_results_that_started_their_processes_the_other_way() -> None:
    """Forked processes time the same work at levels a few percent from fresh ones: old results
    of the other path are left out, and the gate says so, as it does for another suite."""
    fresh = Session(Path("old-fresh.json"), session({"v:default": 1.0}, seed=1, session_id="a"))
    faster = session({"v:default": 2.0}, seed=2, session_id="b")
    forked = Session(
        Path("old-forked.json"), replace(faster, suite=replace(faster.suite, processes="forked"))
    )
    new = Session(Path("new.json"), session({"v:default": 1.0}, seed=3, session_id="c"))
    verdict = gate([new], [fresh, forked], 0.05)
    assert verdict.causes(0.05) == [], verdict  # half as fast as old-forked: not a regression
    assert {c.benchmark for c in verdict.changes} == {"gru-keras", "matmul-pinned", "input-fed"}
    assert all(0.9 < c.ratio < 1.1 for c in verdict.changes)
    (note,) = [n for n in verdict.notes if "old-forked.json" in n]
    assert note.startswith(
        "1 old result file(s) that forked each from a process of its config that had imported "
        "TensorFlow are not compared with new ones that ran each process fresh"
    )
    # all the old results forked: nothing is compared, and the gate passes as after an upgrade
    alone = gate([new], [forked], 0.05)
    assert alone.changes == [] and alone.causes(0.05) == [] and alone.other_work is None
    assert any("old-forked.json" in n for n in alone.notes)


def test_gate_pairs_results_by_machine_class(tmp_path: Path) -> None:
    """Hostnames do not split machines (a hosted runner gets a new one every job); the CPU
    does: results of another class are not compared. When none of the old results is of the
    new class the gate fails, saying so, unless --new-class-passes (the nightly workflow's
    first night on a new kind of runner)."""
    old = write(tmp_path / "old.json", session({"v:default": 1.0}, seed=1, hostname="runner-1",
                                               session_id="a"))  # fmt: skip
    renamed = write(
        tmp_path / "renamed.json",
        session({"v:default": 0.8}, seed=2, hostname="runner-2", session_id="b"),
    )
    proc = compare(str(renamed), "--against", str(old), "--format", "json")
    assert proc.returncode == 10, proc.stderr
    assert re.search(
        r"^  v:default gru-keras -(19|2\d)\.\d% \(slower than 5% allows", proc.stderr, re.M
    )
    other = write(
        tmp_path / "other.json",
        session({"v:default": 0.8}, seed=3, cpuinfo=ZEN4, session_id="c"),
    )
    proc = compare(str(other), "--against", str(old), "--format", "json")
    assert proc.returncode == 10, proc.stderr
    assert "nothing compared: the old results are from Intel(R) Xeon(R) CPU E5-2680" in (
        proc.stderr
    )
    proc = compare(str(other), "--against", str(old), "--format", "json", "--new-class-passes")
    assert proc.returncode == 0, proc.stderr
    against = json.loads(proc.stdout)["against"]
    assert against["changes"] == [] and against["missing"] == []
    assert any("AMD EPYC 9654" in n and "nothing to compare" in n for n in against["notes"])
    proc = compare(str(other), "--against", str(old), "--allow-different-hosts")
    assert proc.returncode == 10, proc.stderr


def test_against_takes_folders_and_patterns_and_pairs_each_class(tmp_path: Path) -> None:
    """Two runner classes tonight against two last night, given as a folder, a quoted pattern
    or files: each class is compared with its own; a second class file is never read as new
    results."""
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    for folder, seed, slow in ((old_dir, 1, 1.0), (new_dir, 5, 0.85)):
        write(folder / "a.json", session({"v:default": 1.0}, seed=seed, session_id=f"a{seed}"))
        write(
            folder / "b.json",
            session({"v:default": slow}, seed=seed + 1, cpuinfo=ZEN4, session_id=f"b{seed}"),
        )
    for spec in (str(old_dir), str(old_dir / "*.json")):
        proc = compare(str(new_dir), "--against", spec, "--format", "json")
        assert proc.returncode == 10, proc.stderr
        doc = json.loads(proc.stdout)
        assert len(doc["hosts"]) == 2
        hosts = {c["host"].split(" / ")[0] for c in doc["against"]["changes"]}
        assert hosts == {
            "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz",
            "AMD EPYC 9654 96-Core Processor",
        }
        regressions = {
            c["host"].split(" / ")[0] for c in doc["against"]["changes"] if c["regression"]
        }
        assert regressions == {"AMD EPYC 9654 96-Core Processor"}
    proc = compare(str(new_dir), "--against", str(tmp_path / "none" / "*.json"))
    assert proc.returncode == 64 and "no results there" in proc.stderr


def test_gate_fails_on_a_config_with_no_results_or_fewer_benchmarks(tmp_path: Path) -> None:
    """A config that crashed in every round, or lost a benchmark, is a failure of the gate with
    a line naming it, not an absence; a config the new matrix dropped is only noted."""
    effects = {"v:default": 1.0, "w:default": 1.0, "gone:default": 1.0}
    old = write(tmp_path / "old.json", session(effects, seed=1, session_id="o"))
    doc = session({"v:default": 1.0, "w:default": 1.0}, seed=2, session_id="n",
                  failing={"w:default": ["gru-keras"]})  # fmt: skip
    sigill = RunFailure(kind="sigill", signal=4, reason="killed by SIGILL")
    runs = tuple(
        replace(run, status="failed", benchmarks={}, failure=sigill)
        if run.config == "v:default"
        else run
        for run in doc.runs
    )
    new = write(tmp_path / "new.json", replace(doc, runs=runs))
    proc = compare(str(new), "--against", str(old))
    assert proc.returncode == 10, proc.stderr
    causes = [line.strip() for line in proc.stderr.split("cause(s):\n", 1)[1].splitlines()]
    assert len(causes) == 2, proc.stderr
    assert causes[0].startswith(
        "v:default: no results in the new results (round 1: killed by SIGILL)"
    )
    assert causes[1].startswith("w:default: no result for gru-keras in the new results")
    assert "gone:default: not in the new session's matrix" in proc.stderr
    assert proc.stdout.count("MISSING") == 2
    assert "Traceback" not in proc.stderr


def test_host_key_overrides_the_machine_class(tmp_path: Path) -> None:
    """Two machines of different CPUs compare when both sessions say they are one class."""
    old, new = (
        replace(doc, session=replace(doc.session, host_key="ci-pool-large"))
        for doc in (
            session({"v:default": 1.0}, seed=1, session_id="o"),
            session({"v:default": 0.8}, seed=2, cpuinfo=ZEN4, session_id="n"),
        )
    )
    proc = run_tfbuild("compare", str(write(tmp_path / "n.json", new)), "--against",
                       str(write(tmp_path / "o.json", old)))  # fmt: skip
    assert proc.returncode == 10 and "[ci-pool-large]" in proc.stderr
