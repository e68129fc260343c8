"""From raw bench results to an answer: which config is fastest here, by how much, how sure.

Every config is compared with the baseline config of the same round (rounds pair them: each
round ran every config once, in a shuffled order), on the log of the throughput ratio:

- per benchmark, r_i = ln(config_i / baseline_i) for each round i; overall, the mean of r over
  the benchmarks in a round (the log of the geometric-mean ratio);
- the estimate is exp(mean r) with a 95 % t-interval, the test a paired t-test on r, and the
  p-values of one family (the configs compared with the baseline on one benchmark, or overall)
  are Holm-adjusted;
- a difference counts only if it is significant (Holm p < 0.05) and larger than the practical
  threshold: the larger of 2 % and the A/A spread, which is how far apart the baseline and its
  own copy came out (the far end of the A/A 95 % interval);
- configs are ranked in tiers: runs of consecutive configs in the ranking that no test by the
  same rule can tell apart (Holm over a config's tests against the members of the current tier),
  so ties are shown as ties and a tier never holds two configs known to differ.

Sessions from the same host are pooled (rounds stay paired within their session); different
hosts are analysed separately and reported side by side.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild import stats
from tfbuild.bench import results
from tfbuild.bench.suite import CONTRASTS
from tfbuild.errors import ResultsError

OVERALL = "overall"
ALPHA = 0.05
MIN_THRESHOLD = 0.02

RoundKey = tuple[str, int]  # (session id, round)


@dataclass(frozen=True)
class Session:
    path: Path
    document: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.document["session"]["id"])

    @property
    def host_key(self) -> str:
        return host_key(self.document["host"])


def host_key(host: Mapping[str, Any]) -> str:
    """Which machine results come from: hostname, CPU model and logical CPU count."""
    name = host.get("hostname") or "unknown-host"
    return f"{name} / {host['cpu']['model_name']} / {host['topology']['logical_cpus']} CPUs"


def load_sessions(paths: Iterable[Path]) -> list[Session]:
    sessions = [Session(p, results.load(p)) for p in paths]
    versions = {s.document["suite"]["version"] for s in sessions}
    if len(versions) > 1:
        raise ResultsError(
            f"these results come from suite versions {sorted(versions)}; "
            "results of different suites measure different things and are not compared"
        )
    return sessions


@dataclass(frozen=True)
class Estimate:
    """A config relative to a reference, on one benchmark or overall."""

    config: str
    benchmark: str
    ratio: float
    """Throughput ratio, config / reference: above 1 is faster."""
    low: float
    high: float
    p: float
    p_holm: float
    rounds: int
    threshold: float
    verdict: str
    """faster, slower or tie (tie: not both significant and beyond the threshold)."""


@dataclass(frozen=True)
class Failure:
    who: str
    reason: str


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
    baseline: str
    benchmarks: list[str]
    units: dict[str, str]
    rounds: int
    thresholds: dict[str, float]
    """benchmark (and 'overall') -> practical threshold as a fraction (0.02 = 2 %)."""
    aa: dict[str, Estimate]
    warnings: list[str]
    mde: dict[str, float]
    """benchmark -> smallest difference the session could detect (80 % power), as a fraction."""
    estimates: dict[tuple[str, str], Estimate]
    ranking: list[Estimate]
    """Overall estimates, best first (the baseline included with ratio 1)."""
    tiers: list[list[str]]
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


def round_table(sessions: Sequence[Session]) -> dict[tuple[str, str], dict[RoundKey, float]]:
    """(config, benchmark) -> {(session, round): the round's median sample throughput}."""
    table: dict[tuple[str, str], dict[RoundKey, float]] = defaultdict(dict)
    for s in sessions:
        for run in s.document["runs"]:
            for bench, entry in run["benchmarks"].items():
                samples = entry.get("samples") or []
                if samples:
                    value = stats.median([x["throughput"] for x in samples])
                    table[(run["config"], bench)][(s.id, run["round"])] = value
    return table


def raw_samples(sessions: Sequence[Session]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = defaultdict(list)
    for s in sessions:
        for run in s.document["runs"]:
            for bench, entry in run["benchmarks"].items():
                out[(run["config"], bench)] += [x["throughput"] for x in entry.get("samples") or []]
    return out


def log_ratios(
    mine: Mapping[RoundKey, float], theirs: Mapping[RoundKey, float]
) -> dict[RoundKey, float]:
    """round -> ln(mine / theirs), for the rounds both have, in round order."""
    return {k: math.log(mine[k] / theirs[k]) for k in sorted(set(mine) & set(theirs))}


def paired_logs(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    config: str,
    reference: str,
    benchmarks: Sequence[str],
) -> dict[str, list[float]]:
    """benchmark (and 'overall') -> per-round ln(config / reference), rounds where both ran."""
    out: dict[str, list[float]] = {}
    per_round: dict[RoundKey, list[float]] = defaultdict(list)
    for bench in benchmarks:
        logs = log_ratios(table.get((config, bench), {}), table.get((reference, bench), {}))
        out[bench] = list(logs.values())
        for k, value in logs.items():
            per_round[k].append(value)
    complete = [v for v in per_round.values() if len(v) == len(benchmarks)]
    out[OVERALL] = [sum(v) / len(v) for v in complete]
    return out


def _estimate(
    config: str, benchmark: str, logs: Sequence[float], threshold: float
) -> tuple[stats.MeanTest, Estimate]:
    test = stats.mean_test(logs)
    ratio = math.exp(test.mean) if logs else math.nan
    estimate = Estimate(
        config=config,
        benchmark=benchmark,
        ratio=ratio,
        low=math.exp(test.low) if logs else math.nan,
        high=math.exp(test.high) if logs else math.nan,
        p=test.p,
        p_holm=test.p,
        rounds=test.n,
        threshold=threshold,
        verdict="tie",
    )
    return test, estimate


def _decide(estimate: Estimate, p_holm: float) -> Estimate:
    beyond = abs(math.log(estimate.ratio)) > math.log1p(estimate.threshold)
    verdict = "tie"
    if p_holm < ALPHA and beyond:
        verdict = "faster" if estimate.ratio > 1 else "slower"
    return Estimate(**{**estimate.__dict__, "p_holm": p_holm, "verdict": verdict})


def compare_to(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    configs: Sequence[str],
    reference: str,
    benchmarks: Sequence[str],
    thresholds: Mapping[str, float],
) -> dict[tuple[str, str], Estimate]:
    """Every config against `reference`, per benchmark and overall, Holm per benchmark."""
    logs = {config: paired_logs(table, config, reference, benchmarks) for config in configs}
    estimates: dict[tuple[str, str], Estimate] = {}
    for bench in [*benchmarks, OVERALL]:
        family = [
            _estimate(config, bench, logs[config][bench], thresholds[bench])[1]
            for config in configs
            if len(logs[config][bench]) >= 2
        ]
        adjusted = stats.holm([e.p for e in family])
        for estimate, p in zip(family, adjusted, strict=True):
            estimates[(estimate.config, bench)] = _decide(estimate, p)
    return estimates


# --------------------------------------------------------------------------------------------
# One host


def _thresholds(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    baseline: str,
    aa_config: str | None,
    benchmarks: Sequence[str],
) -> tuple[dict[str, float], dict[str, Estimate], dict[str, float], list[str]]:
    thresholds = {b: MIN_THRESHOLD for b in [*benchmarks, OVERALL]}
    aa: dict[str, Estimate] = {}
    mde: dict[str, float] = {}
    warnings: list[str] = []
    if aa_config is None:
        warnings.append(
            "no A/A control in these results: the practical threshold stays at 2 % and the "
            "noise floor is unknown"
        )
        return thresholds, aa, mde, warnings
    logs = paired_logs(table, aa_config, baseline, benchmarks)
    tested = [b for b in benchmarks if len(logs[b]) >= 2]
    # The overall A/A test is the primary one; the per-benchmark ones form a Holm family.
    adjusted = dict(
        zip(tested, stats.holm([stats.mean_test(logs[b]).p for b in tested]), strict=True)
    )
    for bench in [*tested, OVERALL] if len(logs[OVERALL]) >= 2 else tested:
        test, estimate = _estimate(aa_config, bench, logs[bench], MIN_THRESHOLD)
        spread = max(abs(test.low), abs(test.high))
        thresholds[bench] = max(MIN_THRESHOLD, math.expm1(spread))
        aa[bench] = _decide(estimate, adjusted.get(bench, test.p))
        # The A/A pair's paired sd is sqrt(2) times one config's round-to-round noise, the same
        # noise a config-vs-baseline pair carries: it is the sd a comparison must beat.
        mde[bench] = math.expm1(stats.minimum_detectable(test.sd, test.n))
        if aa[bench].verdict == "tie":
            continue
        if bench == OVERALL:
            warnings.append(
                f"the A/A control (the baseline against its own copy) differs significantly "
                f"overall ({aa[bench].ratio - 1:+.1%}, p = {aa[bench].p:.3f}): this session is "
                "too noisy to trust; rerun it on a quieter machine or with more rounds"
            )
        else:
            warnings.append(
                f"the A/A control differs on {bench} ({aa[bench].ratio - 1:+.1%}, Holm p = "
                f"{aa[bench].p_holm:.3f}); differences there smaller than "
                f"{thresholds[bench]:.1%} count as ties"
            )
    return thresholds, aa, mde, warnings


def _tiers(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    ranking: Sequence[Estimate],
    benchmarks: Sequence[str],
    threshold: float,
    baseline: str,
) -> list[list[str]]:
    """Tiers are runs of consecutive configs in the ranking that cannot be told apart: a config
    joins the current tier only if it ties with every config already in it, else it opens the
    next tier. Against the baseline the ranking's own verdict holds, so a config that is
    measurably slower or faster than the baseline never shares its tier."""
    verdicts = {e.config: e.verdict for e in ranking}
    levels = {e.config: _overall_levels(table, e.config, benchmarks) for e in ranking}
    tiers: list[list[str]] = []
    for estimate in ranking:
        config = estimate.config
        if config == baseline:
            joins = bool(tiers) and all(verdicts[m] == "tie" for m in tiers[-1])
        elif tiers and baseline in tiers[-1] and verdicts[config] != "tie":
            joins = False
        else:
            joins = bool(tiers) and _ties_with_all(
                config, [m for m in tiers[-1] if m != baseline], levels, threshold
            )
        if joins:
            tiers[-1].append(config)
        else:
            tiers.append([config])
    return tiers


def _overall_levels(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    config: str,
    benchmarks: Sequence[str],
) -> dict[RoundKey, float]:
    """round -> the mean log throughput over the benchmarks, for rounds that ran them all: the
    difference of two configs' levels is their overall paired log ratio (see paired_logs)."""
    per_round: dict[RoundKey, list[float]] = defaultdict(list)
    for bench in benchmarks:
        for key, value in table.get((config, bench), {}).items():
            per_round[key].append(math.log(value))
    return {k: sum(v) / len(v) for k, v in per_round.items() if len(v) == len(benchmarks)}


def _ties_with_all(
    config: str,
    members: Sequence[str],
    levels: Mapping[str, Mapping[RoundKey, float]],
    threshold: float,
) -> bool:
    """Whether `config` ties with every member: paired tests overall, Holm over the members."""
    tests = []
    mine = levels[config]
    for member in members:
        theirs = levels[member]
        logs = [mine[k] - theirs[k] for k in sorted(set(mine) & set(theirs))]
        if len(logs) >= 2:
            tests.append(_estimate(config, OVERALL, logs, threshold)[1])
    adjusted = stats.holm([e.p for e in tests])
    return all(_decide(e, p).verdict == "tie" for e, p in zip(tests, adjusted, strict=True))


def _contrasts(
    table: Mapping[tuple[str, str], Mapping[RoundKey, float]],
    config: str,
    thresholds: Mapping[str, float],
) -> list[Estimate]:
    """Within one config, each seed experiment's pair of benchmarks, paired by round; Holm over
    the experiments; the practical threshold is the larger of the pair's."""
    family = []
    for contrast in CONTRASTS:
        logs = list(
            log_ratios(
                table.get((config, contrast.faster_if), {}), table.get((config, contrast.than), {})
            ).values()
        )
        if len(logs) >= 2:
            threshold = max(
                thresholds.get(contrast.faster_if, MIN_THRESHOLD),
                thresholds.get(contrast.than, MIN_THRESHOLD),
            )
            family.append(_estimate(config, contrast.name, logs, threshold)[1])
    adjusted = stats.holm([e.p for e in family])
    return [_decide(e, p) for e, p in zip(family, adjusted, strict=True)]


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


def _choice(
    ranking: Sequence[Estimate],
    baseline: str,
    configs: Mapping[str, Mapping[str, Any]],
    variants: Mapping[str, Mapping[str, Any]],
) -> Choice | None:
    """The best config measurably faster than the baseline, else the baseline. Only the
    verdict against the baseline can promote a config: ranking high within noise is not enough."""
    if not ranking:
        return None
    faster = [e for e in ranking if e.verdict == "faster"]
    ratio: float | None
    if faster:
        best = faster[0]
        key, ratio = best.config, best.ratio
        reason = (
            f"{key} is {best.ratio:.2f}x the baseline overall "
            f"(95 % CI {best.low:.2f}-{best.high:.2f}, Holm p = {best.p_holm:.3g})"
        )
    elif all(e.verdict in ("slower", "baseline") for e in ranking):
        key, ratio = baseline, 1.0
        reason = (
            f"the baseline {baseline} is the fastest config here: every other config is "
            "measurably slower"
        )
    else:
        key, ratio = baseline, 1.0
        reason = (
            f"no config is measurably faster than the baseline {baseline} here: every config "
            "ranked above it is within noise of it, so the baseline is the safe choice"
        )
    config = configs[key]
    variant = variants.get(config["variant"], {})
    artifact = variant.get("artifact") or {}
    definition = variant.get("definition") or {}
    install = []
    if artifact.get("wheel"):
        constraints = " ".join(f"'{c}'" for c in artifact.get("constraints") or [])
        install.append(
            f"pip install {artifact['wheel']}" + (f" {constraints}" if constraints else "")
        )
    elif definition.get("requirement"):
        install.append(f"pip install '{definition['requirement']}'")
    threading = []
    if config.get("intra_op"):
        threading.append(
            f"tf.config.threading.set_intra_op_parallelism_threads({config['intra_op']})"
        )
    if config.get("inter_op"):
        threading.append(
            f"tf.config.threading.set_inter_op_parallelism_threads({config['inter_op']})"
        )
    return Choice(
        config=key,
        variant=config["variant"],
        tuning=config["tuning"],
        ratio=ratio,
        reason=reason,
        wheel=artifact.get("wheel"),
        sha256=artifact.get("sha256"),
        install=install,
        env=dict(config.get("env") or {}),
        threading=threading,
    )


def analyse_host(sessions: Sequence[Session]) -> HostReport:
    first = sessions[0].document
    baselines = {s.document["baseline"]["config"] for s in sessions}
    if len(baselines) > 1:
        raise ResultsError(
            f"sessions of {sessions[0].host_key} use different baselines {sorted(baselines)}; "
            "compare them separately"
        )
    baseline = first["baseline"]["config"]
    aa_config = next(
        (
            s.document["baseline"].get("aa_config")
            for s in sessions
            if s.document["baseline"].get("aa_config")
        ),
        None,
    )
    benchmarks = list(first["suite"]["benchmarks"])
    table = round_table(sessions)
    configs: dict[str, dict[str, Any]] = {}
    variants: dict[str, dict[str, Any]] = {}
    for s in sessions:
        for c in s.document["configs"]:
            configs.setdefault(c["key"], c)
        for name, v in s.document["variants"].items():
            if v.get("status") == "ready" or name not in variants:
                variants[name] = v
    measured = [
        key
        for key, c in configs.items()
        if not c["aa"] and key != baseline and any((key, b) in table for b in benchmarks)
    ]
    thresholds, aa, mde, warnings = _thresholds(table, baseline, aa_config, benchmarks)
    estimates = compare_to(table, measured, baseline, benchmarks, thresholds)
    ranked = sorted(
        (estimates[(c, OVERALL)] for c in measured if (c, OVERALL) in estimates),
        key=lambda e: -e.ratio,
    )
    base_estimate = Estimate(
        baseline,
        OVERALL,
        1.0,
        1.0,
        1.0,
        1.0,
        1.0,
        len(paired_logs(table, baseline, baseline, benchmarks)[OVERALL]),
        thresholds[OVERALL],
        "baseline",
    )
    ranking = sorted([*ranked, base_estimate], key=lambda e: -e.ratio)
    if not any((baseline, b) in table for b in benchmarks):
        ranking = ranked
        warnings.append(f"the baseline {baseline} has no results: nothing can be ranked against it")
    tiers = _tiers(table, ranking, benchmarks, thresholds[OVERALL], baseline)
    choice = _choice(ranking, baseline, configs, variants)
    medians = {key: stats.median(list(v.values())) for key, v in table.items() if v}
    return HostReport(
        host=first["host"],
        host_key=sessions[0].host_key,
        sessions=[str(s.path) for s in sessions],
        baseline=baseline,
        benchmarks=benchmarks,
        units=dict(first["suite"]["units"]),
        rounds=max((len(v) for v in table.values()), default=0),
        thresholds=thresholds,
        aa=aa,
        warnings=warnings,
        mde=mde,
        estimates=estimates,
        ranking=ranking,
        tiers=tiers,
        failures=_failures(sessions),
        choice=choice,
        contrasts=_contrasts(table, choice.config if choice else baseline, thresholds),
        medians=medians,
        round_values={key: list(v.values()) for key, v in table.items()},
        samples=raw_samples(sessions),
        configs=configs,
        variants=variants,
    )


def analyse(sessions: Sequence[Session]) -> list[HostReport]:
    by_host: dict[str, list[Session]] = defaultdict(list)
    for s in sessions:
        by_host[s.host_key].append(s)
    return [analyse_host(group) for group in by_host.values()]


# --------------------------------------------------------------------------------------------
# Regression gate: new results against old ones (unpaired: the rounds are different)


@dataclass(frozen=True)
class Change:
    config: str
    benchmark: str
    ratio: float
    """new / old throughput: below 1 is slower."""
    low: float
    high: float
    p_holm: float
    regression: bool


def gate(
    new: Sequence[Session],
    old: Sequence[Session],
    fail_above: float,
    allow_different_hosts: bool = False,
) -> list[Change]:
    """Every (config, benchmark) measured in both, with a verdict: slower by more than
    `fail_above` with a Holm-adjusted Welch test below 0.05 is a regression."""
    new_hosts, old_hosts = {s.host_key for s in new}, {s.host_key for s in old}
    if new_hosts != old_hosts and not allow_different_hosts:
        raise ResultsError(
            f"new results come from {sorted(new_hosts)}, old ones from {sorted(old_hosts)}: "
            "speed on different machines is not a regression (--allow-different-hosts to "
            "compare anyway)"
        )
    load_sessions([*(s.path for s in new), *(s.path for s in old)])  # same suite version
    new_table, old_table = round_table(new), round_table(old)
    keys = sorted(k for k in new_table if k in old_table and not results.is_aa(k[0]))
    tests = []
    for key in keys:
        a = [math.log(v) for v in new_table[key].values()]
        b = [math.log(v) for v in old_table[key].values()]
        tests.append(stats.welch_test(a, b))
    adjusted = stats.holm([t.p for t in tests])
    changes = []
    for (config, bench), test, p in zip(keys, tests, adjusted, strict=True):
        ratio = math.exp(test.difference)
        changes.append(
            Change(
                config,
                bench,
                ratio,
                math.exp(test.low),
                math.exp(test.high),
                p,
                regression=p < ALPHA and ratio < 1 - fail_above,
            )
        )
    return changes
