"""Results files read for analysis: sessions are one comparison only when they measured the same
work the same way, and a refusal names each file and what it did; the look a sequential
session rested a config at, and the interval it rested with."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from support.cli import compare

from tfbuild.analysis.sessions import load_sessions, rest_estimates, rested_at
from tfbuild.errors import ResultsError
from tfbuild.results.codec import load, to_json
from tfbuild.results.model import Look, LookEstimate

FIXTURES = Path(__file__).parents[2] / "fixtures" / "results"
RECORDED = FIXTURES / "aa-run.json"
"""A real session, written before sessions recorded how they started their processes."""


def copy(folder: Path, name: str, processes: str | None = None) -> Path:
    """The recorded session under another name, as it was or saying how it started its
    processes."""
    document = json.loads(RECORDED.read_text())
    if processes is not None:
        document["suite"]["processes"] = processes
    path = folder / name
    path.write_text(json.dumps(document))
    return path


@pytest.mark.parametrize(
    "name", ["aa-run.json", "default-run.json.gz", "session-2x2-10rounds.json"]
)
def test_results_written_before_the_path_was_recorded_ran_fresh(name: str) -> None:
    """Committed sessions of both schema versions hold no `processes`: they are read as fresh,
    and written again they say so."""
    path = FIXTURES / name
    raw = path.read_bytes()
    assert b'"processes"' not in (gzip.decompress(raw) if path.suffix == ".gz" else raw)
    (session,) = load_sessions([path])
    assert session.results.suite.processes == "fresh"
    assert to_json(session.results)["suite"]["processes"] == "fresh"


def test_sessions_that_started_their_processes_differently_are_not_ranked_together(
    tmp_path: Path,
) -> None:
    fresh = copy(tmp_path, "fresh.json")  # as recorded: no `processes`, so fresh
    forked = copy(tmp_path, "forked.json", "forked")
    with pytest.raises(ResultsError) as refused:
        load_sessions([fresh, forked])
    said = str(refused.value)
    assert f"{fresh} ran each process fresh (a new interpreter importing TensorFlow)" in said
    assert f"{forked} forked each from a process of its config that had imported TensorFlow" in (
        said
    )
    assert "their levels differ by a few percent per benchmark" in said
    # the files of each path are named together, in the order given
    again = copy(tmp_path, "again.json", "fresh")
    with pytest.raises(ResultsError, match=rf"{tmp_path}/fresh\.json, {tmp_path}/again\.json ran"):
        load_sessions([fresh, forked, again])


def test_sessions_that_forked_their_processes_are_ranked_together(tmp_path: Path) -> None:
    paths = [copy(tmp_path, f"forked-{i}.json", "forked") for i in range(2)]
    sessions = load_sessions(paths)
    assert [s.results.suite.processes for s in sessions] == ["forked", "forked"]


def test_a_different_suite_is_said_before_a_different_path(tmp_path: Path) -> None:
    document = json.loads(RECORDED.read_text())
    document["suite"] |= {"version": document["suite"]["version"] + 1, "processes": "forked"}
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match="come from suite versions"):
        load_sessions([RECORDED, newer])


def test_compare_refuses_a_fresh_and_a_forked_session_by_its_exit_code(tmp_path: Path) -> None:
    fresh, forked = copy(tmp_path, "a.json"), copy(tmp_path, "b.json", "forked")
    assert load(forked).suite.processes == "forked"
    proc = compare(str(fresh), str(forked))
    assert proc.returncode == ResultsError.exit_code, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("tfbuild: these results started their benchmark processes differently")
    assert f"{fresh} ran each process fresh" in line and f"{forked} forked each" in line
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_a_forked_session_says_so_in_its_report_and_a_fresh_one_as_before(
    tmp_path: Path,
) -> None:
    """The report's header names the way a forked session started its processes, with its
    zygotes (recorded before each process named its own: each config's processes in blocks of
    five, as the runtime of the time forked them); a fresh session's header is what it always
    was."""
    forked = compare(str(copy(tmp_path, "forked.json", "forked")))
    fresh = compare(str(RECORDED))
    assert forked.returncode == fresh.returncode == 0, forked.stderr + fresh.stderr
    said = " ".join(forked.stdout.split())
    assert "Processes: forked from 18 zygotes of their configs (up to 5 each)" in said, said
    assert "zygote" not in fresh.stdout and "Processes:" not in fresh.stdout


def test_a_rested_config_is_judged_at_the_look_it_rested_at_with_its_interval() -> None:
    """Rules 4: b rested at the look after round 6, c at round 9: each is judged there from
    then on, with the interval that look recorded for it; a config that only ran is not."""

    def look(round_: int, rested: tuple[str, ...]) -> Look:
        estimates = {c: LookEstimate(ratio=1.0 + round_ / 100, low=0.9, high=1.2, rounds=round_)
                     for c in ("a", "b", "c")}  # fmt: skip
        return Look(round=round_, elapsed_s=1.0, active=("a", "b", "c"), eliminated=(),
                    leading=("a", "b", "c"), resolution=0.1, margin=0.05, estimates=estimates,
                    rested=rested)  # fmt: skip

    looks = (look(3, ()), look(6, ("b",)), look(9, ("c",)))
    assert rested_at(looks) == {"b": 6, "c": 9}
    assert rest_estimates(looks) == {"b": looks[1].estimates["b"], "c": looks[2].estimates["c"]}
    assert rest_estimates(None) == {} and rested_at(None) == {}
