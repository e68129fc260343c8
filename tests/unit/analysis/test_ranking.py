"""The ranking of a report: the tiers from the claims (the fastest config alone ahead, the
others behind it), the ranking in tier order with the baseline at 1; configs measured too little
for an interval kept in the lead, unknown; a baseline without results ranks nothing; a
sequential session's recorded looks replayed, their outs among the claims, and an edited look
found out."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest
from support.replay import SEQUENTIAL, replay_session
from support.synthetic import BASELINE, BENCHMARKS, session

from tfbuild.analysis.basis import basis_of
from tfbuild.analysis.judging import judged_of
from tfbuild.analysis.ranking import Ranked, ranked_of
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Results

FAST, MID, SLOW = "fast:default", "mid:default", "slow:default"


def ranked(results: Results, power: bool = False) -> Ranked:
    basis = basis_of([Session(Path("s.json"), results)], None)
    return ranked_of(basis, judged_of(basis, None), power)


def test_the_fastest_config_leads_alone_and_the_ranking_follows_the_tiers() -> None:
    found = ranked(session({FAST: 1.3, MID: 1.0, SLOW: 0.7}, noise=0.01, rounds=12, seed=5))
    assert found.tiers == [[FAST], [MID, SLOW, BASELINE]]
    assert [e.config for e in found.ranking][::3] == [FAST, SLOW]  # mid and the baseline tie
    behind = [e.ratio for e in found.ranking[1:]]
    assert behind == sorted(behind, reverse=True)  # each tier fastest first
    base = found.by_config[BASELINE]
    assert (base.ratio, base.verdict, base.rounds) == (1.0, "baseline", 12)
    assert {c.config for c in found.claims} == {MID, SLOW, BASELINE}
    assert found.resolution == found.by_config[FAST].half_width
    assert found.has_baseline and found.looks == [] and found.replay == []
    assert found.fixed_equivalent is None  # a fixed design is worth itself
    assert ranked(session({FAST: 1.3}, rounds=4), power=True).fixed_equivalent is None


def test_configs_measured_too_little_stay_in_the_lead_unknown() -> None:
    """One round: no interval for anyone, nothing put out, every config in the lead with its
    estimate and an interval that holds anything."""
    found = ranked(session({FAST: 1.3, SLOW: 0.7}, noise=0.01, rounds=1, seed=5))
    assert found.tiers == [[FAST, SLOW, BASELINE]] and found.claims == []
    fast = found.by_config[FAST]
    assert fast.ratio == pytest.approx(1.3, rel=0.05)
    assert (fast.low, fast.high, fast.verdict) == (0.0, math.inf, "undecided")
    assert found.resolution == math.inf


def test_a_baseline_without_results_ranks_nothing() -> None:
    found = ranked(session({FAST: 1.3}, rounds=4, failing={BASELINE: list(BENCHMARKS)}))
    assert not found.has_baseline
    assert f"the baseline {BASELINE} has no results: nothing can be ranked against it" in (
        found.warnings
    )
    assert BASELINE not in {c for tier in found.tiers for c in tier}


def test_a_sequential_sessions_looks_are_replayed_and_their_outs_claimed() -> None:
    """A config 0.6x the others is put out at a look: the report keeps that claim, made at that
    look, and a replay of the looks finds what was recorded; a look edited to put nothing out
    is found out."""
    results = replay_session(4, SEQUENTIAL, 3, {"c01:default": 0.6})
    found = ranked(results)
    assert found.looks == list(results.looks or ()) and found.replay == []
    out = {(e.config, look.round) for look in found.looks for e in look.eliminated}
    assert out and out <= {(c.config, c.round) for c in found.claims}
    edited = tuple(replace(look, eliminated=()) for look in results.looks or ())
    said = ranked(replace(results, looks=edited)).replay
    assert said and all("recorded eliminations []" in line for line in said)
