"""From raw bench results to an answer: which config is fastest here, by how much, how sure.

Every claim the report makes is read off one family of simultaneous confidence intervals, so
that with probability at least 95 % every one of them is true at once:

- A round ran every config in contention once, each in a fresh process, in a shuffled order.
  A config's level in a round is its mean log throughput over the benchmarks (the log of the
  geometric mean); the baseline's level is the mean of the baseline's two processes (the
  baseline and its A/A copy), which halves the noise every comparison carries from it.
- Each config is compared with the baseline on the per-round differences of levels (rounds pair
  them, so drift of the machine cancels): a 10 % trimmed mean (Yuen), so one odd round in ten
  has no pull, with a t interval from the winsorized variance.
- The intervals are simultaneous: alpha = 5 % is split between the verdicts against the
  baseline (2.5 %), the selection of the configs that could be the fastest (1.5 %), the
  per-benchmark table (0.5 %) and the seed experiments (0.5 %); within each, Bonferroni over
  the comparisons; and when the session looked at its data at scheduled rounds to stop configs
  early (a sequential design), each comparison is judged at the level alpha spending gives its
  look (Lan-DeMets, Pocock type, see stats.sequential_levels), so the error stays within alpha
  however many looks were taken and wherever the session stopped.
- Verdicts against the baseline, from the interval and a practical margin: faster or slower
  when the whole interval lies beyond the margin, equivalent when it lies inside it, undecided
  otherwise. The margin is the spread of one process of the same build, from the A/A control's
  variance (robust), and never below 2 %.
- Which configs could be the fastest: multiple comparisons with the best (Hsu 1984; Gupta's
  subset selection). A config is out when another one is ahead of it by more than the
  one-sided bound of their paired per-round difference. Only the comparisons of the others
  with the truly fastest config can put that one out wrongly, so Bonferroni runs over those
  k - 1 comparisons, not over all pairs: the fastest config stays in with probability at least
  1 - 1.5 %, at every look together. Outs stop configs during a sequential session (each
  recorded with its look) and cut the two tiers: could be the fastest, and not.

Fixed-design sessions from the same machine are pooled (rounds stay paired within their
session); a sequential session is analysed on its own; different machines are reported side by
side.
"""

from __future__ import annotations

import hashlib
import math
import shlex
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from tfbuild import stats
from tfbuild.bench import results
from tfbuild.bench.suite import CONTRASTS
from tfbuild.errors import ResultsError

OVERALL = "overall"
ALPHA = 0.05
SPLIT = {"ranking": 0.025, "selection": 0.015, "benchmarks": 0.005, "experiments": 0.005}
MIN_MARGIN = 0.02

RoundKey = tuple[str, int]  # (session id, round)


# --------------------------------------------------------------------------------------------
# Sessions and designs


@dataclass(frozen=True)
class Design:
    """How a session chose its rounds: fixed, or sequential with looks scheduled from `first`
    to the error-control horizon `horizon` (stats.look_schedule)."""

    kind: str
    first: int = 2
    horizon: int | None = None
    resolve: float | None = None
    budget_s: float | None = None

    @property
    def sequential(self) -> bool:
        return self.kind == "sequential"

    @property
    def schedule(self) -> tuple[int, ...]:
        if not self.sequential or self.horizon is None:
            return ()
        return stats.look_schedule(self.first, self.horizon)

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> Design:
        recorded = document["session"].get("design") or {"kind": "fixed"}
        if recorded.get("kind") != "sequential":
            return cls("fixed")
        return cls(
            "sequential",
            first=int(recorded["min_rounds"]),
            horizon=int(recorded["max_rounds"]),
            resolve=recorded.get("resolve"),
            budget_s=recorded.get("budget_s"),
        )


@dataclass(frozen=True)
class Timeline:
    """The looks comparisons were judged at, for alpha spending: their rounds, the horizon
    (None for a fixed design: one look at the full alpha), and whether the last look spent
    what was left (the session ended there on its budget, not on the data)."""

    rounds: tuple[int, ...]
    horizon: int | None = None
    spend_rest: bool = False

    def level(self, alpha: float, look: int, one_sided: bool = False) -> float:
        """The nominal level of a comparison at the look after `look` rounds: two-sided, or
        one-sided for a one-sided comparison."""
        if self.horizon is None:
            return alpha
        if look not in self.rounds:
            return 0.0
        k = self.rounds.index(look)
        last = k == len(self.rounds) - 1
        levels = stats.sequential_levels(
            alpha, self.rounds[: k + 1], self.horizon, self.spend_rest and last, one_sided
        )
        return levels[-1]

    @property
    def last(self) -> int:
        return self.rounds[-1] if self.rounds else 0


@dataclass(frozen=True)
class Session:
    path: Path
    document: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.document["session"]["id"])

    @property
    def host_key(self) -> str:
        return self.document["session"].get("host_key") or host_key(self.document["host"])

    @property
    def design(self) -> Design:
        return Design.of(self.document)


def host_key(host: Mapping[str, Any]) -> str:
    """The class of machine results come from, which decides what compares with what: the CPU
    model, the instruction sets TensorFlow uses (level and a digest of the set), the CPUs the
    session could use, the memory class (total or cgroup limit, to the next power of two GiB)
    and the GPUs. Never the hostname: hosted CI runners get a new one every job."""
    cpu, topology = host["cpu"], host["topology"]
    isa = sorted(name for name, have in (cpu.get("tf_flags") or {}).items() if have)
    digest = hashlib.sha256(" ".join(isa).encode()).hexdigest()[:6]
    parts = [
        cpu["model_name"],
        f"{cpu.get('isa_level_name') or 'x86-64'} isa:{digest}",
        f"{topology.get('usable_cpus') or topology['logical_cpus']} CPUs",
    ]
    memory = host.get("memory") or {}
    limits = [b for b in (memory.get("total_bytes"), memory.get("cgroup_limit_bytes")) if b]
    if limits:
        parts.append(f"{2 ** max(0, math.ceil(math.log2(min(limits) / 2**30 * 0.98)))} GiB")
    gpus = [d["name"] for d in (host.get("gpus") or {}).get("devices") or []]
    parts.append(" + ".join(gpus) if gpus else "no GPU")
    return " / ".join(parts)


def load_sessions(paths: Iterable[Path]) -> list[Session]:
    sessions = [Session(p, results.load(p)) for p in paths]
    versions = {s.document["suite"]["version"] for s in sessions}
    if len(versions) > 1:
        raise ResultsError(
            f"these results come from suite versions {sorted(versions)}; "
            "results of different suites measure different things and are not compared"
        )
    return sessions


# --------------------------------------------------------------------------------------------
# What the report holds


@dataclass(frozen=True)
class Estimate:
    """A config relative to a reference, on one benchmark or overall (or a seed experiment)."""

    config: str
    benchmark: str
    ratio: float
    """Throughput ratio, config / reference (trimmed mean of per-round log ratios): above 1 is
    faster."""
    low: float
    high: float
    """The simultaneous interval of the ratio."""
    level: float
    """Two-sided level the interval was drawn at (after multiplicity and alpha spending)."""
    p: float
    """Unadjusted two-sided p-value of 'no difference', for reference."""
    rounds: int
    sd: float
    """Robust sd of one round's log ratio."""
    margin: float
    verdict: str
    """faster, slower, equivalent, undecided (or baseline)."""

    @property
    def half_width(self) -> float:
        """How far the interval reaches from the estimate, as a fraction of it."""
        if not (self.ratio > 0 and math.isfinite(self.low) and math.isfinite(self.high)):
            return math.inf
        return max(self.high / self.ratio - 1.0, 1.0 - self.low / self.ratio)


@dataclass(frozen=True)
class Failure:
    who: str
    reason: str


@dataclass(frozen=True)
class Flags:
    """What a config did not measure: it stays in the report with what it did."""

    rounds: int
    failed_rounds: int
    missing: tuple[str, ...]
    """Benchmarks without any result, so its overall level is over the others."""
    failed_benchmarks: tuple[str, ...]
    """Benchmarks that failed in at least one round."""

    @property
    def clean(self) -> bool:
        return not (self.failed_rounds or self.missing or self.failed_benchmarks)

    def text(self) -> str:
        parts = []
        if self.failed_rounds:
            parts.append(f"failed in {self.failed_rounds} of {self.rounds} rounds")
        if self.missing:
            parts.append(f"no results for {', '.join(self.missing)} (overall over the rest)")
        if self.failed_benchmarks and set(self.failed_benchmarks) != set(self.missing):
            parts.append(f"{', '.join(self.failed_benchmarks)} failed in some rounds")
        return "; ".join(parts)


@dataclass(frozen=True)
class Out:
    """A claim: `config` cannot be the fastest; `than` is ahead of it beyond the bound."""

    config: str
    than: str
    round: int
    """Rounds the claim was made after (the look)."""
    ratio: float
    """Throughput of config over than's, paired by round."""
    upper: float
    """The one-sided upper bound of that ratio (below 1)."""


@dataclass(frozen=True)
class Look:
    """One look of a sequential session: what was known after `round` rounds."""

    round: int
    active: list[str]
    estimates: dict[str, Estimate]
    out: list[Out]
    leading: list[str]
    resolution: float
    """The widest half-width (fraction) of a leading config's interval against the baseline;
    0 when the baseline alone leads."""
    margin: float


@dataclass(frozen=True)
class Choice:
    """The config to use, and what it takes to reproduce it."""

    config: str
    variant: str
    tuning: str
    ratio: float | None
    reason: str
    wheel: str | None
    sha256: str | None
    install: list[str]
    env: dict[str, str]
    threading: list[str]


@dataclass
class HostReport:
    host: dict[str, Any]
    host_key: str
    sessions: list[str]
    design: Design
    baseline: str
    benchmarks: list[str]
    units: dict[str, str]
    rounds: int
    margins: dict[str, float]
    """benchmark (and 'overall') -> practical margin as a fraction (0.02 = 2 %)."""
    margin_source: str
    aa: dict[str, Estimate]
    warnings: list[str]
    detectable: float
    """Smallest true difference shown (faster or slower) with 80 % power for a config with the
    median noise at the median number of rounds, after multiplicity and alpha spending."""
    estimates: dict[tuple[str, str], Estimate]
    ranking: list[Estimate]
    """Overall estimates in tier order, best first (the baseline included with ratio 1)."""
    tiers: list[list[str]]
    out: list[Out]
    """Every config put out of the leading tier, at the look it was put out (eliminations
    included)."""
    resolution: float
    fixed_equivalent: tuple[int, int] | None
    """Rounds and processes a fixed design (every config every round, one look) would need to
    resolve the same leading tier as well as this session did; None for fixed designs."""
    processes: int
    benchmark_s: float | None
    """Seconds the sessions spent benchmarking (installs not counted), when all recorded it."""
    looks: list[dict[str, Any]]
    """The looks recorded by the session (sequential designs), as written in the results."""
    stop: dict[str, Any] | None
    replay: list[str]
    """Differences between the recorded looks and a replay of them from the data."""
    flags: dict[str, Flags]
    failures: list[Failure]
    choice: Choice | None
    contrasts: list[Estimate]
    """The seed experiments inside the recommended config: one benchmark of the suite against
    its counterpart (Estimate.benchmark names the contrast)."""
    medians: dict[tuple[str, str], float]
    round_values: dict[tuple[str, str], list[float]] = field(repr=False)
    samples: dict[tuple[str, str], list[float]] = field(repr=False)
    """(config, benchmark) -> every raw sample throughput, for distribution plots."""
    configs: dict[str, dict[str, Any]] = field(repr=False)
    variants: dict[str, dict[str, Any]] = field(repr=False)


# --------------------------------------------------------------------------------------------
# Reading rounds


def run_values(run: Mapping[str, Any]) -> dict[str, float]:
    """benchmark -> a finished run's value: the median throughput of its samples."""
    return {
        bench: statistics.median(x["throughput"] for x in entry["samples"])
        for bench, entry in run["benchmarks"].items()
        if entry.get("samples")
    }


def round_table(sessions: Sequence[Session]) -> dict[tuple[str, str], dict[RoundKey, float]]:
    """(config, benchmark) -> {(session, round): the round's median sample throughput}."""
    table: dict[tuple[str, str], dict[RoundKey, float]] = defaultdict(dict)
    for s in sessions:
        for run in s.document["runs"]:
            for bench, value in run_values(run).items():
                table[(run["config"], bench)][(s.id, run["round"])] = value
    return table


def raw_samples(sessions: Sequence[Session]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in sessions:
        for run in s.document["runs"]:
            for bench, entry in run["benchmarks"].items():
                out[(run["config"], bench)] += [x["throughput"] for x in entry.get("samples") or []]
    return out


class Rounds:
    """Per-round log throughput of every (config, benchmark), and the levels computed from it,
    cached: every comparison at a look asks for the baseline's level again."""

    def __init__(self, table: Mapping[tuple[str, str], Mapping[RoundKey, float]]) -> None:
        self.table: dict[tuple[str, str], dict[RoundKey, float]] = {
            key: {k: math.log(v) for k, v in rounds.items()} for key, rounds in table.items()
        }
        self._levels: dict[tuple[str, tuple[str, ...], int | None], dict[RoundKey, float]] = {}

    def get(self, key: tuple[str, str]) -> Mapping[RoundKey, float]:
        return self.table.get(key, {})

    def add(self, session: str, run: Mapping[str, Any]) -> None:
        """One more finished run (its median sample throughput per benchmark)."""
        for bench, value in run_values(run).items():
            self.table.setdefault((run["config"], bench), {})[(session, run["round"])] = math.log(
                value
            )
        self._levels.clear()

    def level(
        self, config: str, benchmarks: Sequence[str], upto: int | None
    ) -> dict[RoundKey, float]:
        """round -> mean log throughput over `benchmarks`, for rounds that measured them all
        (before round `upto` only)."""
        key = (config, tuple(benchmarks), upto)
        if key not in self._levels:
            per_round: dict[RoundKey, list[float]] = defaultdict(list)
            for bench in benchmarks:
                for k, value in self.get((config, bench)).items():
                    if upto is None or k[1] < upto:
                        per_round[k].append(value)
            self._levels[key] = {
                k: sum(v) / len(v) for k, v in per_round.items() if len(v) == len(benchmarks)
            }
        return self._levels[key]


def differences(
    logs: Rounds,
    config: str,
    reference: Sequence[str],
    benchmarks: Sequence[str],
    upto: int | None = None,
) -> list[float]:
    """Per round: the config's level minus the reference's (the mean of the reference configs
    that ran in that round), over `benchmarks`, in round order; rounds before `upto` only."""
    mine = logs.level(config, benchmarks, upto)
    theirs = [logs.level(r, benchmarks, upto) for r in reference]
    out = []
    for key in sorted(mine):
        present = [t[key] for t in theirs if key in t]
        if present:
            out.append(mine[key] - sum(present) / len(present))
    return out


def verdict(low: float, high: float, margin: float) -> str:
    """From an interval of the log ratio and a margin (fraction)."""
    m = math.log1p(margin)
    if low > m:
        return "faster"
    if high < -m:
        return "slower"
    if low > -m and high < m:
        return "equivalent"
    return "undecided"


def estimate(
    config: str, benchmark: str, logs: Sequence[float], level: float, margin: float
) -> Estimate | None:
    """The trimmed-mean interval of per-round log ratios at two-sided `level`, with a verdict;
    None before the first look (no level to judge at)."""
    if level <= 0.0 or len(logs) < 2:
        return None
    loc = stats.trimmed(logs)
    low, high = loc.interval(1.0 - level)
    return Estimate(
        config=config,
        benchmark=benchmark,
        ratio=stats.exp(loc.estimate),
        low=stats.exp(low),
        high=stats.exp(high),
        level=level,
        p=loc.p_value(),
        rounds=loc.n,
        sd=loc.sd,
        margin=margin,
        verdict=verdict(low, high, margin),
    )


# --------------------------------------------------------------------------------------------
# The ranking family: every config against the baseline, overall


@dataclass(frozen=True)
class Setup:
    """What every look and the final analysis share."""

    baseline: str
    aa: str | None
    benchmarks: tuple[str, ...]
    compared: tuple[str, ...]
    """Every config compared with the baseline (the A/A copy and the baseline excluded)."""
    design: Design
    measured: Mapping[str, tuple[str, ...]]
    """config -> the benchmarks its overall level is taken over (those it has results for)."""
    family: int
    """Comparisons in the ranking family: every config that was to run, and the A/A check
    (fixed before the first round, so a look and its replay count the same)."""
    timeline: Timeline
    rivals: int = 1
    """k - 1 for the k configs that were to run, the baseline included: the comparisons with
    the fastest one that the selection family covers."""
    at: Mapping[str, int] = field(default_factory=dict)
    """config -> the look its estimate is taken at, when not the last one (a config stopped
    early is judged where it stopped)."""

    @property
    def reference(self) -> tuple[str, ...]:
        return (self.baseline, self.aa) if self.aa else (self.baseline,)

    def look_of(self, config: str) -> int:
        return self.at.get(config, self.timeline.last)

    def level(self, alpha: float, config: str) -> float:
        return self.timeline.level(alpha, self.look_of(config))


def ranking_estimates(setup: Setup, logs: Rounds, margin: float) -> dict[str, Estimate]:
    """Every config against the baseline, overall, each at its own look."""
    alpha = SPLIT["ranking"] / setup.family
    out = {}
    for config in setup.compared:
        benches = setup.measured.get(config) or setup.benchmarks
        d = differences(logs, config, setup.reference, benches, setup.look_of(config))
        e = estimate(config, OVERALL, d, setup.level(alpha, config), margin)
        if e is not None:
            out[config] = e
    return out


def out_claims(setup: Setup, logs: Rounds, configs: Sequence[str], round_: int) -> list[Out]:
    """Which of `configs` (the baseline included) cannot be the fastest: A is out when another
    config B is faster, the one-sided bound of B/A (paired by round) above 1. Multiple
    comparisons with the best (Hsu; Gupta's subset selection): only the comparisons of the
    others with the truly fastest config can wrongly put it out, so Bonferroni runs over
    those k - 1, at one-sided SPLIT["selection"] / (k - 1), spent over the looks. Each pair is
    judged where the earlier of the two stopped. For each A the strongest evidence comes
    first."""
    alpha = SPLIT["selection"] / setup.rivals
    claims = []
    for i, a in enumerate(configs):
        for b in configs[i + 1 :]:
            x, y = (b, a) if a == setup.baseline else (a, b)
            look = min(setup.look_of(x), setup.look_of(y), round_)
            pair = _pair(setup, x, y)
            if not pair:
                continue
            d = differences(logs, x, pair[0], pair[1], look)
            level = setup.timeline.level(alpha, look, one_sided=True)
            if level <= 0.0 or len(d) < 2:
                continue
            loc = stats.trimmed(d)
            if loc.df < 1 or not math.isfinite(loc.se):
                continue
            reach = stats.t_ppf(1.0 - level, loc.df) * loc.se
            if loc.estimate + reach < 0.0:
                claims.append(
                    Out(x, y, look, stats.exp(loc.estimate), stats.exp(loc.estimate + reach))
                )
            elif loc.estimate - reach > 0.0:
                claims.append(
                    Out(y, x, look, stats.exp(-loc.estimate), stats.exp(reach - loc.estimate))
                )
    return sorted(claims, key=lambda c: (c.config, c.upper))


def _pair(setup: Setup, a: str, b: str) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """The reference for a - b (the baseline's two processes averaged) and the benchmarks both
    measured."""
    if a == setup.baseline:
        raise ValueError("the baseline is compared as the second of a pair")
    reference = setup.reference if b == setup.baseline else (b,)
    benches = tuple(
        x for x in setup.measured.get(a, ()) if x in setup.measured.get(b, setup.benchmarks)
    )
    return (reference, benches) if benches else None


def leading(configs: Iterable[str], claims: Iterable[Out]) -> list[str]:
    out = {c.config for c in claims}
    return [c for c in configs if c not in out]


def resolution(lead: Iterable[str], estimates: Mapping[str, Estimate]) -> float:
    widths = [estimates[c].half_width if c in estimates else math.inf for c in lead]
    return max(widths, default=0.0)


def _reaches(sd: float, n: int, level: float, target: float) -> bool:
    """Whether an interval at two-sided `level` from n rounds of noise `sd` reaches ±target."""
    half = stats.t_ppf(1.0 - level / 2.0, n - 1) * sd / math.sqrt(n)
    return stats.expm1(half) <= target


def fixed_rounds_for(
    setup: Setup, estimates: Mapping[str, Estimate], lead: Iterable[str], target: float
) -> int | None:
    """Fewest rounds a fixed design (one look at the full level) needs for every leading
    config's interval to reach ±target, with each config's noise as measured."""
    alpha = SPLIT["ranking"] / setup.family
    most = 2
    for config in lead:
        e = estimates.get(config)
        if e is None or not math.isfinite(e.sd):
            continue
        for n in range(2, 10_000):
            if _reaches(e.sd, n, alpha, target):
                most = max(most, n)
                break
        else:
            return None
    return most


def rounds_to_resolve(
    setup: Setup, estimates: Mapping[str, Estimate], lead: Iterable[str], target: float
) -> int | None:
    """Rounds until every leading config's interval reaches ±target at a scheduled look, if its
    noise stays what it is (the planner behind the ETA); None if not by the horizon."""
    alpha = SPLIT["ranking"] / setup.family
    schedule = setup.design.schedule
    if not schedule or setup.design.horizon is None:
        return None
    now = setup.timeline.last
    most = 0
    for config in lead:
        e = estimates.get(config)
        if e is None or not math.isfinite(e.sd):
            continue
        for k, look in enumerate(schedule):
            if look <= now:
                continue
            level = stats.sequential_levels(alpha, schedule[: k + 1], setup.design.horizon)[-1]
            if _reaches(e.sd, e.rounds + look - now, level, target):
                most = max(most, look - now)
                break
        else:
            return None
    return most


def take_look(setup: Setup, logs: Rounds, active: Sequence[str], round_: int) -> Look:
    """What a sequential session knows at its look after `round_` rounds: the intervals of the
    configs still running, which cannot be the fastest, the leading tier and its resolution.
    `setup` holds the looks scheduled up to this one."""
    margin = noise_margin(setup, logs, setup.benchmarks, upto=round_)
    estimates = ranking_estimates(setup, logs, margin)
    running = [c for c in active if c in estimates or c == setup.baseline]
    claims = out_claims(setup, logs, running, round_)
    lead = leading(running, claims)
    return Look(
        round=round_,
        active=list(active),
        estimates=estimates,
        out=claims,
        leading=lead,
        resolution=resolution([c for c in lead if c != setup.baseline], estimates),
        margin=margin,
    )


def noise_margin(
    setup: Setup, logs: Rounds, benchmarks: Sequence[str], upto: int | None = None
) -> float:
    """The spread of one process of the same build: the robust sd of the A/A copy's per-round
    log ratio to the baseline, over sqrt(2); never below 2 %."""
    if setup.aa is None:
        return MIN_MARGIN
    d = differences(logs, setup.aa, (setup.baseline,), benchmarks, upto)
    spread = stats.trimmed(d).sd / math.sqrt(2.0) if len(d) >= 2 else math.nan
    return max(MIN_MARGIN, stats.expm1(spread)) if math.isfinite(spread) else MIN_MARGIN


def tiers(configs: Sequence[str], claims: Iterable[Out]) -> list[list[str]]:
    """Tier 1: the configs that could be the fastest (never put out); tier 2: the rest."""
    out = {c.config for c in claims}
    tiers = [[c for c in configs if c not in out], [c for c in configs if c in out]]
    return [t for t in tiers if t]


# --------------------------------------------------------------------------------------------
# One host (or one sequential session)


def final_timeline(
    document: Mapping[str, Any], design: Design, rounds: int
) -> tuple[Timeline, dict[str, int], list[str]]:
    """When each comparison of a session is judged, at the end: a fixed design at its one
    look; a sequential one at the looks it took, a config stopped early at the look that
    stopped it, and, when the session ended on its budget or horizon rather than on the data,
    a last look at the final round that spends what alpha is left."""
    if not design.sequential:
        return Timeline((rounds,)), {}, []
    looks = document.get("looks") or []
    taken = [int(look["round"]) for look in looks]
    at = {e["config"]: int(look["round"]) for look in looks for e in look["eliminated"]}
    stop = document["session"].get("stop") or {}
    notes: list[str] = []
    if stop.get("reason") in ("budget", "max_rounds", "fixed"):
        if not taken or taken[-1] != rounds:
            taken.append(rounds)
        return Timeline(tuple(taken), design.horizon, spend_rest=True), at, notes
    if stop.get("reason") not in ("resolved", "nothing_runs"):
        notes.append(
            "the session has not finished: what it claims so far is what its last look knew"
            if taken
            else "the session has not finished and has not looked at its data yet: it makes no "
            "claims until then"
        )
    return Timeline(tuple(taken), design.horizon), at, notes


def _setup(sessions: Sequence[Session], logs: Rounds, design: Design, rounds: int) -> Setup:
    first = sessions[0].document
    baselines = {s.document["baseline"]["config"] for s in sessions}
    if len(baselines) > 1:
        raise ResultsError(
            f"sessions of {sessions[0].host_key} use different baselines {sorted(baselines)}; "
            "compare them separately"
        )
    baseline = first["baseline"]["config"]
    ready = {
        n for s in sessions for n, v in s.document["variants"].items() if v.get("status") == "ready"
    }
    aa = next(
        (
            s.document["baseline"].get("aa_config")
            for s in sessions
            if s.document["baseline"].get("aa_config")
        ),
        None,
    )
    keys: list[str] = []
    for s in sessions:
        for c in s.document["configs"]:
            wanted = c["variant"] in ready and not c.get("aa") and c["key"] != baseline
            if wanted and c["key"] not in keys:
                keys.append(c["key"])
    timeline, at, _ = final_timeline(first, design, rounds)
    return make_setup(first, keys, logs, design, aa, timeline, at)


def make_setup(
    document: Mapping[str, Any],
    keys: Sequence[str],
    logs: Rounds,
    design: Design,
    aa: str | None,
    timeline: Timeline,
    at: Mapping[str, int] | None = None,
) -> Setup:
    """The comparison setup for configs `keys` (baseline and A/A copy excluded) of a session,
    judged at the looks of `timeline`."""
    baseline = document["baseline"]["config"]
    benchmarks = tuple(document["suite"]["benchmarks"])
    measured = {c: tuple(b for b in benchmarks if logs.get((c, b))) for c in [*keys, baseline]}
    compared = tuple(c for c in keys if measured[c])
    for c in compared:  # a partly measured config is compared over what both measured
        measured[c] = tuple(b for b in measured[c] if b in measured[baseline])
    family = len(keys) + (1 if aa else 0)
    return Setup(
        baseline,
        aa,
        benchmarks,
        compared,
        design,
        measured,
        max(1, family),
        timeline,
        max(1, len(keys)),
        at or {},
    )


def _aa_estimates(
    setup: Setup, logs: Rounds
) -> tuple[dict[str, Estimate], dict[str, float], str, list[str]]:
    """The A/A check (the copy against the baseline process alone) per benchmark and overall,
    and the margins it implies: the robust spread of one process, sd(A - A') / sqrt(2)."""
    margins = {b: MIN_MARGIN for b in [*setup.benchmarks, OVERALL]}
    if setup.aa is None:
        return (
            {},
            margins,
            "2 % (no A/A control in these results)",
            [
                "no A/A control in these results: the noise margin stays at 2 % and the noise "
                "floor of this machine is unknown"
            ],
        )
    warnings = []
    aa: dict[str, Estimate] = {}
    ranking_alpha = SPLIT["ranking"] / setup.family
    bench_alpha = SPLIT["benchmarks"] / max(1, setup.family * len(setup.benchmarks))
    for bench in [OVERALL, *setup.benchmarks]:
        benches = setup.benchmarks if bench == OVERALL else (bench,)
        last = setup.timeline.last
        d = differences(logs, setup.aa, (setup.baseline,), benches, last)
        margins[bench] = noise_margin(setup, logs, benches, last)
        alpha = ranking_alpha if bench == OVERALL else bench_alpha
        e = estimate(setup.aa, bench, d, setup.level(alpha, setup.aa), margins[bench])
        if e is None:
            continue
        aa[bench] = e
        if e.verdict in ("faster", "slower"):
            where = "overall" if bench == OVERALL else f"on {bench}"
            warnings.append(
                f"the A/A control (the baseline against its own copy) comes out {e.verdict} "
                f"{where} ({e.ratio - 1:+.1%}): this machine was too unsteady for this session "
                "to be trusted; rerun it on a quieter machine"
            )
    source = (
        f"{margins[OVERALL]:.1%} (the spread of one process of the same build, from the A/A "
        "control; never below 2 %)"
    )
    return aa, margins, source, warnings


def _flags(sessions: Sequence[Session], setup: Setup) -> dict[str, Flags]:
    rounds: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    bench_failed: dict[str, set[str]] = defaultdict(set)
    for s in sessions:
        for run in s.document["runs"]:
            rounds[run["config"]] += 1
            if run.get("failure"):
                failed[run["config"]] += 1
            for bench, entry in run["benchmarks"].items():
                if "error" in entry:
                    bench_failed[run["config"]].add(bench)
    return {
        c: Flags(
            rounds=rounds[c],
            failed_rounds=failed[c],
            missing=tuple(b for b in setup.benchmarks if b not in setup.measured.get(c, ())),
            failed_benchmarks=tuple(sorted(bench_failed[c])),
        )
        for c in [*setup.compared, setup.baseline]
        if rounds[c]
    }


def _failures(sessions: Sequence[Session]) -> list[Failure]:
    failures = []
    for s in sessions:
        for f in s.document["failures"]:
            failures.append(
                Failure(", ".join(f["configs"]) or f["variant"], f"{f['stage']}: {f['reason']}")
            )
        for run in s.document["runs"]:
            if run["failure"]:
                failures.append(
                    Failure(run["config"], f"round {run['round'] + 1}: {run['failure']['reason']}")
                )
            for bench, entry in run["benchmarks"].items():
                if "error" in entry:
                    failures.append(
                        Failure(
                            f"{run['config']} {bench}",
                            f"round {run['round'] + 1}: {entry['error']}",
                        )
                    )
    return failures


def _per_benchmark(
    setup: Setup, logs: Rounds, margins: Mapping[str, float]
) -> dict[tuple[str, str], Estimate]:
    alpha = SPLIT["benchmarks"] / max(1, setup.family * len(setup.benchmarks))
    out = {}
    for config in setup.compared:
        for bench in setup.measured[config]:
            d = differences(logs, config, setup.reference, (bench,), setup.look_of(config))
            e = estimate(config, bench, d, setup.level(alpha, config), margins[bench])
            if e is not None:
                out[(config, bench)] = e
    return out


def _contrasts(logs: Rounds, config: str, setup: Setup, margin: float) -> list[Estimate]:
    """Within one config, each seed experiment's pair of benchmarks, paired by round."""
    alpha = SPLIT["experiments"] / len(CONTRASTS)
    look = setup.look_of(config)
    out = []
    for contrast in CONTRASTS:
        mine = logs.get((config, contrast.faster_if))
        theirs = logs.get((config, contrast.than))
        d = [mine[k] - theirs[k] for k in sorted(set(mine) & set(theirs)) if k[1] < look]
        e = estimate(config, contrast.name, d, setup.level(alpha, config), margin)
        if e is not None:
            out.append(e)
    return out


def _replay(
    sessions: Sequence[Session], setup: Setup, logs: Rounds
) -> tuple[list[dict[str, Any]], list[Out], list[str]]:
    """The looks a sequential session recorded, every out made at them, and any
    difference between what was recorded and what the data give when the looks are replayed."""
    if len(sessions) != 1 or not setup.design.sequential:
        return [], [], []
    recorded = sessions[0].document.get("looks") or []
    claims: list[Out] = []
    problems = []
    for k, look in enumerate(recorded):
        rounds = tuple(int(x["round"]) for x in recorded[: k + 1])
        at_look = replace(setup, timeline=Timeline(rounds, setup.design.horizon), at={})
        replayed = take_look(at_look, logs, look["active"], look["round"])
        claims += replayed.out
        mine = sorted(e["config"] for e in look.get("eliminated", []))
        always = {setup.baseline, setup.aa}
        again = sorted({c.config for c in replayed.out} - always)
        if mine != again:
            problems.append(
                f"look after round {look['round']}: recorded eliminations {mine}, the data "
                f"give {again}"
            )
    return recorded, claims, problems


def _choice(
    ranking: Sequence[Estimate],
    lead: Sequence[str],
    baseline: str,
    margin: float,
    flags: Mapping[str, Flags],
    configs: Mapping[str, Mapping[str, Any]],
    variants: Mapping[str, Mapping[str, Any]],
) -> Choice | None:
    """The config shown faster than the baseline with the best estimate (only a config that
    measured everything in every round), else the baseline; the reason says only what the
    verdicts say."""
    if not ranking:
        return None
    faster = [e for e in ranking if e.verdict == "faster"]
    usable = [e for e in faster if flags.get(e.config, Flags(0, 0, (), ())).clean]
    ratio: float | None
    counts: dict[str, int] = defaultdict(int)
    for e in ranking:
        if e.config != baseline:
            counts[e.verdict] += 1
    tally = ", ".join(
        f"{counts[v]} {v}" for v in ("faster", "equivalent", "undecided", "slower") if counts[v]
    )
    skipped = [e for e in faster if e not in usable]
    note = "".join(
        f"; {e.config} was also shown faster but {flags[e.config].text()}, so it is not recommended"
        for e in skipped
    )
    if usable:
        best = max(usable, key=lambda e: (e.config in lead, e.ratio))
        key, ratio = best.config, best.ratio
        reason = (
            f"{key} is faster than the baseline {baseline}: {best.ratio:.3f}x "
            f"[{best.low:.3f}, {best.high:.3f}], the whole interval beyond the {margin:.1%} "
            f"margin"
        )
        others = [c for c in lead if c not in (key, baseline)]
        if others:
            reason += f"; the leading tier also holds {', '.join(others)}, not told apart from it"
    else:
        key, ratio = baseline, 1.0
        reason = (
            f"no config is shown faster than the baseline {baseline} beyond the {margin:.1%} "
            f"margin ({tally or 'nothing else measured'}), so the baseline stays"
        )
        ahead = [e for e in ranking if e.config in lead and e.config != baseline]
        if baseline not in lead and ahead:
            best = max(ahead, key=lambda e: e.ratio)
            reason += (
                f"; it is out of the leading tier: {best.config} is ahead of it "
                f"({best.ratio:.3f}x [{best.low:.3f}, {best.high:.3f}]), by less than the margin "
                "or by an amount not yet resolved"
            )
    reason += note
    config = configs[key]
    variant = variants.get(config["variant"], {})
    artifact = variant.get("artifact") or {}
    definition = variant.get("definition") or {}
    install = []
    wheel = artifact.get("wheel")
    if wheel:
        constraints = [shlex.quote(c) for c in artifact.get("constraints") or []]
        install.append(" ".join(["pip install", shlex.quote(wheel), *constraints]))
    elif definition.get("requirement"):
        install.append(f"pip install {shlex.quote(definition['requirement'])}")
    threading = []
    if config.get("intra_op"):
        threading.append(
            f"tf.config.threading.set_intra_op_parallelism_threads({int(config['intra_op'])})"
        )
    if config.get("inter_op"):
        threading.append(
            f"tf.config.threading.set_inter_op_parallelism_threads({int(config['inter_op'])})"
        )
    return Choice(
        config=key,
        variant=config["variant"],
        tuning=config["tuning"],
        ratio=ratio,
        reason=reason,
        wheel=wheel,
        sha256=artifact.get("sha256"),
        install=install,
        env={str(k): str(v) for k, v in (config.get("env") or {}).items()},
        threading=threading,
    )


def _benchmark_seconds(sessions: Sequence[Session]) -> float | None:
    spent = [s.document["session"].get("elapsed_s") for s in sessions]
    return float(sum(spent)) if all(isinstance(x, (int, float)) and x > 0 for x in spent) else None


def analyse_host(sessions: Sequence[Session], margin: float | None = None) -> HostReport:
    """The report for sessions of one machine (one sequential session, or pooled fixed ones).
    `margin` overrides the practical margin the A/A control gives."""
    first = sessions[0].document
    design = sessions[0].design if len(sessions) == 1 else Design("fixed")
    table = round_table(sessions)
    logs = Rounds(table)
    rounds = max((len(v) for v in table.values()), default=0)
    if design.sequential:
        rounds = len(first["order"])
    setup = _setup(sessions, logs, design, rounds)
    configs: dict[str, dict[str, Any]] = {}
    variants: dict[str, dict[str, Any]] = {}
    for s in sessions:
        for c in s.document["configs"]:
            configs.setdefault(c["key"], c)
        for name, v in s.document["variants"].items():
            if v.get("status") == "ready" or name not in variants:
                variants[name] = v
    aa, margins, margin_source, warnings = _aa_estimates(setup, logs)
    if margin is not None:
        margins = {b: margin for b in margins}
        margin_source = f"{margin:.1%} (given with --margin)"
    estimates = ranking_estimates(setup, logs, margins[OVERALL])
    looks, claims, replay = _replay(sessions, setup, logs)
    warnings += final_timeline(first, design, rounds)[2]
    # The outs at the recorded looks, and among the configs that ran to the end a last
    # selection after the final round (a pair is judged where the earlier of the two stopped).
    claims = [
        *claims,
        *out_claims(setup, logs, [*estimates, setup.baseline], setup.timeline.last),
    ]
    has_baseline = any((setup.baseline, b) in table for b in setup.benchmarks)
    if not has_baseline:
        warnings.append(
            f"the baseline {setup.baseline} has no results: nothing can be ranked against it"
        )
    order = [*estimates, *([setup.baseline] if has_baseline else [])]
    tier_list = tiers(order, claims)
    base_estimate = Estimate(
        setup.baseline, OVERALL, 1.0, 1.0, 1.0, 0.0, 1.0, rounds, 0.0, margins[OVERALL], "baseline"
    )
    by_config = {**estimates, setup.baseline: base_estimate}
    ranking = [
        by_config[c] for tier in tier_list for c in sorted(tier, key=lambda c: -by_config[c].ratio)
    ]
    lead = tier_list[0] if tier_list else []
    leading_others = [c for c in lead if c != setup.baseline]
    achieved = resolution(leading_others, estimates)
    fixed_equivalent = None
    if design.sequential and leading_others and math.isfinite(achieved):
        n = fixed_rounds_for(setup, estimates, leading_others, achieved)
        if n is not None:
            fixed_equivalent = (n, n * (len(setup.compared) + 1 + (1 if setup.aa else 0)))
    flags = _flags(sessions, setup)
    for config, f in flags.items():
        if not f.clean:
            warnings.append(f"{config}: {f.text()}; it is ranked on what it measured")
    choice = _choice(ranking, lead, setup.baseline, margins[OVERALL], flags, configs, variants)
    sds = [e.sd for e in estimates.values() if math.isfinite(e.sd)]
    ns = [e.rounds for e in estimates.values()]
    level = setup.timeline.level(SPLIT["ranking"] / setup.family, setup.timeline.last)
    detectable = (
        stats.expm1(
            stats.detectable(
                statistics.median(sds),
                int(statistics.median(ns)),
                level,
                math.log1p(margins[OVERALL]),
            )
        )
        if sds and ns
        else math.inf
    )
    return HostReport(
        host=first["host"],
        host_key=sessions[0].host_key,
        sessions=[str(s.path) for s in sessions],
        design=design,
        baseline=setup.baseline,
        benchmarks=list(setup.benchmarks),
        units=dict(first["suite"]["units"]),
        rounds=rounds,
        margins=margins,
        margin_source=margin_source,
        aa=aa,
        warnings=warnings,
        detectable=detectable,
        estimates={
            **{(c, OVERALL): e for c, e in estimates.items()},
            **_per_benchmark(setup, logs, margins),
        },
        ranking=ranking,
        tiers=tier_list,
        out=claims,
        resolution=achieved,
        fixed_equivalent=fixed_equivalent,
        processes=sum(len(s.document["runs"]) for s in sessions),
        benchmark_s=_benchmark_seconds(sessions),
        looks=looks,
        stop=sessions[0].document["session"].get("stop") if len(sessions) == 1 else None,
        replay=replay,
        flags=flags,
        failures=_failures(sessions),
        choice=choice,
        contrasts=_contrasts(
            logs, choice.config if choice else setup.baseline, setup, margins[OVERALL]
        ),
        medians={key: statistics.median(list(v.values())) for key, v in table.items() if v},
        round_values={key: list(v.values()) for key, v in table.items()},
        samples=raw_samples(sessions),
        configs=configs,
        variants=variants,
    )


def analyse(sessions: Sequence[Session], margin: float | None = None) -> list[HostReport]:
    """One report per machine; a sequential session is reported on its own."""
    groups: dict[tuple[str, str], list[Session]] = defaultdict(list)
    for s in sessions:
        groups[(s.host_key, s.id if s.design.sequential else "")].append(s)
    return [analyse_host(group, margin) for group in groups.values()]


# --------------------------------------------------------------------------------------------
# Regression gate: new results against old ones (unpaired: the rounds are different)


@dataclass(frozen=True)
class Change:
    host: str
    config: str
    benchmark: str
    ratio: float
    """new / old throughput: below 1 is slower."""
    low: float
    high: float
    p_holm: float
    regression: bool


@dataclass(frozen=True)
class Missing:
    """A config the old results measured that the new ones did not measure (all of it, or some
    benchmarks), although the new session planned it: a crash is a failure, not an absence."""

    host: str
    config: str
    benchmarks: tuple[str, ...]
    everything: bool
    why: str


@dataclass(frozen=True)
class Gate:
    changes: list[Change]
    missing: list[Missing]
    notes: list[str]
    """What was not compared and why (a machine class on one side only, a config the new
    matrix no longer has); none of these fail the gate."""

    def causes(self, fail_above: float) -> list[str]:
        """One line per reason the gate fails."""
        lines = []
        for m in self.missing:
            what = "no results" if m.everything else "no result for " + ", ".join(m.benchmarks)
            before = f"{len(m.benchmarks)} benchmarks" if m.everything else "them"
            lines.append(
                f"{m.config}: {what} in the new results ({m.why}); the old ones measured "
                f"{before} [{m.host}]"
            )
        lines += [
            f"{c.config} {c.benchmark} {c.ratio - 1:+.1%} (slower than {fail_above:.0%} allows, "
            f"Holm p {c.p_holm:.3g}) [{c.host}]"
            for c in self.changes
            if c.regression
        ]
        return lines


def gate(
    new: Sequence[Session],
    old: Sequence[Session],
    fail_above: float,
    allow_different_hosts: bool = False,
) -> Gate:
    """New results against old ones of the same machine class (see `host_key`), or all against
    all with `allow_different_hosts`. Every (config, benchmark) measured in both gets a verdict:
    slower by more than `fail_above` with a Holm-adjusted Welch test below 0.05 (one family
    over every machine class) is a regression; a config the old results measured and the new
    session planned but did not measure, wholly or in part, is missing."""
    notes: list[str] = []
    versions = {s.document["suite"]["version"] for s in new}
    if len(versions) > 1:
        load_sessions(s.path for s in new)  # says which versions are mixed
    other = sorted({s.document["suite"]["version"] for s in old} - versions)
    if other:  # after an upgrade: the old work is not this work, so nothing to compare with
        notes.append(
            f"old results of suite {', '.join(f'v{v}' for v in other)} are not compared with "
            f"suite v{min(versions)}: they measured different work"
        )
        old = [s for s in old if s.document["suite"]["version"] in versions]
    if allow_different_hosts:
        pairs = [("any machine", list(new), list(old))]
    else:
        new_by, old_by = _by_host(new), _by_host(old)
        pairs = [(key, group, old_by[key]) for key, group in new_by.items() if key in old_by]
        notes += [f"no old results from {key}: nothing to compare" for key in new_by
                  if key not in old_by]  # fmt: skip
        notes += [f"no new results from {key}" for key in old_by if key not in new_by]
    keys: list[tuple[str, str, str]] = []
    tests = []
    missing: list[Missing] = []
    for host, new_group, old_group in pairs:
        new_table, old_table = round_table(new_group), round_table(old_group)
        planned = {c["key"] for s in new_group for c in s.document["configs"]}
        measured: dict[str, set[str]] = defaultdict(set)
        for config, bench in old_table:
            if not results.is_aa(config):
                measured[config].add(bench)
        for config, benches in sorted(measured.items()):
            if config not in planned:
                notes.append(f"{config}: not in the new session's matrix [{host}]")
                continue
            absent = sorted(b for b in benches if not new_table.get((config, b)))
            if absent:
                everything = len(absent) == len(benches)
                why = _why_missing(new_group, config)
                missing.append(Missing(host, config, tuple(absent), everything, why))
            for bench in sorted(benches - set(absent)):
                a = [math.log(v) for v in new_table[(config, bench)].values()]
                b = [math.log(v) for v in old_table[(config, bench)].values()]
                keys.append((host, config, bench))
                tests.append(stats.welch_test(a, b))
    adjusted = stats.holm([t.p for t in tests])
    changes = []
    for (host, config, bench), test, p in zip(keys, tests, adjusted, strict=True):
        ratio = math.exp(test.difference)
        changes.append(
            Change(
                host,
                config,
                bench,
                ratio,
                math.exp(test.low),
                math.exp(test.high),
                p,
                regression=p < ALPHA and ratio < 1 - fail_above,
            )
        )
    return Gate(changes, missing, notes)


def _by_host(sessions: Sequence[Session]) -> dict[str, list[Session]]:
    groups: dict[str, list[Session]] = defaultdict(list)
    for s in sessions:
        groups[s.host_key].append(s)
    return groups


def _why_missing(sessions: Sequence[Session], config: str) -> str:
    """What the sessions recorded about a config's missing results: its first failure."""
    for failure in _failures(sessions):
        if config in failure.who.split(", ") or failure.who.startswith(config + " "):
            return failure.reason
    return "nothing recorded: the session may have stopped early"
