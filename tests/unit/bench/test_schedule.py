"""A session's rounds, replayed from real recorded processes (support.replay): a config shown
slower stops early while the baseline keeps running, and the budget stops the session."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

from support.cli import run_tfbuild
from support.replay import (
    SEQUENTIAL,
    ReplayRuntime,
    SimClock,
    false_claims,
    pool,
    replay_session,
    report,
    session,
)
from support.synthetic import write

from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.looks import SequentialLooks
from tfbuild.bench.schedule import RoundRunner
from tfbuild.bench.session import add_aa
from tfbuild.progress import QuietReporter
from tfbuild.results.model import Design


def test_a_slow_config_is_stopped_early_and_the_baseline_keeps_running() -> None:
    doc = replay_session(
        4, SEQUENTIAL, 3, {"c01:default": 0.6, "c02:default": 1.0, "c03:default": 1.0}
    )
    first_out = {e.config: look.round for look in doc.looks or () for e in look.eliminated}
    assert first_out["c01:default"] <= 6
    runs_of: dict[str, int] = {}
    for run in doc.runs:
        runs_of[run.config] = runs_of.get(run.config, 0) + 1
    rounds = len(doc.order or ())
    assert runs_of["base:default"] == runs_of["base:default~aa"] == rounds
    assert runs_of["c01:default"] == first_out["c01:default"] < rounds
    r = report(doc)
    assert not r.course.replay
    assert r.figures.estimates[("c01:default", OVERALL)].verdict == "slower"
    assert "c01:default" in r.figures.tiers[-1] and len(r.figures.tiers) == 2
    assert doc.session.stop is not None
    assert doc.session.stop.reason == "resolved"  # rules 5: the answer decided


def test_the_budget_stops_the_session_and_says_so() -> None:
    design = replace(SEQUENTIAL, budget_s=300.0, resolve=0.001)
    doc = replay_session(6, design, 5)
    stop = doc.session.stop
    assert stop is not None
    assert stop.reason == "budget" and "budget of 5 min" in stop.message
    walls = [run.wall_s for run in doc.runs]
    assert sum(walls) <= 300.0
    assert len(doc.order or ()) >= SEQUENTIAL.first


def test_two_rounds_cut_by_the_budget_still_make_a_report(tmp_path: Path) -> None:
    """A budget that ends the session after two rounds (df 1): intervals reach beyond any
    printable ratio, the report says so instead of crashing, and claims nothing faster or
    slower."""
    design = replace(SEQUENTIAL, budget_s=1.0)
    doc = replay_session(16, design, 8)
    assert doc.session.stop is not None
    assert len(doc.order or ()) == 2 and doc.session.stop.reason == "budget"
    r = report(doc)
    assert not false_claims(r)
    path = write(tmp_path / "two.json", doc)
    proc = run_tfbuild("compare", str(path))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert ">999]" in said
    assert "stopped: the budget of 1 s would run out during round 3; stopped after 2 rounds" in said


def test_a_session_stops_on_its_data_only_when_its_answer_can_be_given() -> None:
    """Rules 3: both other configs, far slower, are out after the first looks and the baseline
    alone leads, but the A/A control is still wider than twice the margin, so a report would
    be inconclusive: the baseline and its copy run on, alone, until a look finds the control
    within that span, and the session stops there with an answer (keep the baseline)."""
    rules3 = replace(SEQUENTIAL, rules=3)
    doc = replay_session(3, rules3, 5, {"c01:default": 0.6, "c02:default": 0.6})
    alone = [look for look in doc.looks or () if look.leading == ("base:default",)]
    waited = [look.round for look in alone if not look.aa_fit]
    assert waited, "the seed should give a look where the baseline alone leads too early"
    stop = doc.session.stop
    assert stop is not None and stop.reason == "resolved"
    assert stop.round == next(look.round for look in alone if look.aa_fit) > waited[0]
    for look in alone[: len(waited)]:
        control = look.estimates["base:default~aa"]
        assert max(control.high, 1 / control.low) > (1 + look.margin) ** 2, look
    after = list((doc.order or ())[waited[0] :])
    assert after and all(set(o) == {"base:default", "base:default~aa"} for o in after)
    r = report(doc)
    assert r.answer.kind == "keep", r.answer.lines


class Notes(QuietReporter):
    """What a session says as it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.said: list[str] = []

    def note(self, message: str) -> None:
        self.said.append(message)


def test_a_resting_config_says_so_runs_no_more_and_stays_out_of_a_resumed_session() -> None:
    """Rules 4: a leading config known to the target while another is not rests: the session
    says so at that look, runs it in no later round, and a session resumed from the results
    (`bench --resume`) does not start it again."""
    notes = Notes()
    doc = replay_session(4, replace(SEQUENTIAL, rules=4), 4, reporter=notes)
    rests = {c: look.round for look in doc.looks or () for c in look.rested}
    assert rests, "the seed should give a rest"
    for config, at in rests.items():
        assert any(
            m.startswith(f"resting after round {at}: {config} is known to the target ±5.0%")
            for m in notes.said
        ), notes.said
        later = (doc.order or ())[at:]
        assert later and not [o for o in later if config in o]
    resumed = RoundRunner(doc, {}, QuietReporter(), lambda r: r, lambda: 0.0, SequentialLooks())
    assert not set(rests) & set(resumed.active)
    assert "base:default" in resumed.active


def test_a_forked_session_asks_each_config_for_its_own_zygote_and_stops_them_at_the_end() -> None:
    """A session whose suite says `forked` asks every process of the zygote named by its
    config (so the baseline and its A/A copy never share one), a fresh session asks for none;
    either way every runtime is closed (its zygotes stopped) when the session ends."""
    for processes in ("forked", "fresh"):
        results = add_aa(session(3, Design(kind="fixed", rounds=2), seed=5))
        results = replace(results, suite=replace(results.suite, processes=processes))
        clock = SimClock()
        runtimes = {
            v: ReplayRuntime(pool(), random.Random(v), 1.0, clock) for v in results.variants or {}
        }
        done = RoundRunner(
            results, runtimes, QuietReporter(), lambda r: r, clock, SequentialLooks()
        )
        finished = done.run()
        asked = sorted(z or "" for r in runtimes.values() for z in r.zygotes)
        keys = sorted(run.config for run in finished.runs)
        assert len(keys) == 2 * 4  # 3 configs and the A/A copy, 2 rounds
        assert asked == (keys if processes == "forked" else [""] * len(keys)), processes
        assert all(r.closed == 1 for r in runtimes.values()), processes
