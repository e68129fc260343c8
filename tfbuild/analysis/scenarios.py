"""How often the answer a report leads with is right: sessions whose true speeds are set
(tfbuild.analysis.simulated), run through the session's own rounds, looks and stop, judged by
the report and answered as `tfbuild compare` answers, then scored against the truth.

An answer is scored as a person acts on it, at the margin it names. "Use X" tells them to
switch: it is right only when X is truly faster than the baseline (what they run now) and the
fastest config or within the margin of it. "Keep the baseline" is right when no config is
faster than the baseline by more than the margin. "Inconclusive" is neither. A per-benchmark
verdict is wrong when the truth is not what it says: "faster" (or "slower") when the config is
not beyond its margin that way, "equivalent" when it is beyond it.

The catalogue holds the configurations that can score each answer wrong: every config equally
fast (any "Use" is wrong) for 2, 6 and 16 configs; the least favourable ones of a comparison
with a standard, the best exactly at the margin and 1 % beyond it; and one config twice the
margin ahead (where the answer should be decided and right), each with noise as rough as the
committed real sessions, and with the children of a zygote alike (intraclass correlation 0.1
and 0.3 on a process's overall speed). Each rate comes with its one-sided 95 % bound (Clopper
and Pearson), and the targets each scenario is held to are checked."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfbuild import stats
from tfbuild.analysis.answer import confidence
from tfbuild.analysis.estimates import OVERALL, Estimate
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.analysis.simulated import GAUSSIAN, PROCESS_S, Drawn, Truth, empty_session
from tfbuild.config.model import DEFAULT_BUDGET
from tfbuild.results.model import AA_SUFFIX, Design, Results
from tfbuild.results.rules import CURRENT_RULES, rules

MARGIN = 0.05
"""The indifference margin the scenarios are set against: the default matrix's."""


def default_design(configs: int) -> Design:
    """The default matrix's design for `configs` configs and the A/A control: looks from round
    3, error control over 30 rounds, the default budget (20 minutes up to 8 configs run, then
    2.5 a config)."""
    return Design(
        kind="sequential",
        first=3,
        horizon=30,
        budget_s=DEFAULT_BUDGET.total(configs + 1),
        resolve=MARGIN,
    )


WRONG_AT_MOST = 0.025
"""Targets: wrong decided answers in at most this share of the sessions of any scenario, their
one-sided 95 % upper bound at most WRONG_BOUND; where one config leads the baseline by twice
the margin, in the default design, right in at least RIGHT_AT_LEAST."""
WRONG_BOUND = 0.035
RIGHT_AT_LEAST = 0.90


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    configs: int
    """Configs the session compares, the baseline included (its A/A copy added as in bench)."""
    truth: Truth
    own: Design | None = None
    """A design of its own; None: the default matrix's for its configs (default_design)."""
    kind: str = "other"
    """null (every config as fast: any "Use" is wrong), edge (the best at or just beyond the
    margin), clear (one config twice the margin ahead of the others, all as fast as the
    baseline, in the default design, within its budget: held to RIGHT_AT_LEAST) or other."""

    @property
    def design(self) -> Design:
        return self.own or default_design(self.configs)


def _ahead(by: float, icc: float = 0.0, **truth: object) -> Truth:
    return Truth({"c01:default": by}, zygote=icc, **truth)  # type: ignore[arg-type]


def _equal() -> list[Scenario]:
    """Every config equally fast: how often a session says one is faster (it never should)."""
    found: list[Scenario] = []
    for k in (2, 6, 16):
        found.append(
            Scenario(f"null-{k}", f"{k} configs, all equally fast", k, Truth({}), kind="null")
        )
    for icc in (0.1, 0.3):
        tag = f"icc{round(icc * 100):02d}"
        for k in (2, 6, 16) if icc == 0.3 else (6,):
            found.append(
                Scenario(
                    f"null-{k}-{tag}",
                    f"{k} configs, all equally fast; a zygote's children alike (ICC {icc:g})",
                    k,
                    Truth({}, zygote=icc),
                    kind="null",
                )
            )
    return found


def _at_the_margin() -> list[Scenario]:
    """One config ahead by the margin, or just beyond it: where the answer is hardest."""
    found: list[Scenario] = []
    for k in (2, 6, 16):
        found.append(
            Scenario(
                f"margin-{k}",
                f"{k} configs, one ahead by exactly the margin (+5 %)",
                k,
                _ahead(1.05),
                kind="edge",
            )
        )
        found.append(
            Scenario(
                f"beyond-{k}",
                f"{k} configs, one ahead by the margin and 1 % (+6.05 %)",
                k,
                _ahead(1.0605),
                kind="edge",
            )
        )
    for icc in (0.1, 0.3):
        tag = f"icc{round(icc * 100):02d}"
        found.append(
            Scenario(
                f"margin-6-{tag}",
                f"one ahead by exactly the margin; ICC {icc:g}",
                6,
                _ahead(1.05, icc),
                kind="edge",
            )
        )
        found.append(
            Scenario(
                f"beyond-6-{tag}",
                f"one ahead by the margin and 1 %; ICC {icc:g}",
                6,
                _ahead(1.0605, icc),
                kind="edge",
            )
        )
    return found


def _twice() -> list[Scenario]:
    """One config ahead by twice the margin: an answer a session should find."""
    found: list[Scenario] = []
    for k in (2, 6, 16):
        found.append(
            Scenario(
                f"twice-{k}",
                f"{k} configs, one ahead by twice the margin (+10 %)",
                k,
                _ahead(1.10),
                kind="clear",
            )
        )
    for icc in (0.1, 0.3):
        tag = f"icc{round(icc * 100):02d}"
        found.append(
            Scenario(
                f"twice-6-{tag}",
                f"one ahead by twice the margin; ICC {icc:g}",
                6,
                _ahead(1.10, icc),
                kind="clear",
            )
        )
    return found


def _more() -> list[Scenario]:
    """Noise, zygotes, process paths, rivals and fixed designs that can mislead a session."""
    return [
        Scenario("null-6-noisy", "six equally fast, a process spread of about 8 %", 6,
                 Truth({}, scale=1.6), kind="null"),
        Scenario("twice-6-noisy", "twice the margin ahead, a process spread of about 8 %", 6,
                 _ahead(1.10, scale=1.6)),
        Scenario("null-6-bench", "six equally fast; a zygote's children alike per benchmark "
                 "(ICC 0.3)", 6, Truth({}, zygote_bench=0.3), kind="null"),
        Scenario("null-6-one-zygote", "six equally fast, ICC 0.3, one zygote a config at a time "
                 "(a machine short of memory)", 6, Truth({}, zygote=0.3, live=1), kind="null"),
        Scenario("twice-6-one-zygote", "twice the margin ahead, ICC 0.3, one zygote a config at "
                 "a time", 6, _ahead(1.10, 0.3, live=1)),
        Scenario("null-6-fresh", "six equally fast, fresh processes", 6,
                 Truth({}, processes="fresh"), kind="null"),
        Scenario("null-6-gaussian", "six equally fast, normal noise of one spread (5 %)", 6,
                 Truth({}, noise=GAUSSIAN), kind="null"),
        Scenario("half", "one ahead by half the margin (+2.5 %)", 6, _ahead(1.025)),
        Scenario("two-leaders", "two ahead, 3 % apart (+10 %, +7 %; the second noisy)", 6,
                 Truth({"c01:default": 1.10, "c02:default": 1.07})),
        Scenario("quiet-noisy", "a quiet best (+8 %, spread x0.6) and a noisy second (+6 %, x1.8)",
                 6, Truth({"c01:default": 1.08, "c02:default": 1.06},
                          scale_of={"c01:default": 0.6, "c02:default": 1.8})),
        Scenario("slower", "one slower by twice the margin (-10 %)", 6, _ahead(0.90)),
        Scenario("heavy-tails", "twice the margin ahead, Student-t (3 df) noise", 6,
                 _ahead(1.10, tails="t3"), kind="clear"),
        Scenario("drift", "twice the margin ahead, the machine 5 % faster by round 30", 6,
                 _ahead(1.10, drift=0.05), kind="clear"),
        Scenario("fixed-1", "twice the margin ahead, --rounds 1", 6, _ahead(1.10),
                 Design(kind="fixed", rounds=1)),
        Scenario("fixed-2", "twice the margin ahead, --rounds 2", 6, _ahead(1.10),
                 Design(kind="fixed", rounds=2)),
        Scenario("fixed-10", "twice the margin ahead, --rounds 10", 6, _ahead(1.10),
                 Design(kind="fixed", rounds=10)),
    ]  # fmt: skip


def _catalogue() -> tuple[Scenario, ...]:
    return (*_equal(), *_at_the_margin(), *_twice(), *_more())


SCENARIOS: tuple[Scenario, ...] = _catalogue()


@dataclass(frozen=True)
class SimulatedAnswer:
    """One simulated session: what its report answered, and whether that was right."""

    kind: str
    """use, keep or inconclusive."""
    config: str | None
    """The config "Use" named."""
    margin: float
    """The margin the answer named."""
    right: bool | None
    """None when inconclusive."""
    processes: int
    benchmark_wrong: int = 0
    """Per-benchmark verdicts of the report that the truth contradicts."""


def score(truth: Truth, kind: str, config: str | None, margin: float) -> bool | None:
    """Whether an answer is right about `truth` at the `margin` it names (None: undecided):
    "Use X" when X is truly faster than the baseline and the fastest or within the margin of
    it, "Keep" when no config is faster than the baseline by more than the margin."""
    slack = math.log1p(margin) + 1e-12
    best = math.log(truth.best())
    if kind == "keep":
        return best <= slack
    if kind == "use" and config is not None:
        mine = math.log(truth.effect(config))
        return mine > 1e-12 and mine >= best - slack
    return None


def benchmark_wrong(truth: Truth, estimates: Mapping[tuple[str, str], Estimate]) -> int:
    """How many of a report's per-benchmark verdicts the truth contradicts (every benchmark of
    a config is as much faster as the config)."""
    wrong = 0
    for (config, benchmark), e in estimates.items():
        if benchmark == OVERALL or e.verdict not in ("faster", "slower", "equivalent"):
            continue
        true, slack = math.log(truth.effect(config)), math.log1p(e.margin)
        if config.endswith(AA_SUFFIX):
            true += math.log(truth.aa_bias)
        beyond = {"faster": true > slack, "slower": true < -slack}
        wrong += not beyond[e.verdict] if e.verdict in beyond else abs(true) >= slack
    return wrong


def simulate(scenario: Scenario, seed: int, *, power: bool = False) -> tuple[Results, HostReport]:
    """One session of the scenario, and its report (`power` as analyse_host's: the answer's
    budget, which scoring an answer does not need)."""
    rng = random.Random(f"{scenario.name}:{seed}")
    start = empty_session(scenario.configs, scenario.design, seed, scenario.truth.processes)
    done = Drawn(start, scenario.truth, rng).run()
    return done, analyse_host([Session(Path(f"{done.id}.json"), done)], power=power)


def outcome(scenario: Scenario, seed: int) -> SimulatedAnswer:
    results, report = simulate(scenario, seed)
    said = report.answer
    config = report.choice.config if said.kind == "use" and report.choice else None
    return SimulatedAnswer(
        kind=said.kind,
        config=config,
        margin=said.margin,
        right=score(scenario.truth, said.kind, config, said.margin),
        processes=len(results.runs),
        benchmark_wrong=benchmark_wrong(scenario.truth, report.figures.estimates),
    )


@dataclass(frozen=True)
class Tally:
    """A scenario over many sessions."""

    scenario: str
    about: str
    kind: str
    sessions: int
    right: int
    wrong: int
    inconclusive: int
    median_processes: float
    median_decided: float | None
    """Median processes of the sessions that answered (None when none did)."""
    benchmark_wrong: int = 0
    """Sessions whose report held a per-benchmark verdict the truth contradicts."""
    margins: tuple[float, ...] = ()
    """Every margin an answer named (the margin asked, if it is never raised)."""

    def bound(self, count: int, lower: bool = False) -> float:
        """The one-sided 95 % bound of a rate seen `count` times in these sessions."""
        if lower:
            return 1.0 - stats.binomial_upper(self.sessions - count, self.sessions)
        return stats.binomial_upper(count, self.sessions)

    def misses(self) -> list[str]:
        """The targets this scenario misses (WRONG_AT_MOST, WRONG_BOUND, RIGHT_AT_LEAST)."""
        n, found = self.sessions, []
        if self.wrong > WRONG_AT_MOST * n:
            found.append(f"wrong {self.wrong / n:.1%} > {WRONG_AT_MOST:.1%}")
        if self.bound(self.wrong) > WRONG_BOUND:
            found.append(f"wrong's bound {self.bound(self.wrong):.1%} > {WRONG_BOUND:.1%}")
        if self.kind == "clear" and self.right < RIGHT_AT_LEAST * n:
            found.append(f"right {self.right / n:.1%} < {RIGHT_AT_LEAST:.0%}")
        return found

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "about": self.about,
            "kind": self.kind,
            "sessions": self.sessions,
            "right": self.right,
            "wrong": self.wrong,
            "inconclusive": self.inconclusive,
            "right_lower": self.bound(self.right, lower=True),
            "wrong_upper": self.bound(self.wrong),
            "inconclusive_upper": self.bound(self.inconclusive),
            "median_processes": self.median_processes,
            "median_decided": self.median_decided,
            "benchmark_wrong": self.benchmark_wrong,
            "margins": list(self.margins),
            "misses": self.misses(),
        }


def tally(scenario: Scenario, outcomes: Sequence[SimulatedAnswer]) -> Tally:
    decided = [o.processes for o in outcomes if o.right is not None]
    return Tally(
        scenario=scenario.name,
        about=scenario.about,
        kind=scenario.kind,
        sessions=len(outcomes),
        right=sum(o.right is True for o in outcomes),
        wrong=sum(o.right is False for o in outcomes),
        inconclusive=sum(o.right is None for o in outcomes),
        median_processes=statistics.median(o.processes for o in outcomes),
        median_decided=statistics.median(decided) if decided else None,
        benchmark_wrong=sum(o.benchmark_wrong > 0 for o in outcomes),
        margins=tuple(sorted({round(o.margin, 12) for o in outcomes})),
    )


def by_name(names: Sequence[str]) -> list[Scenario]:
    known = {s.name: s for s in SCENARIOS}
    return [known[n] for n in names]


def _one(job: tuple[Scenario, int]) -> tuple[str, SimulatedAnswer]:
    scenario, seed = job
    return scenario.name, outcome(scenario, seed)


def run_scenarios(
    scenarios: Sequence[Scenario], sessions: int, workers: int = 1, first_seed: int = 0
) -> list[Tally]:
    """Each scenario over `sessions` sessions (seeds first_seed...), on `workers` processes."""
    jobs = [(s, first_seed + k) for s in scenarios for k in range(sessions)]
    found: dict[str, list[SimulatedAnswer]] = {s.name: [] for s in scenarios}
    if workers > 1:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(workers) as pool:
            for name, o in pool.imap_unordered(_one, jobs, chunksize=4):
                found[name].append(o)
    else:
        for job in jobs:
            name, o = _one(job)
            found[name].append(o)
    return [tally(s, found[s.name]) for s in scenarios]


SCHEMA = "tfbuild.scenarios/3"


def document(tallies: Sequence[Tally], sessions: int, first_seed: int) -> dict[str, object]:
    """What a run of the scenarios found, with what it takes to run it again."""
    return {
        "schema": SCHEMA,
        "rules": CURRENT_RULES,
        "margin": MARGIN,
        "confidence": confidence(rules(CURRENT_RULES).split),
        "targets": {"wrong": WRONG_AT_MOST, "wrong_bound": WRONG_BOUND, "right": RIGHT_AT_LEAST},
        "sessions": sessions,
        "first_seed": first_seed,
        "process_s": PROCESS_S,
        "budget": {"per_config_s": DEFAULT_BUDGET.seconds, "at_least_s": DEFAULT_BUDGET.at_least},
        "scenarios": [t.to_json() for t in tallies],
    }


@dataclass(frozen=True)
class Scored:
    """One scenario of a run as the run recorded it: its sessions' answers, right, wrong or
    inconclusive, with their one-sided bounds, the processes of those that answered, the
    sessions with a wrong per-benchmark verdict and the targets it missed."""

    scenario: str
    about: str
    sessions: int
    right: int
    wrong: int
    inconclusive: int
    right_lower: float
    wrong_upper: float
    inconclusive_upper: float
    median_decided: float | None
    benchmark_wrong: int
    misses: tuple[str, ...]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scored:
        return cls(
            str(data["scenario"]), str(data["about"]), int(data["sessions"]), int(data["right"]),
            int(data["wrong"]), int(data["inconclusive"]), float(data["right_lower"]),
            float(data["wrong_upper"]), float(data["inconclusive_upper"]),
            data.get("median_decided"), int(data["benchmark_wrong"]),
            tuple(str(m) for m in data["misses"]),
        )  # fmt: skip


@dataclass(frozen=True)
class ScenarioRun:
    """A run of the scenarios (document()) as it is read back: the rules, margin and
    confidence it answered at, its targets, sessions per scenario, the time of a process and
    the budget it was given, and each scenario scored."""

    rules: int
    margin: float
    confidence: float
    wrong_target: float
    wrong_bound_target: float
    right_target: float
    sessions: int
    process_s: float
    budget_per_config_s: float
    budget_at_least_s: float
    scored: tuple[Scored, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> ScenarioRun:
        targets, budget = doc["targets"], doc["budget"]
        return cls(
            int(doc["rules"]), float(doc["margin"]), float(doc["confidence"]),
            float(targets["wrong"]), float(targets["wrong_bound"]), float(targets["right"]),
            int(doc["sessions"]), float(doc["process_s"]), float(budget["per_config_s"]),
            float(budget["at_least_s"]), tuple(Scored.from_json(t) for t in doc["scenarios"]),
        )  # fmt: skip


def with_truth(scenario: Scenario, **changes: object) -> Scenario:
    """The scenario with its truth changed (Truth's fields)."""
    return replace(scenario, truth=replace(scenario.truth, **changes))  # type: ignore[arg-type]
