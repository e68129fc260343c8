"""Group-sequential error control: alpha spending (Lan-DeMets) over looks at the data after
scheduled rounds, and the schedule of those looks. Pure functions over numbers."""

from __future__ import annotations

import functools
import itertools
import math
import statistics

import numpy as np

from tfbuild.stats import norm_sf


def pocock_spending(alpha: float, fraction: float) -> float:
    """Lan-DeMets spending function of Pocock type: alpha * ln(1 + (e - 1) t)."""
    return alpha * math.log1p((math.e - 1.0) * min(1.0, max(0.0, fraction)))


def power_spending(alpha: float, fraction: float) -> float:
    """Kim-DeMets power-family spending function with exponent 2: alpha * t^2. It keeps most of
    alpha for the late looks, where intervals are judged when a session stops on its
    resolution."""
    return alpha * min(1.0, max(0.0, fraction)) ** 2


SPENDING = {"pocock": pocock_spending, "power": power_spending}


LOOK_GROWTH = 1.2
"""Each scheduled look comes after about 20 % more rounds than the one before (35 % under the
first decision rules)."""


def look_schedule(first: int, horizon: int, growth: float = LOOK_GROWTH) -> tuple[int, ...]:
    """The rounds after which a sequential session looks at its data: `first`, then `growth`
    times as many rounds each time (at least one more), and the horizon last. Fixed before
    the first round."""
    looks = [first]
    while looks[-1] < horizon:
        looks.append(min(horizon, max(looks[-1] + 1, math.ceil(looks[-1] * growth))))
    return tuple(looks)


@functools.lru_cache(maxsize=1024)
def sequential_levels(
    alpha: float,
    looks: tuple[int, ...],
    horizon: int,
    spend_rest_at_last: bool = False,
    one_sided: bool = False,
    grid: int = 401,
    spending: str = "pocock",
) -> tuple[float, ...]:
    """Nominal levels for a comparison looked at after `looks` rounds: two-sided, or (with
    `one_sided`) one-sided for a bound in one direction.

    Rejecting (or excluding 0 from its interval) at look k when its p-value is below level[k]
    crosses a boundary with probability at most alpha over all looks together, wherever the
    comparison stops: the boundary spends alpha along a Lan-DeMets spending function
    (`spending`: Pocock type, or the power family's t^2) over the information fraction
    n / horizon, with the correlation of successive
    looks taken into account (recursive numerical integration over the Brownian sum; Jennison
    and Turnbull, Group Sequential Methods, ch. 19). `spend_rest_at_last` spends everything
    left at the last look: allowed when the session ended there for a reason independent of
    the data (its time budget). Exact for normal data with known variance; the levels are then
    applied to t (or Yuen) p-values, the usual nominal-level practice.
    """
    if not 0.0 < alpha < 1.0 or not looks or looks[0] < 1 or horizon < 1:
        raise ValueError("need 0 < alpha < 1 and looks after at least one round")
    if any(b <= a for a, b in itertools.pairwise(looks)):
        raise ValueError("looks must be increasing")
    sides = 1 if one_sided else 2
    levels: list[float] = []
    spent = 0.0
    xs = np.zeros(0)
    mass = np.zeros(0)
    previous = 0
    for k, n in enumerate(looks):
        last = k == len(looks) - 1
        spend = SPENDING[spending]
        target = alpha if last and spend_rest_at_last else spend(alpha, n / horizon)
        increment = max(1e-300, target - spent)
        spent += increment
        root = math.sqrt(n)
        if k == 0:
            bound = root * statistics.NormalDist().inv_cdf(1.0 - increment / sides)
            xs = np.linspace(-bound if sides == 2 else -8.0 * root, bound, grid)
            density = np.exp(-0.5 * (xs / root) ** 2) / (root * math.sqrt(2.0 * math.pi))
        else:
            step = math.sqrt(n - previous)
            lo, hi = 0.0, 40.0 * root
            while hi - lo > 1e-10 * root:  # about 38 halvings: far below what any level shows
                mid = (lo + hi) / 2.0
                crossed = np.sum(mass * norm_sf((mid - xs) / step))
                if sides == 2:
                    crossed += np.sum(mass * norm_sf((mid + xs) / step))
                lo, hi = (mid, hi) if crossed > increment else (lo, mid)
            bound = hi
            new_xs = np.linspace(-bound if sides == 2 else -8.0 * root, bound, grid)
            kernel = np.exp(-0.5 * ((new_xs[:, None] - xs[None, :]) / step) ** 2)
            density = kernel @ mass / (step * math.sqrt(2.0 * math.pi))
            xs = new_xs
        weights = np.full(grid, xs[1] - xs[0])
        weights[[0, -1]] *= 0.5
        mass = density * weights
        levels.append(float(sides * norm_sf(np.array([bound / root]))[0]))
        previous = n
    return tuple(levels)
