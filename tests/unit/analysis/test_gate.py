"""The regression gate (`compare --against`): new results against old ones of the same machine
class."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from support.cli import RESULTS, compare, run_tfbuild
from support.synthetic import session, write

from tfbuild.analysis.gate import gate
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import RunFailure, is_aa

ZEN4 = "zen4-epyc-9654.cpuinfo"


def test_gate_passes_unchanged_and_fails_slower(tmp_path: Path) -> None:
    """It says first what it compared: every config (the A/A copy aside) and benchmark both
    sides measured."""
    first = session({"v:default": 1.0, "w:default": 1.0}, seed=1, session_id="old")
    old = write(tmp_path / "old.json", first)
    same = write(
        tmp_path / "same.json",
        session({"v:default": 1.0, "w:default": 1.0}, seed=2, session_id="same"),
    )
    proc = compare(str(same), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "REGRESSION" not in proc.stdout
    configs = [c.key for c in first.configs if not is_aa(c.key)]
    benchmarks = first.suite.benchmarks
    assert (len(configs), len(benchmarks)) == (3, 3)  # the baseline, v and w
    said = f"ompared {len(configs)} configs x {len(benchmarks)} benchmarks"
    assert f"C{said}" in proc.stdout and f"gate: c{said}" in proc.stderr
    markdown = compare(str(same), "--against", str(old), "--format", "markdown")
    assert f"**C{said}.**" in markdown.stdout
    slower = write(
        tmp_path / "slow.json",
        session({"v:default": {"matmul-pinned": 0.85}, "w:default": 1.0}, seed=3,
                session_id="slow"),
    )  # fmt: skip
    proc = compare(str(slower), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 10
    assert re.search(r"\bv:default matmul-pinned -1[3-7]\.\d%", proc.stderr), proc.stderr
    assert proc.stdout.count("REGRESSION") == 1
    assert "Traceback" not in proc.stderr


def test_gate_after_a_suite_upgrade_compares_nothing_and_fails_unless_asked(
    tmp_path: Path,
) -> None:
    """Old results of an earlier suite measured other work: nothing is compared, and the gate
    fails saying so, in one line, unless --new-suite-passes lets the suite change pass (which
    the report then says). Among old results of both suites, those of today's are compared
    and the others noted; new results of two suites are refused."""
    from tfbuild.config.suite import SUITE_VERSION

    earlier = session({"v:default": 1.0}, seed=1, session_id="old")
    earlier = replace(earlier, suite=replace(earlier.suite, version=SUITE_VERSION - 1))
    old = write(tmp_path / "old.json", earlier)
    slower = session({"v:default": {"matmul-pinned": 0.5}}, seed=3, session_id="slow")
    new = write(tmp_path / "slow.json", slower)
    proc = compare(str(new), "--against", str(old), "--format", "markdown")
    assert proc.returncode == 10, proc.stdout + proc.stderr
    why = (
        f"every old result is of suite v{SUITE_VERSION - 1}, the new ones of suite "
        f"v{SUITE_VERSION}: they measured different work"
    )
    causes = proc.stderr.split("1 cause(s):\n", 1)[1].strip().splitlines()
    assert causes == [f"nothing compared: {why} (--new-suite-passes lets a suite change pass)"]
    assert f"**Compared nothing: {why}.**" in proc.stdout
    assert "REGRESSION" not in proc.stdout
    passed = compare(str(new), "--against", str(old), "--format", "markdown", "--new-suite-passes")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert f"**Compared nothing: {why}; passed (--new-suite-passes).**" in passed.stdout
    # old results of both suites: today's are compared (a regression here), the others noted
    same = write(tmp_path / "same.json", session({"v:default": 1.0}, seed=2, session_id="same"))
    both = compare(str(new), "--against", str(old), "--against", str(same))
    assert both.returncode == 10 and "v:default matmul-pinned -5" in both.stderr, both.stderr
    assert f"old results of suite v{SUITE_VERSION - 1} are not compared" in both.stderr
    proc = compare(str(new), str(old))
    assert proc.returncode == 9 and "results of different suites" in proc.stderr


def test_gate_on_the_committed_sessions_of_two_suite_versions_fails() -> None:
    """The committed A/A sessions of suite v2 (aa-run.json) and v3 (aa-run-epyc.json.gz),
    from one machine class each: nothing comparable, exit 10, one line naming the reason."""
    from tfbuild.results.codec import load

    new, old = RESULTS / "aa-run-epyc.json.gz", RESULTS / "aa-run.json"
    versions = load(new).suite.version, load(old).suite.version
    assert versions[0] != versions[1], versions
    proc = compare(str(new), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 10, proc.stdout + proc.stderr
    assert (
        f"nothing compared: every old result is of suite v{versions[1]}, the new ones of suite "
        f"v{versions[0]}: they measured different work"
    ) in proc.stderr
    assert "no old results from" not in proc.stdout + proc.stderr  # not the reason


def test_gate_leaves_out_old_results_that_started_their_processes_the_other_way() -> None:
    """Forked processes time the same work at speeds a few percent from fresh ones: old results
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
    # all the old results forked: nothing is compared, and that fails the gate (no suite
    # changed, so --new-suite-passes does not let it pass)
    alone = gate([new], [forked], 0.05)
    (cause,) = alone.causes(0.05)
    assert alone.changes == [] and not alone.suite_change, alone
    assert cause.startswith("nothing compared: 1 old result file(s) that forked"), cause
    assert "old-forked.json" in cause
    assert alone.compared().startswith("compared nothing: 1 old result file(s) that forked")


def test_gate_fails_when_the_two_sides_share_no_config(tmp_path: Path) -> None:
    """The same machine class, the same suite, but not one config in common (the old
    matrix's variants renamed since): nothing is compared, which fails the gate; each old
    config is noted as not in the new matrix."""
    old = write(tmp_path / "old.json", session({"v:default": 1.0}, seed=1, session_id="a"))
    renamed = old.read_text().replace('"base:', '"was-base:').replace('"v:', '"was-v:')
    old.write_text(renamed)
    new = write(tmp_path / "new.json", session({"v:default": 1.0}, seed=2, session_id="b"))
    proc = compare(str(new), "--against", str(old), "--format", "json")
    assert proc.returncode == 10, proc.stdout + proc.stderr
    assert "nothing compared: the new and the old results share no config and benchmark" in (
        proc.stderr
    )
    against = json.loads(proc.stdout)["against"]
    assert against["changes"] == [] and against["compared"].startswith("compared nothing")
    assert any(n.startswith("was-v:default: not in the new session's matrix") for n in
               against["notes"])  # fmt: skip


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
