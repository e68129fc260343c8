"""The decision layer as a whole, on sessions replayed from real recorded runs through the
runner's own loop (tests/replay.py): error control under the null with and without adaptive
stopping, power at the rounds the planner predicts, eliminations, budget, replay of looks."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest
from conftest import run_tfbuild
from replay import false_claims, pool, replay_session, report

from tfbuild import compare, stats

SEQUENTIAL: dict[str, Any] = {
    "kind": "sequential",
    "min_rounds": 5,
    "max_rounds": 30,
    "budget_s": None,
    "resolve": 0.05,
}
SESSIONS = 200


def fixed(rounds: int) -> dict[str, Any]:
    return {"kind": "fixed", "rounds": rounds}


@pytest.mark.slow
@pytest.mark.parametrize("configs", [4, 16])
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_no_false_claims_under_the_null(configs: int, design: str) -> None:
    """Every config replays processes of the same real build: in at most 5 % of 200 sessions
    does the report claim anything faster or slower (verdicts overall and per benchmark, tier
    cuts, eliminations at any look), with a fixed 10-round design and with adaptive stopping."""
    runs = pool()
    chosen = fixed(10) if design == "fixed" else SEQUENTIAL
    wrong = 0
    rounds = []
    for seed in range(SESSIONS):
        doc = replay_session(configs, chosen, seed, runs=runs)
        rounds.append(len(doc["order"]))
        r = report(doc)
        assert not r.replay, r.replay
        wrong += bool(false_claims(r))
    assert wrong <= 0.05 * SESSIONS, (wrong, statistics.mean(rounds))


@pytest.mark.slow
@pytest.mark.parametrize("design", ["fixed", "sequential"])
def test_the_fastest_config_stays_in_the_leading_tier(design: str) -> None:
    """All 16 configs replay the same build, so each one is a fastest config and putting it out
    is the selection's error: over 200 sessions each config is put out in at most 1.5 % of
    them (the selection's share of alpha), with a fixed design and with adaptive stopping."""
    runs = pool()
    chosen = fixed(10) if design == "fixed" else SEQUENTIAL
    out = 0
    for seed in range(SESSIONS):
        doc = replay_session(16, chosen, 20_000 + seed, runs=runs)
        out += len({c.config for c in report(doc).out})
    rate = out / (16 * SESSIONS)
    # 3200 trials: the binomial sd at 1.5 % is 0.21 %
    assert rate <= compare.SPLIT["selection"] + 0.005, rate


def noise(runs: list[dict[str, Any]]) -> tuple[float, float]:
    """From the pool: the sd of a config's per-round log ratio to the averaged baseline, and
    the margin (one process's spread), as a session would estimate them."""
    benches = runs[0]["benchmarks"].keys()
    levels = [
        statistics.fmean(
            math.log(statistics.median(s["throughput"] for s in r["benchmarks"][b]["samples"]))
            for b in benches
        )
        for r in runs
    ]
    sd = statistics.stdev(levels)
    return sd * math.sqrt(1.5), max(compare.MIN_MARGIN, math.expm1(sd))


@pytest.mark.slow
@pytest.mark.parametrize("configs", [4, 16])
def test_a_ten_percent_effect_is_found_at_the_planned_rounds(configs: int) -> None:
    """The planner predicts the rounds a 10 % faster config needs; replayed sessions of that
    many rounds call it faster in at least 80 % of 200 sessions."""
    runs = pool()
    sd, margin = noise(runs)
    family = configs  # the other configs and the A/A check
    n = stats.rounds_for(
        math.log(1.10), sd, compare.SPLIT["ranking"] / family, 2, None, math.log1p(margin)
    )
    assert n is not None and n <= 60, n
    found = 0
    for seed in range(SESSIONS):
        doc = replay_session(configs, fixed(n), 10_000 + seed, {"c01:default": 1.10}, runs)
        found += report(doc).estimates[("c01:default", compare.OVERALL)].verdict == "faster"
    assert found >= 0.8 * SESSIONS, (n, found)


def test_a_slow_config_is_stopped_early_and_the_baseline_keeps_running() -> None:
    doc = replay_session(
        4, SEQUENTIAL, 3, {"c01:default": 0.6, "c02:default": 1.0, "c03:default": 1.0}
    )
    first_out = {e["config"]: look["round"] for look in doc["looks"] for e in look["eliminated"]}
    assert first_out["c01:default"] <= 6
    runs_of: dict[str, int] = {}
    for run in doc["runs"]:
        runs_of[run["config"]] = runs_of.get(run["config"], 0) + 1
    rounds = len(doc["order"])
    assert runs_of["base:default"] == runs_of["base:default~aa"] == rounds
    assert runs_of["c01:default"] == first_out["c01:default"] < rounds
    r = report(doc)
    assert not r.replay
    assert r.estimates[("c01:default", compare.OVERALL)].verdict == "slower"
    assert "c01:default" in r.tiers[-1] and len(r.tiers) == 2
    assert doc["session"]["stop"]["reason"] in ("resolved", "max_rounds")


def test_the_budget_stops_the_session_and_says_so() -> None:
    design = {**SEQUENTIAL, "budget_s": 300.0, "resolve": 0.001}
    doc = replay_session(6, design, 5)
    stop = doc["session"]["stop"]
    assert stop["reason"] == "budget" and "budget of 5 min" in stop["message"]
    walls = [run["wall_s"] for run in doc["runs"]]
    assert sum(walls) <= 300.0
    assert len(doc["order"]) >= SEQUENTIAL["min_rounds"]


def test_two_rounds_cut_by_the_budget_still_make_a_report(tmp_path: Path) -> None:
    """A budget that ends the session after two rounds (df 1, levels near zero): intervals
    reach beyond any printable ratio, the report says so instead of crashing, and claims
    nothing."""
    design = {**SEQUENTIAL, "budget_s": 1.0}
    doc = replay_session(16, design, 8)
    assert len(doc["order"]) == 2 and doc["session"]["stop"]["reason"] == "budget"
    r = report(doc)
    assert not false_claims(r) and not r.out
    path = tmp_path / "two.json"
    path.write_text(json.dumps(doc))
    proc = run_tfbuild("compare", str(path))
    assert proc.returncode == 0, proc.stderr
    assert ">999]" in proc.stdout and "stopped: the budget of 0 min" in " ".join(
        proc.stdout.split()
    )


def test_replay_notices_an_edited_elimination() -> None:
    doc = replay_session(4, SEQUENTIAL, 3, {"c01:default": 0.6})
    look = next(look for look in doc["looks"] if look["eliminated"])
    look["eliminated"] = []
    assert report(doc).replay
