"""Alpha spending over the looks of a sequential session, against Monte Carlo."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats

from tfbuild import sequential


@pytest.mark.parametrize("spending", ["pocock", "power"])
@pytest.mark.parametrize("alpha", [0.05, 0.003])
def test_sequential_levels_spend_alpha_over_all_looks(alpha: float, spending: str) -> None:
    """A normal random walk looked at after the scheduled rounds (3, 4, 5, 6, 8, ... 40)
    crosses the boundary the levels give with probability alpha (Monte Carlo, 400k paths), not
    alpha per look, along either spending function; spending the rest at an early last look
    gives alpha too."""
    looks = sequential.look_schedule(3, 40)
    assert looks == (3, 4, 5, 6, 8, 10, 12, 15, 18, 22, 27, 33, 40)
    assert sequential.look_schedule(3, 40, 1.35) == (3, 5, 7, 10, 14, 19, 26, 36, 40)
    for chosen, rest in ((looks, False), (looks[:6], True)):
        levels = sequential.sequential_levels(alpha, chosen, 40, rest, spending=spending)
        assert all(0 < level < alpha for level in levels[:-1]) and levels[-1] <= alpha
        rng = np.random.default_rng(5)
        crossed = 0
        paths = 400_000
        critical = scipy.stats.norm.isf(np.array(levels) / 2)
        for _ in range(4):
            walk = np.cumsum(rng.standard_normal((paths // 4, chosen[-1])), axis=1)
            z = np.abs(walk[:, np.array(chosen) - 1]) / np.sqrt(np.array(chosen))
            crossed += int((z > critical).any(axis=1).sum())
        rate = crossed / paths
        spent = alpha if rest else sequential.SPENDING[spending](alpha, chosen[-1] / 40)
        assert abs(rate - spent) < 4 * math.sqrt(spent / paths), (rate, spent)


def test_sequential_t_tests_keep_the_error_rate() -> None:
    """With the variance estimated (t tests at the nominal levels, data with heavy tails), 20k
    sequences looked at on the schedule still claim a difference in at most alpha of them."""
    alpha = 0.05
    looks = np.array(sequential.look_schedule(5, 30))
    levels = np.array(sequential.sequential_levels(alpha, tuple(int(n) for n in looks), 30))
    rng = np.random.default_rng(7)
    data = rng.standard_t(5, size=(20_000, 30))
    n = np.arange(1, 31)
    mean = (np.cumsum(data, axis=1) / n)[:, looks - 1]
    var = (np.cumsum(data**2, axis=1)[:, looks - 1] - looks * mean**2) / (looks - 1)
    t = np.abs(mean) / np.sqrt(var / looks)
    p = 2 * scipy.stats.t.sf(t, looks - 1)
    rate = float((p < levels).any(axis=1).mean())
    assert rate <= alpha, rate
