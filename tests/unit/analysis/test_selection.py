"""Which configs could be the fastest, on synthetic sessions whose true speeds are set and on
pairs set here: the configs behind the fastest put out (the one truly fastest never), first by
it; the A/A control keeping a claim from a gap no wider than two processes of one build can
show; claims only from pairs whose bound excludes a tie; the floors, the candidates for the
answer, the tiers and the resolution made from them."""

from __future__ import annotations

import math

import pytest
from support.synthetic import BASELINE, session, setup_of

from tfbuild.analysis.estimates import Estimate, Setup
from tfbuild.analysis.selection import (
    Out,
    Pair,
    candidates,
    claims_of,
    floors,
    leading,
    out_claims,
    pairs,
    resolution,
    selection,
    tiers,
)

FAST, MID, SLOW = "fast:default", "mid:default", "slow:default"


def fastest_of_four(aa_effect: float = 1.0) -> Setup:
    """fast 1.3x, mid as fast as the baseline, slow 0.7x, 12 rounds of 1 % noise, at the one
    look of a fixed session."""
    results = session({FAST: 1.3, MID: 1.0, SLOW: 0.7}, noise=0.01, rounds=12, seed=5,
                      aa_effect=aa_effect)  # fmt: skip
    return setup_of(results)


def test_the_configs_behind_the_fastest_are_put_out_by_it_first() -> None:
    """fast 1.3x, mid as fast as the baseline, slow 0.7x: mid, slow and the baseline are out,
    each first by fast (the strongest evidence: the lowest bound); fast never."""
    setup = fastest_of_four()
    configs = [FAST, MID, SLOW, BASELINE]
    found = pairs(setup, configs, 12)
    assert len(found) == 6 and all(p.x != BASELINE for p in found)  # the baseline second
    assert {p.y for p in found if p.x == FAST} == {MID, SLOW, BASELINE}
    claims = out_claims(setup, configs, 12)
    assert {c.config for c in claims} == {MID, SLOW, BASELINE}
    first = {c.config: c for c in reversed(claims)}  # each config's first claim
    assert all(first[c].than == FAST for c in (MID, SLOW, BASELINE))
    assert first[SLOW].ratio == pytest.approx(0.7 / 1.3, rel=0.03)
    assert all(c.ratio < c.upper < 1.0 for c in claims)
    assert leading(configs, claims) == [FAST]
    assert tiers(configs, claims) == [[FAST], [MID, SLOW, BASELINE]]
    low = floors(found, configs)
    assert 1.0 < low[FAST] < 1.3  # ahead of the fastest other, by at least this
    assert low[SLOW] < 0.7 / 1.3 * 1.03


def test_the_a_a_control_keeps_a_config_in_when_its_gap_is_within_its_reach() -> None:
    """The baseline's copy 1.5x the baseline (a machine on which two processes of one build land
    that far apart): a gap of log 1.5 or less puts nothing out, slow's (log 1.3 / 0.7) still
    does; without the control's say the narrower gaps put configs out too."""
    setup = fastest_of_four(aa_effect=1.5)
    configs = [FAST, MID, SLOW, BASELINE]
    culled = selection(setup, configs, 12)
    assert culled.beyond is not None and culled.beyond > math.log(1.5)
    assert {c.config for c in culled.claims} == {SLOW}
    assert {c.config for c in out_claims(setup, configs, 12)} > {SLOW}
    fair = selection(fastest_of_four(), configs, 12)
    assert fair.beyond is not None and fair.beyond < 0.03  # one build's processes agree


def test_claims_are_made_from_pairs_whose_bound_excludes_a_tie() -> None:
    """a behind b beyond the reach: a out; c ahead of d: d out; a pair within its reach, or
    of no reach, claims nothing; a gap within `beyond` claims nothing."""
    found = [
        Pair("a", "b", 5, -0.10, 0.05),
        Pair("c", "d", 5, 0.20, 0.10),
        Pair("e", "f", 5, -0.03, 0.05),
        Pair("g", "h", 5, -0.50, math.inf),
    ]
    assert claims_of(found) == [
        Out("a", "b", 5, math.exp(-0.10), math.exp(-0.05)),
        Out("d", "c", 5, math.exp(-0.20), math.exp(-0.10)),
    ]
    assert [c.config for c in claims_of(found, beyond=0.15)] == ["d"]


def test_floors_are_each_configs_worst_bound_against_the_others() -> None:
    found = [Pair("a", "b", 5, 0.10, 0.05), Pair("a", "c", 5, 0.02, 0.10),
             Pair("b", "c", 5, -0.02, 0.03), Pair("a", "z", 5, 0.9, 0.01)]  # fmt: skip
    assert floors(found, ["a", "b", "c"]) == pytest.approx(
        {"a": math.exp(-0.08), "b": math.exp(-0.15), "c": math.exp(-0.12)}
    )
    assert floors([], ["alone"]) == {"alone": math.inf}


def test_the_resolution_is_the_widest_half_width_of_the_lead() -> None:
    e = Estimate(FAST, "overall", 1.2, 1.1, 1.5, 0.05, 0.01, 10, 0.02, 0.05, "faster")
    f = Estimate(MID, "overall", 1.0, 0.95, 1.02, 0.05, 0.01, 10, 0.02, 0.05, "equivalent")
    assert resolution([FAST, MID], {FAST: e, MID: f}) == pytest.approx(0.25)
    assert resolution([MID], {FAST: e, MID: f}) == pytest.approx(0.05)
    assert resolution([MID, SLOW], {MID: f}) == math.inf  # a config with no interval yet
    assert resolution([], {}) == 0.0


def test_the_candidates_are_the_whole_configs_none_of_them_puts_out() -> None:
    """b and c measured the whole suite, a did not: a's pair puts nobody out among them, and of
    b and c, c is behind b beyond the bound: only b is a candidate, the only one (nothing
    bounds it); when a gap that wide is within what one build shows, both are, each with its
    floor against the other."""
    found = [Pair("a", "b", 5, 0.30, 0.05), Pair("b", "c", 5, 0.20, 0.05)]
    assert candidates(found, ["b", "c"]) == {"b": math.inf}
    assert candidates(found, ["b", "c"], beyond=0.25) == pytest.approx(
        {"b": math.exp(0.15), "c": math.exp(-0.25)}
    )  # a gap within what one build shows puts nobody out
