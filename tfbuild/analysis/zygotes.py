"""How alike the processes one zygote forks are, as a session's own data tell, and how much
wider that makes every interval.

A forked process (`--processes forked`) shares part of its speed with the other children of
its zygote: an intraclass correlation rho. A mean over n processes that came from zygotes
serving m_1, m_2, ... of them has the variance of independent processes times the design effect
1 + rho (M - 1), M = sum(m^2) / n (Kish 1965), and their sample variance understates the spread
by 1 - rho (M - 1) / (n - 1). Intervals that treat the processes as independent are too narrow
by the square root of the ratio, most where few zygotes served many processes.

rho is estimated from the session itself: every config's speed in each round, with the round's and
the config's own effects taken out (an additive fit over the rounds table, so machine drift and
the configs' speeds do not count as resemblance), is split into its zygotes; the sums of squares
between and within zygotes, pooled over the configs, give the one-way random-effects estimate
and its one-sided upper bound from the F distribution (Searle, Casella and McCulloch 1992,
3.5). Each interval is widened with the upper bound (CONFIDENCE), so that a session whose few
zygotes cannot rule out a large rho is not judged as if they had. A fresh process is its own
zygote: a session of fresh processes is never widened.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tfbuild import stats
from tfbuild.analysis.rounds import RoundKey, Rounds, shared_rounds

CONFIDENCE = 0.8
"""The one-sided confidence of the upper bound of rho that intervals are widened with."""
BACKFIT = 20
"""At most this many passes of the additive fit (configs and rounds) over the rounds table; it
stops once no effect moves by more than 1e-9 (a table every config filled is fitted in one)."""


@dataclass(frozen=True)
class Resemblance:
    """What a session's data say of the resemblance of a zygote's children, on one speed (the
    overall one, or a benchmark's)."""

    rho: float
    """The intraclass correlation, estimated (0 when the data show none)."""
    upper: float
    """Its one-sided upper bound at CONFIDENCE: what intervals are widened with."""
    zygotes: int
    """Zygotes that served two processes or more (only they tell)."""
    processes: int
    between_df: float
    within_df: float
    f: float = 1.0
    """The F statistic: mean square between zygotes over within."""
    m0: float = 1.0
    """The zygotes' mean size as the estimate weighs it."""
    confidence: float = CONFIDENCE

    def bound(self, confidence: float, upper: bool = True) -> float:
        """rho's one-sided bound at `confidence`, upper or lower."""
        q = 1.0 - confidence if upper else confidence
        theta = max(0.0, (self.f / stats.f_ppf(q, self.between_df, self.within_df) - 1.0) / self.m0)
        return theta / (1.0 + theta)

    def p_value(self) -> float:
        """The chance of an F this large were the children of a zygote no more alike than
        independent processes."""
        return 1.0 - stats.f_cdf(self.f, self.between_df, self.within_df)

    def to_json(self) -> dict[str, float | int]:
        return {
            "rho": self.rho,
            "upper": self.upper,
            "confidence": self.confidence,
            "zygotes": self.zygotes,
            "processes": self.processes,
            "between_df": self.between_df,
            "within_df": self.within_df,
            "f": self.f,
            "m0": self.m0,
        }


@dataclass(frozen=True)
class ZygoteFigures:
    """What a forked session's own data say of the resemblance of a zygote's children, on the
    overall speed, and what it did to the intervals."""

    resemblance: Resemblance | None
    """None when no zygote has served two processes yet."""
    widening: float
    """The most any config's interval against the baseline was widened by (1: not at all; its
    half-width's factor)."""
    most: int
    """The most processes one zygote served."""
    zygotes: int
    """Zygotes that served the session's processes."""


def _residuals(speeds: Mapping[str, Mapping[RoundKey, float]]) -> dict[str, dict[RoundKey, float]]:
    """Each config's speeds less its own effect and the round's (an additive fit by
    alternating means over the cells present)."""
    config = {c: 0.0 for c in speeds}
    rounds: dict[RoundKey, float] = defaultdict(float)
    by_round: dict[RoundKey, list[str]] = defaultdict(list)
    for c, values in speeds.items():
        for k in values:
            by_round[k].append(c)
    for _ in range(BACKFIT):
        moved = 0.0
        for c, values in speeds.items():
            new = sum(v - rounds[k] for k, v in values.items()) / len(values)
            moved, config[c] = max(moved, abs(new - config[c])), new
        for k, members in by_round.items():
            new = sum(speeds[c][k] - config[c] for c in members) / len(members)
            moved, rounds[k] = max(moved, abs(new - rounds[k])), new
        if moved < 1e-9:
            break
    return {
        c: {k: v - config[c] - rounds[k] for k, v in values.items()} for c, values in speeds.items()
    }


def resemblance(
    logs: Rounds,
    configs: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None,
    confidence: float = CONFIDENCE,
) -> Resemblance | None:
    """rho on the speed over `benchmarks` of `configs`, from the rounds before `upto`, its upper
    bound at `confidence`; None when no zygote served two processes of them (fresh processes,
    or too few yet)."""
    key = ("resemblance", tuple(configs), tuple(benchmarks), upto, confidence)
    if key not in logs.memo:
        logs.memo[key] = _resemblance(logs, configs, benchmarks, upto, confidence)
    found = logs.memo[key]
    assert found is None or isinstance(found, Resemblance)
    return found


def _resemblance(
    logs: Rounds,
    configs: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None,
    confidence: float,
) -> Resemblance | None:
    speeds = {c: logs.speed(c, benchmarks, upto) for c in configs}
    speeds = {c: v for c, v in speeds.items() if len(v) >= 2}
    if len(speeds) < 2:
        return None
    residuals = _residuals(speeds)
    between = within = df_between = df_within = 0.0
    cells = sized = 0
    shrink = 0.0  # sum over configs of n - sum(m^2) / n: what m0 is made of
    for c, values in residuals.items():
        groups: dict[str, list[float]] = defaultdict(list)
        for k, v in values.items():
            groups[logs.zygote(c, k)].append(v)
        n = len(values)
        mean = math.fsum(values.values()) / n
        for g in groups.values():
            centre = math.fsum(g) / len(g)
            within += math.fsum((x - centre) ** 2 for x in g)
            between += len(g) * (centre - mean) ** 2
        df_between += len(groups) - 1
        df_within += n - len(groups)
        shrink += n - sum(len(g) ** 2 for g in groups.values()) / n
        cells += n
        sized += sum(1 for g in groups.values() if len(g) >= 2)
    rounds = len({k for v in speeds.values() for k in v})
    if df_within < 1 or df_between < 1 or within <= 0.0:
        return None
    # the round effects took rounds - 1 degrees of freedom from both, in proportion
    kept = max(0.1, 1.0 - (rounds - 1) / (df_between + df_within))
    df_b, df_w = df_between * kept, df_within * kept
    m0 = shrink / df_between
    ratio = (between / df_between) / (within / df_within)
    theta = max(0.0, (ratio - 1.0) / m0)
    found = Resemblance(
        rho=theta / (1.0 + theta),
        upper=0.0,
        zygotes=sized,
        processes=cells,
        between_df=df_b,
        within_df=df_w,
        f=ratio,
        m0=m0,
        confidence=confidence,
    )
    return replace(found, upper=found.bound(confidence))


def _excess(logs: Rounds, config: str, rounds: Sequence[RoundKey]) -> float:
    """M - 1 of a config's processes over `rounds`: sum(m^2) / n - 1, m the processes each of
    its zygotes served there."""
    sizes: dict[str, int] = defaultdict(int)
    for k in rounds:
        sizes[logs.zygote(config, k)] += 1
    return sum(m * m for m in sizes.values()) / len(rounds) - 1.0


def inflation(
    logs: Rounds,
    terms: Mapping[str, float],
    rounds: Sequence[RoundKey],
    rho: float,
    benchmarks: Sequence[str] = (),
    upto: int | None = None,
) -> float:
    """How much the variance of a comparison's mean over `rounds` is understated when its
    processes are taken as independent: the comparison's value in a round is sum(w * speed)
    over `terms` (config -> w: 1 for the config, -1/2 for each of the baseline's two
    processes), each config's processes clustered in its zygotes at intraclass correlation
    `rho` (its speeds taken as equally spread). 1 for fresh processes or rho 0. A config whose
    own rounds on `benchmarks` before `upto` are all of `rounds` (as most are) has its
    clusters counted once per look."""
    n = len(rounds)
    if rho <= 0.0 or n < 2:
        return 1.0
    truth = seen = 0.0
    for config, w in terms.items():
        own = logs.speed(config, benchmarks, upto) if benchmarks else {}
        if len(own) == n:
            key = ("excess", config, tuple(benchmarks), upto)
            if key not in logs.memo:
                logs.memo[key] = _excess(logs, config, rounds)
            excess = float(logs.memo[key])  # type: ignore[arg-type]
        else:
            excess = _excess(logs, config, rounds)
        truth += w * w * (1.0 + rho * excess)
        seen += w * w * (1.0 - rho * excess / (n - 1))
    return truth / max(seen, 1e-9)


def zygote_factor(
    logs: Rounds,
    configs: Sequence[str],
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    look: int,
) -> float:
    """How much a comparison of `config` with `reference` (the mean of its configs; none: the
    config's own rounds, a contrast within it) on `benchmarks` understates its variance by
    taking the processes one zygote forked as independent: the session's own estimate of rho
    (from `configs`, before round `look`) at its upper bound. Where zygotes served several of
    its processes but the session cannot estimate their resemblance yet (one zygote a config
    so far), it is taken as complete: the comparison knows as little as its zygotes."""
    found = resemblance(logs, configs, benchmarks, look)
    if found is not None and found.upper <= 0.0:
        return 1.0
    terms = {config: 1.0, **{r: -1.0 / len(reference) for r in reference}}
    rounds = shared_rounds(logs, config, reference, benchmarks, look)
    rho = 1.0 if found is None else found.upper
    return inflation(logs, terms, rounds, rho, benchmarks, look)
