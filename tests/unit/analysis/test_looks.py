"""The decision layer as a whole, on sessions replayed from real recorded runs through the
session's own rounds (tests/support/replay.py): error control under the null with and without
adaptive stopping, the planners (the ETA and the fixed design a report compares with), resting,
replay of looks. The large studies (200 sessions each, 16 configs among them) are judged from
their committed evidence (tests/fixtures/looks.json, support/looks.py), shown current by
replaying a few of each study's sessions (the answer's scenario studies among them, judged in
test_scenarios.py); the null is also checked live, at 4 configs, on
enough fresh sessions that a 10 % rate of false claims fails it."""

from __future__ import annotations

from dataclasses import asdict, replace

import pytest
from support.looks import STUDIES, Study, committed, evidence, outcome, pool_sha256
from support.replay import POOL_FILE, SEQUENTIAL, pool, replay_session, report

from tfbuild.analysis.estimates import OVERALL
from tfbuild.results.model import LookEstimate
from tfbuild.results.rules import CURRENT_RULES, rules

SESSIONS = 100
ALLOWED = 4
"""The live null check: at most this many of SESSIONS sessions with a false claim. A design
that made one in 10 % of its sessions passes with probability 2.4 % (binomial); the committed
evidence's 800 null sessions hold none."""
CHECKED = 4
"""Seeds of each committed study replayed again, spread over the study."""


@pytest.mark.parametrize(
    "study",
    [
        pytest.param(s, marks=[pytest.mark.slow] if s.configs > 4 else [], id=s.name)
        for s in STUDIES
    ],
)
def test_the_committed_evidence_is_current(study: Study) -> None:
    """tests/fixtures/looks.json replays today's pool under today's rules, holds every study
    as defined (sessions, seeds) with one outcome a session, and CHECKED of its sessions,
    replayed (or simulated) again, do what it says they did (both are seeded): after a change
    to the rules, the looks, the simulation or the report, `scripts/looks-evidence` writes it
    again."""
    doc = committed()
    assert doc["pool"] == {"file": POOL_FILE.name, "sha256": pool_sha256()}
    assert doc["rules"] == CURRENT_RULES
    (saved,) = [s for s in doc["studies"] if s["name"] == study.name]
    outcomes = saved.pop("outcomes")
    assert saved == asdict(study) and len(outcomes) == study.sessions
    runs = pool()
    picked = sorted({study.sessions * i // (CHECKED - 1) for i in range(CHECKED - 1)})
    for i in [*picked, study.sessions - 1]:
        seed = study.seeds[i]
        assert outcome(study, seed, runs) == outcomes[i], (study.name, seed)


@pytest.mark.slow
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_no_false_claims_under_the_null(design: str) -> None:
    """Every config replays processes of the same real build, 4 configs: in at most ALLOWED
    of SESSIONS sessions (fresh seeds) does the report claim anything faster or slower
    (verdicts overall and per benchmark and the A/A check), with a fixed 10-round design and
    with adaptive stopping (the default matrix's looks from round 3)."""
    study = Study("live", "null", 4, design, SESSIONS, 90_000)
    runs = pool()
    claimed = [seed for seed in study.seeds if outcome(study, seed, runs)["claims"]]
    assert len(claimed) <= ALLOWED, claimed


@pytest.mark.parametrize("name", [s.name for s in STUDIES if s.kind == "null"])
def test_the_committed_null_sessions_claim_nothing(name: str) -> None:
    """The committed evidence, 200 sessions of each null study: at most 5 % claim anything
    faster or slower. Each config is a fastest config, and putting it out is the selection's
    error: each is put out in at most the selection's share of alpha (1.5 %, + 0.5 %; with 16
    configs 3200 trials, the binomial sd at 1.5 % is 0.21 %)."""
    study = evidence()[name]
    outcomes = study["outcomes"]
    wrong = sum(o["claims"] > 0 for o in outcomes)
    assert wrong <= 0.05 * len(outcomes), wrong
    rate = sum(o["out"] for o in outcomes) / (study["configs"] * len(outcomes))
    assert rate <= rules(CURRENT_RULES).split["selection"] + 0.005, rate


@pytest.mark.parametrize(
    ("name", "by_named", "given"), [("eta-4", 0.45, 0.6), ("eta-16", 0.25, 0.15)]
)
def test_the_eta_is_the_median_stop(name: str, by_named: float, given: float) -> None:
    """At a look, the rounds a running session says are left (the ETA) name a scheduled look
    by which half of the sessions like it have stopped on their answer. On the committed
    replayed sessions of real processes of one build (200 of 4 configs, 40 of 16), over every
    look that gives an ETA: with 4 configs the session had stopped by the look named in at
    least 45 %, and by the look before it in at most 55 %; and of the looks of sessions that
    go on to stop on their answer, at least 60 % give an ETA. With 16 configs of one build a
    session answers "Keep" only once all 16 are known within the margin, mostly at the
    horizon if at all, and the first rounds' variance (real processes: heavy-tailed, and
    quieter early) flatters the forecast: there the session had stopped by the look named in
    at least 25 % (before it: at most 55 %), and at least 15 % of those looks give one."""
    schedule = SEQUENTIAL.schedule
    by = before = named = 0
    looks_resolved = given_resolved = 0
    for session in evidence()[name]["outcomes"]:
        resolved = session["resolved"]
        for round_, rounds_left in session["looks"]:
            if round_ == resolved:
                continue
            looks_resolved += resolved is not None
            if rounds_left is None:
                continue
            named += 1
            given_resolved += resolved is not None
            due = round_ + rounds_left
            assert due in schedule, (round_, rounds_left)
            by += resolved is not None and resolved <= due
            before += resolved is not None and resolved <= schedule[schedule.index(due) - 1]
    shares = (by / named, before / named, given_resolved / looks_resolved)
    assert shares[0] >= by_named and shares[1] <= 0.55, shares
    assert shares[2] >= given, shares


def test_a_fixed_design_of_the_rounds_the_report_names_resolves_half_the_time() -> None:
    """The report of a sequential session says how many rounds a fixed design would have
    needed to resolve its leading tier as well: a fixed session of that many rounds (other
    processes of the same build) does it in 40-65 % of the 200 committed replayed sessions;
    its processes are those rounds of three configs, the baseline and its A/A copy."""
    outcomes = evidence()["fixed-equivalent"]["outcomes"]
    named = [o for o in outcomes if o["rounds"] is not None]
    assert all(o["processes"] == o["rounds"] * 5 for o in named)
    assert len(named) >= 0.9 * len(outcomes), len(named)
    as_well = sum(o["as_well"] for o in named)
    assert 0.4 <= as_well / len(named) <= 0.65, (as_well, len(named))


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
    rules4 = replace(SEQUENTIAL, rules=4)
    rests = 0
    for seed in range(20):
        doc = replay_session(4, rules4, 80_000 + seed)
        r = report(doc)
        assert not r.course.replay, r.course.replay
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
                assert c in r.figures.tiers[0]
                assert r.figures.estimates[(c, OVERALL)].rounds == look.round
                rested[c] = look.estimates[c]
        rests += bool(rested)
        if seed < 5:
            before = replay_session(4, replace(SEQUENTIAL, rules=3), 80_000 + seed)
            assert not [look.rested for look in before.looks or () if look.rested]
    assert rests >= 5, rests


def test_replay_notices_an_edited_rest() -> None:
    doc = replay_session(4, replace(SEQUENTIAL, rules=4), 80_001)
    looks = doc.looks or ()
    k = next(i for i, look in enumerate(looks) if look.rested)
    edited = (*looks[:k], replace(looks[k], rested=()), *looks[k + 1 :])
    assert report(doc).course.replay == []
    said = report(replace(doc, looks=edited)).course.replay
    assert any(f"look after round {looks[k].round}: recorded rests []" in p for p in said), said


def test_replay_notices_an_edited_elimination() -> None:
    doc = replay_session(4, SEQUENTIAL, 3, {"c01:default": 0.6})
    edited = tuple(replace(look, eliminated=()) for look in doc.looks or ())
    assert edited != doc.looks
    assert report(replace(doc, looks=edited)).course.replay
