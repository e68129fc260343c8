"""The decision layer as a whole, on sessions replayed from real recorded runs through the
session's own rounds (tests/support/replay.py): error control under the null with and without
adaptive stopping, power at the difference the report calls detectable, the planners (the ETA
and the fixed design a report compares with), replay of looks."""

from __future__ import annotations

import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from support.replay import SEQUENTIAL, false_claims, fixed, pool, replay_session, report

from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import LookEstimate
from tfbuild.results.rules import DECISIONS, rules

SESSIONS = 200


@pytest.mark.slow
@pytest.mark.parametrize("configs", [4, 16])  # 8 lies between: the same checks, no new one
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_no_false_claims_under_the_null(configs: int, design: str) -> None:
    """Every config replays processes of the same real build: in at most 5 % of 200 sessions
    does the report claim anything faster or slower (verdicts overall and per benchmark and
    the A/A check), with a fixed 10-round design and with adaptive stopping (the default
    matrix's looks from round 3). So each config is a fastest config, and putting it out is the
    selection's error: with 16 configs, each is put out in at most 1.5 % of the sessions (the
    selection's share of alpha; 3200 trials, the binomial sd at 1.5 % is 0.21 %)."""
    runs = pool()
    chosen = fixed(10) if design == "fixed" else SEQUENTIAL
    wrong = out = 0
    rounds = []
    for seed in range(SESSIONS):
        doc = replay_session(configs, chosen, seed, runs=runs)
        rounds.append(len(doc.order or ()))
        r = report(doc)
        assert not r.replay, r.replay
        wrong += bool(false_claims(r))
        out += len({c.config for c in r.out})
    assert wrong <= 0.05 * SESSIONS, (wrong, statistics.mean(rounds))
    if configs == 16:
        rate = out / (configs * SESSIONS)
        assert rate <= rules(DECISIONS).split["selection"] + 0.005, rate


@pytest.mark.slow
@pytest.mark.parametrize(
    ("configs", "sessions", "by_named", "given"), [(4, 200, 0.45, 0.6), (16, 40, 0.25, 0.15)]
)
def test_the_eta_is_the_median_stop(
    configs: int, sessions: int, by_named: float, given: float
) -> None:
    """At a look, the rounds a running session says are left (the ETA) name a scheduled look
    by which half of the sessions like it have stopped on their answer. On replayed sessions
    of real processes of one build, over every look that gives an ETA: with 4 configs the
    session had stopped by the look named in at least 45 %, and by the look before it in at
    most 55 %; and of the looks of sessions that go on to stop on their answer, at least 60 %
    give an ETA. With 16 configs of one build a session answers "Keep" only once all 16 are
    known within the margin, mostly at the horizon if at all, and the first rounds' variance
    (real processes: heavy-tailed, and quieter early) flatters the forecast: there the session
    had stopped by the look named in at least 25 % (before it: at most 55 %), and at least 15 %
    of those looks give one."""
    runs = pool()
    schedule = SEQUENTIAL.schedule
    by = before = named = 0
    looks_resolved = given_resolved = 0
    for seed in range(sessions):
        doc = replay_session(configs, SEQUENTIAL, 50_000 + seed, runs=runs, forecast=True)
        stop = doc.session.stop
        assert stop is not None
        resolved = stop.round if stop.reason == "resolved" else None
        for look in doc.looks or ():
            if look.round == resolved:
                continue
            looks_resolved += resolved is not None
            if look.rounds_left is None:
                continue
            named += 1
            given_resolved += resolved is not None
            due = look.round + look.rounds_left
            assert due in schedule, (look.round, look.rounds_left)
            by += resolved is not None and resolved <= due
            before += resolved is not None and resolved <= schedule[schedule.index(due) - 1]
    shares = (by / named, before / named, given_resolved / looks_resolved)
    assert shares[0] >= by_named and shares[1] <= 0.55, shares
    assert shares[2] >= given, shares


@pytest.mark.slow
def test_a_fixed_design_of_the_rounds_the_report_names_resolves_half_the_time() -> None:
    """The report of a sequential session says how many rounds a fixed design would have
    needed to resolve its leading tier as well: a fixed session of that many rounds (other
    processes of the same build) does it in 40-65 % of 200 replayed sessions."""
    runs = pool()
    as_well = named = 0
    for seed in range(SESSIONS):
        done = replay_session(4, SEQUENTIAL, 60_000 + seed, runs=runs)
        sequential = analyse_host([Session(Path(f"{done.id}.json"), done)], power=True)
        if sequential.fixed_equivalent is None:
            continue
        rounds, processes = sequential.fixed_equivalent
        assert processes == rounds * 5  # three configs, the baseline and its A/A copy
        again = report(replay_session(4, fixed(rounds), 70_000 + seed, runs=runs))
        as_well += again.resolution <= sequential.resolution
        named += 1
    assert named >= 0.9 * SESSIONS, named
    assert 0.4 <= as_well / named <= 0.65, (as_well, named)


def test_a_leader_known_to_the_target_rests_while_another_is_not() -> None:
    """Rules 4 (sessions recorded under them still replay by them): at a look, a leading config
    whose interval against the baseline is within the target, while another leading config's is
    not, rests. Over 20 replayed sessions of 4 configs of the same build (so each is a
    leader): each rest happens only then; the rested config
    runs no round after that look; every later look keeps it in the leading tier with the
    interval it rested with, within the target, and never puts it out; the report keeps it in
    the leading tier, judged at the look it rested at, its looks replaying without a
    difference. Under rules 3 the same sessions rest nothing."""
    target = SEQUENTIAL.resolve
    assert target is not None
    rules4 = replace(SEQUENTIAL, decisions=4)
    rests = 0
    for seed in range(20):
        doc = replay_session(4, rules4, 80_000 + seed)
        r = report(doc)
        assert not r.replay, r.replay
        rested: dict[str, LookEstimate] = {}
        for look in doc.looks or ():
            assert not set(rested) & set(look.active), (seed, look.round)  # resting is for good
            assert not {e.config for e in look.eliminated} & set(rested)
            for c, e in rested.items():
                assert c in look.leading and look.estimates[c] == e, (seed, look.round, c)
                assert e.half_width <= target and look.resolution >= e.half_width
            for c in look.rested:
                assert look.estimates[c].half_width <= target, (seed, look.round, c)
                others = [x for x in look.leading if x in look.active and x not in look.rested]
                waited = [x for x in others if x in look.estimates and x != doc.baseline.config]
                assert any(look.estimates[x].half_width > target for x in waited), seed
                assert c in look.active
                assert max(run.round for run in doc.runs if run.config == c) == look.round - 1
                assert c in r.tiers[0]
                assert r.estimates[(c, OVERALL)].rounds == look.round
                rested[c] = look.estimates[c]
        rests += bool(rested)
        if seed < 5:
            before = replay_session(4, replace(SEQUENTIAL, decisions=3), 80_000 + seed)
            assert not [look.rested for look in before.looks or () if look.rested]
    assert rests >= 5, rests


def test_replay_notices_an_edited_rest() -> None:
    doc = replay_session(4, replace(SEQUENTIAL, decisions=4), 80_001)
    looks = doc.looks or ()
    k = next(i for i, look in enumerate(looks) if look.rested)
    edited = (*looks[:k], replace(looks[k], rested=()), *looks[k + 1 :])
    assert report(doc).replay == []
    said = report(replace(doc, looks=edited)).replay
    assert any(f"look after round {looks[k].round}: recorded rests []" in p for p in said), said


def test_replay_notices_an_edited_elimination() -> None:
    doc = replay_session(4, SEQUENTIAL, 3, {"c01:default": 0.6})
    edited = tuple(replace(look, eliminated=()) for look in doc.looks or ())
    assert edited != doc.looks
    assert report(replace(doc, looks=edited)).replay
