"""How often the answer a report leads with is right: sessions whose true speeds are set, run
through the session's own rounds, looks and stop (tfbuild.bench.schedule), judged by the report
and answered as `tfbuild compare` answers, then scored against the truth.

A process is drawn, not run: each config has a true throughput ratio to the baseline; one
process of it multiplies that by a lognormal factor shared by its benchmarks (the spread
between processes, which the statistics are about) and by a small one per benchmark; a
machine that drifts multiplies every process by a trend over the session; heavy tails draw
the shared factor from Student's t with 3 degrees of freedom at the same spread. Each process
takes PROCESS_S seconds of session time, as a process of the default suite forked from a zygote
does (the default --processes).

Forked processes (--processes forked) can resemble the other children of their zygote more than
two fresh processes resemble each other: a truth's `zygote` sets that intraclass correlation
within each benchmark (one draw per zygote and benchmark, shared by its CHILDREN children), its
`zygote_overall` the same for the factor a process shares across benchmarks. The other
scenarios draw every process independently; the sessions' statistics treat every process as
independent in all of them, as a session does.

An answer is scored against the indifference margin it names: "Use X" is wrong when X is slower
than the fastest config by more than the margin, "Keep the baseline" is wrong when some config
is faster than the baseline by more than the margin; anything else decided is right. A
per-benchmark verdict is wrong when the truth is not what it says: "faster" (or "slower") when
the config is not beyond its margin that way, "equivalent" when it is beyond it."""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from tfbuild.analysis.answer import CONFIDENCE
from tfbuild.analysis.estimates import OVERALL, Estimate
from tfbuild.analysis.host_report import HostReport, analyse_host
from tfbuild.analysis.looks import SequentialLooks
from tfbuild.analysis.sessions import Session
from tfbuild.bench.schedule import Schedule
from tfbuild.bench.session import add_aa
from tfbuild.config.model import INHERIT_PIP
from tfbuild.config.suite import BENCHMARKS, SUITE_VERSION
from tfbuild.machine.detect import profile_from_cpuinfo_text
from tfbuild.progress import QuietReporter
from tfbuild.results.model import (
    AA_SUFFIX,
    DECISIONS,
    BaselineRecord,
    BenchmarkResult,
    ConfigEntry,
    Design,
    Results,
    Run,
    Sample,
    SessionInfo,
    SuiteRecord,
    VariantRecord,
    config_entry,
)
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.forked import CHILDREN

PROCESS_S = 3.5
"""Session seconds one process takes: a process of the default suite forked from its config's
zygote on a 2-vCPU guest, the zygotes' imports included (the session seconds per process of
docs/measurements/process-cost-local-2.21.json.gz; a fresh process costs about 6)."""
MARGIN = 0.05
"""The indifference margin the scenarios are set against: the default matrix's."""
BASELINE = "base:default"
SEQUENTIAL = Design(kind="sequential", first=3, horizon=30, budget_s=20 * 60.0, resolve=MARGIN)
"""The default matrix's design: looks from round 3, error control over 30 rounds, 20 minutes."""


@dataclass(frozen=True)
class Truth:
    """What the processes of a scenario are drawn from."""

    effects: Mapping[str, float]
    """config -> true throughput ratio to the baseline (1.0 when not named)."""
    sigma: float = 0.05
    """Spread of one process: the sd of its log throughput, shared by its benchmarks."""
    bench_sigma: float = 0.02
    """The sd of each benchmark's own log throughput within a process."""
    sigma_of: Mapping[str, float] = field(default_factory=dict)
    """config -> its own process spread, where it differs."""
    tails: str = "normal"
    """normal, or t3 (Student's t with 3 degrees of freedom, scaled to the same spread)."""
    drift: float = 0.0
    """A trend over the session: every process of round r is exp(drift * r / 30) faster."""
    aa_bias: float = 1.0
    """How much faster than the baseline its A/A copy (the same build) comes out: 1.0 on a
    fair machine."""
    zygote: float = 0.0
    """The intraclass correlation, within each benchmark, of the processes one zygote forks
    (0: as independent as fresh processes)."""
    zygote_overall: float = 0.0
    """The same for the factor a process shares across its benchmarks."""

    def effect(self, key: str) -> float:
        return self.effects.get(key.removesuffix(AA_SUFFIX), 1.0)

    def best(self) -> float:
        """The fastest config's true ratio to the baseline (the baseline counts: 1.0)."""
        return max([1.0, *self.effects.values()])


@dataclass(frozen=True)
class Scenario:
    name: str
    about: str
    configs: int
    """Configs the session compares, the baseline included (its A/A copy added as in bench)."""
    truth: Truth
    design: Design = SEQUENTIAL


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("null-2", "the baseline and one config, equally fast", 2, Truth({})),
    Scenario("null-6", "six configs, all equally fast", 6, Truth({})),
    Scenario("null-16", "sixteen configs, all equally fast", 16, Truth({})),
    Scenario("half", "one config ahead by half the margin (+2.5 %)", 6,
             Truth({"c01:default": 1.025})),
    Scenario("margin", "one config ahead by the margin (+5 %)", 6, Truth({"c01:default": 1.05})),
    Scenario("beyond", "one config ahead by a little more than the margin (+6 %)", 6,
             Truth({"c01:default": 1.06})),
    Scenario("twice", "one config ahead by twice the margin (+10 %)", 6,
             Truth({"c01:default": 1.10})),
    Scenario("two-leaders", "two configs ahead, 3 % apart (+10 %, +7 %)", 6,
             Truth({"c01:default": 1.10, "c02:default": 1.07})),
    Scenario("quiet-noisy", "a quiet best (+8 %, spread 3 %) and a noisy second (+6 %, 7 %)", 6,
             Truth({"c01:default": 1.08, "c02:default": 1.06},
                   sigma_of={"c01:default": 0.03, "c02:default": 0.07})),
    Scenario("slower", "one config slower by twice the margin (-10 %)", 6,
             Truth({"c01:default": 0.90})),
    Scenario("single", "one config against the baseline, ahead by twice the margin", 2,
             Truth({"c01:default": 1.10})),
    Scenario("heavy-tails", "twice the margin ahead, noise with Student-t (3 df) tails", 6,
             Truth({"c01:default": 1.10}, tails="t3")),
    Scenario("drift", "twice the margin ahead, the machine 5 % faster by round 30", 6,
             Truth({"c01:default": 1.10}, drift=0.05)),
    Scenario("fixed-1", "twice the margin ahead, --rounds 1", 6, Truth({"c01:default": 1.10}),
             Design(kind="fixed", rounds=1)),
    Scenario("fixed-2", "twice the margin ahead, --rounds 2", 6, Truth({"c01:default": 1.10}),
             Design(kind="fixed", rounds=2)),
    Scenario("fixed-10", "twice the margin ahead, --rounds 10", 6, Truth({"c01:default": 1.10}),
             Design(kind="fixed", rounds=10)),
    Scenario("zygote-null", "six equally fast, a zygote's children alike per benchmark (ICC 0.3)",
             6, Truth({}, zygote=0.3)),
    Scenario("zygote-twice", "twice the margin ahead, zygote's children alike per benchmark",
             6, Truth({"c01:default": 1.10}, zygote=0.3)),
    Scenario("zygote-all", "six equally fast, a zygote's children alike as a whole (ICC 0.3)",
             6, Truth({}, zygote_overall=0.3)),
)  # fmt: skip


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
    """Whether an answer is right about `truth` at the `margin` it names (None: undecided)."""
    slack = math.log1p(margin) + 1e-12
    best = math.log(truth.best())
    if kind == "keep":
        return best <= slack
    if kind == "use" and config is not None:
        return math.log(truth.effect(config)) >= best - slack
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


class _Drawn(Schedule):
    """The session loop with each process drawn from the scenario's truth instead of run."""

    def __init__(self, results: Results, truth: Truth, rng: random.Random) -> None:
        runtimes = {name: cast(RuntimeEnv, None) for name in results.variants or {}}
        self.now = 0.0
        looks = SequentialLooks(forecast=False)
        super().__init__(results, runtimes, QuietReporter(), lambda r: r, self._clock, looks)
        self.truth, self.rng = truth, rng
        self.forked: dict[str, int] = {}
        self.zygotes: dict[tuple[str, int, str], float] = {}

    def _zygote(self, config: str, benchmark: str, icc: float, within: float) -> float:
        """The draw of `config`'s current zygote for `benchmark` (or OVERALL): its children share
        it, a share `icc` of their variance when `within` is the rest."""
        if icc <= 0.0:
            return 0.0
        key = (config, self.forked.get(config, 0) // CHILDREN, benchmark)
        if key not in self.zygotes:
            self.zygotes[key] = self.rng.gauss(0.0, within * math.sqrt(icc / (1.0 - icc)))
        return self.zygotes[key]

    def _clock(self) -> float:
        return self.now

    def _run_one(self, runtime: RuntimeEnv, config: ConfigEntry, r: int, pos: int) -> Run:
        truth, rng = self.truth, self.rng
        sigma = truth.sigma_of.get(config.key.removesuffix(AA_SUFFIX), truth.sigma)
        shared = (
            rng.gauss(0.0, 1.0)
            if truth.tails == "normal"
            else rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) / math.sqrt(3.0)
        )
        level = math.log(truth.effect(config.key)) + sigma * shared + truth.drift * r / 30.0
        level += self._zygote(config.key, OVERALL, truth.zygote_overall, sigma)
        if config.aa:
            level += math.log(truth.aa_bias)
        benchmarks = {}
        within = math.hypot(sigma, truth.bench_sigma)
        for name in self.results.suite.benchmarks:
            own = self._zygote(config.key, name, truth.zygote, within)
            value = 100.0 * math.exp(level + own + rng.gauss(0.0, truth.bench_sigma))
            benchmarks[name] = BenchmarkResult(
                samples=tuple(
                    Sample(wall_s=0.1, cpu_s=0.2, throughput=value * (1 + rng.gauss(0, 0.002)))
                    for _ in range(3)
                )
            )
        self.forked[config.key] = self.forked.get(config.key, 0) + 1
        self.now += PROCESS_S
        return Run(
            round=r,
            position=pos,
            config=config.key,
            status="ok",
            started_at=None,
            wall_s=PROCESS_S,
            benchmarks=benchmarks,
        )


_CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: simulated\nflags\t\t: sse2\n"


def empty_session(configs: int, design: Design, seed: int) -> Results:
    """A session as `tfbuild bench` starts one: the baseline and `configs - 1` more configs,
    every variant ready, the baseline's A/A copy added, the default suite."""
    keys = [BASELINE, *(f"c{i:02d}:default" for i in range(1, configs))]
    names = tuple(BENCHMARKS)
    results = Results(
        session=SessionInfo(
            id=f"scenario-{seed}",
            started_at="2026-01-01T00:00:00+00:00",
            updated_at="2026-01-01T00:00:00+00:00",
            finished_at=None,
            complete=False,
            tfbuild_version="0",
            argv=(),
            matrix="matrix.yaml",
            seed=seed,
            design=design,
            elapsed_s=0.0,
            pip=INHERIT_PIP,
        ),
        host=profile_from_cpuinfo_text(_CPUINFO, "simulated"),
        suite=SuiteRecord(
            version=SUITE_VERSION,
            benchmarks=names,
            warmup_steps=1,
            iterations={b: 1 for b in names},
            samples={b: 3 for b in names},
            units={b: BENCHMARKS[b].unit for b in names},
        ),
        baseline=BaselineRecord(variant="base", tuning="default", config=BASELINE),
        variants={
            k.split(":")[0]: VariantRecord(definition={"source": "pypi"}, status="ready")
            for k in keys
        },
        configs=tuple(config_entry(k) for k in keys),
    )
    return add_aa(results)


def simulate(scenario: Scenario, seed: int, *, power: bool = False) -> tuple[Results, HostReport]:
    """One session of the scenario, and its report (`power` as analyse_host's: the answer's
    budget, which scoring an answer does not need)."""
    rng = random.Random(f"{scenario.name}:{seed}")
    results = _Drawn(empty_session(scenario.configs, scenario.design, seed), scenario.truth, rng)
    done = results.run()
    return done, analyse_host([Session(Path(f"{done.id}.json"), done)], power=power)


def outcome(scenario: Scenario, seed: int) -> SimulatedAnswer:
    results, report = simulate(scenario, seed)
    said = report.answer
    config = report.choice.config if said.kind == "use" and report.choice else None
    margin = report.margins.get("overall", MARGIN)
    return SimulatedAnswer(
        kind=said.kind,
        config=config,
        margin=margin,
        right=score(scenario.truth, said.kind, config, margin),
        processes=len(results.runs),
        benchmark_wrong=benchmark_wrong(scenario.truth, report.estimates),
    )


@dataclass(frozen=True)
class Tally:
    """A scenario over many sessions."""

    scenario: str
    about: str
    sessions: int
    right: int
    wrong: int
    inconclusive: int
    median_processes: float
    median_decided: float | None
    """Median processes of the sessions that answered (None when none did)."""
    benchmark_wrong: int = 0
    """Sessions whose report held a per-benchmark verdict the truth contradicts."""

    def to_json(self) -> dict[str, object]:
        return {
            "scenario": self.scenario,
            "about": self.about,
            "sessions": self.sessions,
            "right": self.right,
            "wrong": self.wrong,
            "inconclusive": self.inconclusive,
            "median_processes": self.median_processes,
            "median_decided": self.median_decided,
            "benchmark_wrong": self.benchmark_wrong,
        }


def tally(scenario: Scenario, outcomes: Sequence[SimulatedAnswer]) -> Tally:
    decided = [o.processes for o in outcomes if o.right is not None]
    return Tally(
        scenario=scenario.name,
        about=scenario.about,
        sessions=len(outcomes),
        right=sum(o.right is True for o in outcomes),
        wrong=sum(o.right is False for o in outcomes),
        inconclusive=sum(o.right is None for o in outcomes),
        median_processes=statistics.median(o.processes for o in outcomes),
        median_decided=statistics.median(decided) if decided else None,
        benchmark_wrong=sum(o.benchmark_wrong > 0 for o in outcomes),
    )


def by_name(names: Sequence[str]) -> list[Scenario]:
    known = {s.name: s for s in SCENARIOS}
    return [known[n] for n in names]


def _one(job: tuple[str, int]) -> tuple[str, SimulatedAnswer]:
    name, seed = job
    (scenario,) = by_name([name])
    return name, outcome(scenario, seed)


def run_scenarios(
    scenarios: Sequence[Scenario], sessions: int, workers: int = 1, first_seed: int = 0
) -> list[Tally]:
    """Each scenario over `sessions` sessions (seeds first_seed...), on `workers` processes."""
    jobs = [(s.name, first_seed + k) for s in scenarios for k in range(sessions)]
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


SCHEMA = "tfbuild.scenarios/1"


def document(tallies: Sequence[Tally], sessions: int, first_seed: int) -> dict[str, object]:
    """What a run of the scenarios found, with what it takes to run it again."""
    return {
        "schema": SCHEMA,
        "rules": DECISIONS,
        "margin": MARGIN,
        "confidence": CONFIDENCE,
        "sessions": sessions,
        "first_seed": first_seed,
        "process_s": PROCESS_S,
        "budget_s": SEQUENTIAL.budget_s,
        "scenarios": [t.to_json() for t in tallies],
    }
