"""Recorded sequential sessions replayed through today's decision rules (tfbuild.analysis.replay):
the README's real sessions need fewer processes to the same resolution, the A/A sessions still
claim nothing, and a session recorded under today's rules replays to itself."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES
from support.replay import SEQUENTIAL, false_claims, replay_session, report
from support.synthetic import write

from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.replay import replay
from tfbuild.analysis.sessions import Session
from tfbuild.errors import ResultsError
from tfbuild.results.codec import load
from tfbuild.results.model import Look
from tfbuild.results.rules import CURRENT_RULES

RESULTS = FIXTURES / "results"


def test_the_readme_session_is_answered_with_fewer_processes(tmp_path: Path) -> None:
    """default-run-epyc (recorded under the first rules: 223 processes to ±4.9 % after 30
    rounds): today's rules, first look after round 3, stop at the look that decides the answer
    (a config shown faster than the baseline and within the 5 % margin of the fastest), with
    40 % fewer processes or more, and answer as the recorded session's report does (use the
    same config). The replayed session's looks replay exactly; written and read back,
    `compare` leads with the same answer, stopped where the replay stopped."""
    path = RESULTS / "default-run-epyc.json.gz"
    recorded = load(path)
    assert recorded.design.rules == 1 and len(recorded.runs) == 223
    r = replay(recorded, 3)
    stop = r.replayed.session.stop
    assert stop is not None and stop.reason == "resolved", stop
    looks = r.replayed.looks or ()
    assert looks[-1].round == stop.round
    assert looks[-1].answer == "intel-avx512-2.14:physical-cores"
    assert r.processes <= 0.6 * len(recorded.runs), r.processes
    assert r.replayed.design.rules == CURRENT_RULES
    now = analyse_host([Session(path, r.replayed)])
    before = analyse_host([Session(path, recorded)])
    assert not now.course.replay
    assert now.answer.kind == before.answer.kind == "use"
    assert now.decision.config == before.decision.config == "intel-avx512-2.14:physical-cores"
    assert r.answers is not None and r.answers[1].lines == now.answer.lines
    written = write(tmp_path / "replayed.json", r.replayed)
    assert load(written).looks == looks
    proc = run_tfbuild("compare", str(written))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert said.startswith(" ".join(now.answer.lines[0].split())), said[:300]
    assert f"stopped: the answer is decided after {stop.round} rounds" in said


def test_the_long_default_session_gets_a_tighter_tier_from_fewer_processes() -> None:
    """default-run (a slower machine; it ran to the horizon, ±10.9 %, 322 processes): replayed,
    fewer processes and a narrower leading tier by the same horizon; the configs far behind
    are put out while the A/A control could not yet tell the baseline from itself at the
    margin, because they trail by more than it shows two processes of one build land apart."""
    path = RESULTS / "default-run.json.gz"
    recorded = load(path)
    r = replay(recorded, 3)
    old = (recorded.looks or ())[-1].resolution
    new = (r.replayed.looks or ())[-1].resolution
    assert r.processes < len(recorded.runs) and new < old, (r.processes, new, old)


@pytest.mark.parametrize("name", ["aa-run-epyc.json.gz", "aa-run.json"])
def test_the_aa_sessions_replayed_claim_nothing(name: str) -> None:
    """Sessions whose configs are all the same build: replayed through today's rules, the
    report claims nothing faster or slower, and nothing out of the leading tier."""
    path = RESULTS / name
    r = replay(load(path), 3)
    got = analyse_host([Session(path, r.replayed)])
    assert not false_claims(got) and not got.figures.out, (false_claims(got), got.figures.out)


def test_a_session_recorded_under_todays_rules_replays_to_itself() -> None:
    """The replay is the session loop itself: a session run under today's rules (processes of
    real runs, one config 15 % slower) replays to the same looks, eliminations, stop and
    processes."""
    doc = replay_session(6, SEQUENTIAL, 11, {"c01:default": 0.85})
    assert any(look.eliminated for look in doc.looks or ())
    again = replay(doc)
    assert again.missing == 0 and again.processes == len(doc.runs)
    assert again.replayed.session.stop == doc.session.stop

    def shape(looks: Sequence[Look] | None) -> list[tuple[int, list[str], tuple[str, ...]]]:
        return [
            (look.round, sorted(e.config for e in look.eliminated), look.leading)
            for look in looks or ()
        ]

    assert shape(again.replayed.looks) == shape(doc.looks)
    assert not report(again.replayed).course.replay


def test_a_fixed_session_has_nothing_to_replay() -> None:
    with pytest.raises(ResultsError, match="fixed design"):
        replay(load(RESULTS / "session-2x2-10rounds.json"))


def test_the_replay_command_leads_with_where_it_would_have_stopped() -> None:
    path = RESULTS / "default-run-epyc.json.gz"
    proc = run_tfbuild("replay", "--min-rounds", "3", str(path))
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[0]
    r = replay(load(path), 3)
    stop = r.replayed.session.stop
    assert stop is not None
    assert f"would have stopped after round {stop.round}" in first
    assert f"with {r.processes} benchmark processes" in first and "with 223 (" in first
    doc = json.loads(
        run_tfbuild("replay", "--format", "json", "--min-rounds", "3", str(path)).stdout
    )
    assert doc[0]["replayed"]["processes"] == r.processes
    assert doc[0]["recorded"]["processes"] == 223 and doc[0]["recorded"]["rules"] == 1
    fixed = run_tfbuild("replay", str(RESULTS / "session-2x2-10rounds.json"))
    assert fixed.returncode == 9 and "fixed design" in fixed.stderr
    assert "Traceback" not in fixed.stderr
