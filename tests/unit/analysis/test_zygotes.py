"""The resemblance of a zygote's children as a session's own data tell it, and how much wider it
makes an interval: against sessions whose intraclass correlation is set (simulated), and
against the design effect worked by hand."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace

import pytest

from tfbuild.analysis.rounds import Rounds
from tfbuild.analysis.scenarios import by_name, simulate
from tfbuild.analysis.simulated import GAUSSIAN, Truth
from tfbuild.analysis.zygotes import CONFIDENCE, inflation, resemblance
from tfbuild.results.model import Design


def _rounds(zygotes: dict[str, list[str]]) -> tuple[Rounds, list[tuple[str, int]]]:
    """A session of one round per entry, each config's process in that round forked from the
    zygote named (its values are of no matter here)."""
    n = len(next(iter(zygotes.values())))
    table = {(c, "b"): {("s", r): 1.0 for r in range(n)} for c in zygotes}
    named = {(c, ("s", r)): z for c, zs in zygotes.items() for r, z in enumerate(zs)}
    return Rounds(table, named), [("s", r) for r in range(n)]


def test_the_design_effect_is_kishs() -> None:
    """One config against a baseline process, six rounds: the config's processes from two
    zygotes of three each, the baseline's fresh. M = (9 + 9) / 6 = 3, so the variance of the
    mean is (1 + 2 rho) times a fresh process's for the config, and its sample variance reads
    1 - 2 rho / 5 of its true spread: with equal spreads, (2 + 2 rho) / (2 - 2 rho / 5)."""
    logs, rounds = _rounds({"x": ["a", "a", "a", "b", "b", "b"], "base": list("uvwxyz")})
    rho = 0.3
    expected = (1 + (1 + 2 * rho)) / (1 + (1 - 2 * rho / 5))
    assert inflation(logs, {"x": 1.0, "base": -1.0}, rounds, rho) == pytest.approx(expected)
    assert inflation(logs, {"x": 1.0, "base": -1.0}, rounds, 0.0) == 1.0
    fresh, rounds = _rounds({"x": list("abcdef"), "base": list("uvwxyz")})
    assert inflation(fresh, {"x": 1.0, "base": -1.0}, rounds, 0.9) == pytest.approx(1.0)


def test_a_fresh_process_is_its_own_zygote() -> None:
    """A process no zygote is named for (a fresh one) is a zygote of its own: a fresh session
    tells nothing of resemblance, and nothing is widened for it."""
    table = {(c, "b"): {("s", r): 1.0 + 0.01 * ((r * 7 + i) % 5) for r in range(12)}
             for i, c in enumerate(("x", "y", "base"))}  # fmt: skip
    logs = Rounds(table)
    assert logs.zygote("x", ("s", 3)) != logs.zygote("x", ("s", 4))
    assert resemblance(logs, ["x", "y", "base"], ["b"], None) is None


def _estimates(icc: float, seeds: int) -> tuple[list[float], list[float]]:
    """rho and its upper bound, as the report gives them, over fixed sessions of 30 rounds of
    six equally fast configs whose zygotes' children resemble at `icc` on the overall speed."""
    truth = Truth({}, noise=GAUSSIAN, zygote=icc)
    scenario = replace(by_name(["null-6"])[0], truth=truth, own=Design(kind="fixed", rounds=30))
    found = []
    for seed in range(seeds):
        _, report = simulate(scenario, seed)
        assert report.zygotes is not None and report.zygotes.resemblance is not None
        found.append(report.zygotes.resemblance)
    return [f.rho for f in found], [f.upper for f in found]


@pytest.mark.parametrize("icc", [0.0, 0.3])
def test_the_estimate_recovers_the_resemblance_set(icc: float) -> None:
    """Over 30 sessions: the estimate's median is near the intraclass correlation set, and its
    upper bound (CONFIDENCE) lies at or above it in roughly that share of the sessions."""
    rho, upper = _estimates(icc, 30)
    assert abs(statistics.median(rho) - icc) < 0.08, rho
    covered = sum(u >= icc - 1e-12 for u in upper) / len(upper)
    assert covered >= CONFIDENCE - 0.2, (covered, upper)
    assert all(u >= r for u, r in zip(upper, rho, strict=True))


def test_a_forked_session_is_widened_by_what_its_own_data_say() -> None:
    """The report names the session's zygotes and its estimate; where the children resemble
    strongly, the intervals against the baseline are wider than they would be for independent
    processes, by the factor the report states."""
    truth = Truth({}, noise=GAUSSIAN, zygote=0.5)
    scenario = replace(by_name(["null-6"])[0], truth=truth, own=Design(kind="fixed", rounds=30))
    _, report = simulate(scenario, 3)
    z = report.zygotes
    assert z is not None and z.resemblance is not None and z.resemblance.rho > 0.2
    assert z.widening > 1.2 and z.most == 3
    fresh = replace(scenario, truth=replace(truth, processes="fresh"))
    _, plain = simulate(fresh, 3)
    assert plain.zygotes is None
    assert math.isfinite(z.widening)
