"""Simulated sessions: the bench session's own rounds, looks and stop (tfbuild.bench.schedule)
with each process drawn from a known truth instead of run.

A process of a config is drawn as the committed real sessions scatter (tests/fixtures/results):
each benchmark's log throughput is the config's true ratio to the baseline, plus the process's
own noise at that benchmark's spread (3-19 %), a share of it common to the process's
benchmarks (so benchmarks correlate at about 0.2), drawn from a skewed, heavy-tailed shape on
some benchmarks (now and then a slow process: skew to about -2, excess kurtosis to about 9),
scaled per config (spreads unequal across configs, about 3x apart); plus a shock shared by every
process of a round (the machine), a warm-up ramp (a config's first processes slower, by an
amount of its own), an optional trend over the session, and, for a forked process, its zygote's
own speed (an intraclass correlation set on the overall speed, or per benchmark), the zygote
chosen among its config's LIVE as the runtime chooses it (runtime.forked.Turns). Each process
takes PROCESS_S seconds of session time, as a process of the default suite forked from a zygote
does (the default --processes)."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from tfbuild.analysis.looks import SequentialLooks
from tfbuild.bench.schedule import RoundRunner
from tfbuild.bench.session import add_aa
from tfbuild.config.model import INHERIT_PIP
from tfbuild.config.suite import BENCHMARKS, SUITE_VERSION
from tfbuild.machine.detect import profile_from_cpuinfo_text
from tfbuild.progress import QuietReporter
from tfbuild.results.model import (
    AA_SUFFIX,
    BaselineRecord,
    BenchmarkResult,
    ConfigEntry,
    Design,
    ProcessPath,
    Results,
    Run,
    Sample,
    SessionInfo,
    SuiteRecord,
    VariantRecord,
    config_entry,
)
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.forked import CHILDREN, LIVE, Turns

PROCESS_S = 5.6
"""Session seconds one process takes: a process of the default suite forked from its config's
zygote on a 2-vCPU guest, the zygotes' imports included (the session seconds per process of the
committed zygote measurement, docs/measurements/zygotes-aa-2.21.json.gz)."""
BASELINE = "base:default"


@dataclass(frozen=True)
class Noise:
    """How the processes of a session scatter."""

    spreads: Mapping[str, float]
    """benchmark -> the sd of one process's log throughput there (its config's spread 1)."""
    shared: float = 0.2
    """The share of each benchmark's variance common to a process's benchmarks: their
    correlation."""
    slow: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """benchmark -> (how often, how far in sds) a process is slow there: the skew and the tail
    of its shape (standardized; also drawn, at the most common of these, for the share common
    to the benchmarks)."""
    config_spreads: tuple[float, ...] = (1.0,)
    """Each config's spread multiplier in turn (the baseline first; its A/A copy, the same
    build, shares it)."""
    round_sd: float = 0.0
    """A shock shared by every process of a round."""
    ramp: float = 0.0
    """How much slower a config's first process is (times a draw between 1/2 and 3/2 per
    config); its k-th by ramp * exp(-k)."""


REAL = Noise(
    spreads={
        "gru-keras": 0.09,
        "gru-static": 0.08,
        "gru-dynamic": 0.10,
        "matmul-fed": 0.19,
        "matmul-pinned": 0.05,
        "input-fed": 0.03,
        "input-pinned": 0.06,
    },
    shared=0.2,
    slow={
        "gru-keras": (0.05, 3.0),
        "matmul-fed": (0.05, 3.0),
        "matmul-pinned": (0.02, 6.5),
        "input-pinned": (0.02, 6.5),
    },
    config_spreads=(1.0, 0.7, 1.5, 0.85, 1.25, 0.6, 1.8, 1.1, 0.75, 1.35),
    round_sd=0.03,
    ramp=0.06,
)
"""As rough as the committed real sessions: per-benchmark spreads 3-19 %, a config's speed
about 5 % (3-9 % across configs), benchmarks correlated at 0.2, slow processes on four of
seven, a shared shock per round and a warm-up ramp."""
GAUSSIAN = Noise(spreads={name: 0.05 for name in BENCHMARKS}, shared=0.9)
"""Normal noise, one spread of about 5 % for every config and benchmark: the textbook case."""


@dataclass(frozen=True)
class Truth:
    """What the processes of a scenario are drawn from."""

    effects: Mapping[str, float]
    """config -> true throughput ratio to the baseline (1.0 when not named)."""
    noise: Noise = REAL
    scale: float = 1.0
    """Every spread times this (1.6: a process spread of about 8 %)."""
    scale_of: Mapping[str, float] = field(default_factory=dict)
    """config -> its spread multiplier, where it is set (else the noise's in turn)."""
    tails: str = "shaped"
    """shaped (the noise's slow processes) or t3 (Student's t with 3 degrees of freedom at the
    same spreads, every benchmark)."""
    drift: float = 0.0
    """A trend over the session: every process of round r is exp(drift * r / 30) faster."""
    aa_bias: float = 1.0
    """How much faster than the baseline its A/A copy (the same build) comes out: 1.0 on a
    fair machine."""
    zygote: float = 0.0
    """The intraclass correlation of the processes one zygote forks, on a config's overall
    speed (0: as independent as fresh processes)."""
    zygote_bench: float = 0.0
    """The same within each benchmark, drawn per benchmark."""
    processes: ProcessPath = "forked"
    live: int = LIVE
    """Zygotes each config keeps alive at once (fewer than LIVE: a machine short of memory)."""

    def effect(self, key: str) -> float:
        return self.effects.get(key.removesuffix(AA_SUFFIX), 1.0)

    def best(self) -> float:
        """The fastest config's true ratio to the baseline (the baseline counts: 1.0)."""
        return max([1.0, *self.effects.values()])

    def speed_sd(self, spread: float) -> float:
        """The sd of a process's overall speed (the mean log throughput over the benchmarks)
        of a config of spread multiplier `spread`."""
        s = [self.scale * spread * v for v in self.noise.spreads.values()]
        common = self.noise.shared * sum(s) ** 2
        return math.sqrt(common + (1.0 - self.noise.shared) * sum(x * x for x in s)) / len(s)


def _shape(rng: random.Random, tails: str, slow: tuple[float, float]) -> float:
    """One standardized draw: normal with a slow excursion (probability p, k sds) now and
    then, or Student's t with 3 degrees of freedom."""
    if tails == "t3":
        return rng.gauss(0.0, 1.0) / math.sqrt(rng.gammavariate(1.5, 2.0) / 3.0) / math.sqrt(3.0)
    p, k = slow
    x = rng.gauss(0.0, 1.0) - (k if p and rng.random() < p else 0.0)
    return (x + p * k) / math.sqrt(1.0 + p * (1.0 - p) * k * k)


class Drawn(RoundRunner):
    """The session loop with each process drawn from a truth instead of run."""

    def __init__(self, results: Results, truth: Truth, rng: random.Random) -> None:
        runtimes = {name: cast(RuntimeEnv, None) for name in results.variants or {}}
        self.now = 0.0
        looks = SequentialLooks(forecast=False)
        super().__init__(results, runtimes, QuietReporter(), lambda r: r, self._clock, looks)
        self.truth, self.rng = truth, rng
        self.turns: dict[str, Turns] = {}
        self.served: dict[str, list[int]] = {}
        self.zygotes: dict[str, list[int]] = {}
        self.made = 0
        self.draws: dict[tuple[int, str], float] = {}
        self.count: dict[str, int] = {}
        self.shock: dict[int, float] = {}
        keys = [c.key for c in results.configs if not c.aa]
        spreads = truth.noise.config_spreads
        self.spread = {k: truth.scale_of.get(k, spreads[i % len(spreads)]) for i, k in
                       enumerate(keys)}  # fmt: skip
        self.ramp = {c.key: truth.noise.ramp * rng.uniform(0.5, 1.5) for c in results.configs}
        self.live = truth.live

    def _clock(self) -> float:
        return self.now

    def _zygote(self, config: str) -> int:
        """Which zygote forks the config's next process (runtime.forked.Turns), by number."""
        served = self.served.setdefault(config, [0] * self.live)
        ids = self.zygotes.setdefault(config, [-1] * self.live)
        slot = self.turns.setdefault(config, Turns(self.live, self.rng)).next()
        if served[slot] >= CHILDREN or ids[slot] < 0:
            served[slot], ids[slot] = 0, self.made
            self.made += 1
        served[slot] += 1
        return ids[slot]

    def _own(self, zygote: int, where: str, icc: float, within: float) -> float:
        """A zygote's own speed at `where` (the overall speed, or a benchmark): its children
        share it, a share `icc` of their variance when `within` is the rest."""
        if icc <= 0.0 or zygote < 0:
            return 0.0
        key = (zygote, where)
        if key not in self.draws:
            self.draws[key] = self.rng.gauss(0.0, within * math.sqrt(icc / (1.0 - icc)))
        return self.draws[key]

    def _run_one(self, runtime: RuntimeEnv, config: ConfigEntry, r: int, pos: int) -> Run:
        truth, rng, noise = self.truth, self.rng, self.truth.noise
        build = config.key.removesuffix(AA_SUFFIX)
        spread = truth.scale * self.spread.get(build, 1.0)
        forked = truth.processes == "forked"
        zygote = self._zygote(config.key) if forked else -1
        k = self.count.get(config.key, 0)
        self.count[config.key] = k + 1
        if r not in self.shock:
            self.shock[r] = rng.gauss(0.0, noise.round_sd) if noise.round_sd else 0.0
        speed = math.log(truth.effect(config.key)) + self.shock[r] + truth.drift * r / 30.0
        speed -= self.ramp[config.key] * math.exp(-k)
        speed += self._own(zygote, "", truth.zygote, truth.speed_sd(spread))
        if config.aa:
            speed += math.log(truth.aa_bias)
        worst = max(noise.slow.values(), default=(0.0, 0.0))
        common = _shape(rng, truth.tails, worst)
        benchmarks = {}
        for name in self.results.suite.benchmarks:
            sd = spread * noise.spreads[name]
            own = _shape(rng, truth.tails, noise.slow.get(name, (0.0, 0.0)))
            value = speed + sd * (
                math.sqrt(noise.shared) * common + math.sqrt(1.0 - noise.shared) * own
            )
            value += self._own(zygote, name, truth.zygote_bench, sd)
            throughput = 100.0 * math.exp(value)
            benchmarks[name] = BenchmarkResult(
                samples=tuple(
                    Sample(wall_s=0.1, cpu_s=0.2, throughput=throughput * (1 + rng.gauss(0, 0.002)))
                    for _ in range(3)
                )
            )
        self.now += PROCESS_S
        return Run(
            round=r,
            position=pos,
            config=config.key,
            status="ok",
            started_at=None,
            wall_s=PROCESS_S,
            benchmarks=benchmarks,
            zygote=f"z{zygote}" if forked else None,
        )


_CPUINFO = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: simulated\nflags\t\t: sse2\n"


def empty_session(
    configs: int, design: Design, seed: int, processes: ProcessPath = "forked"
) -> Results:
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
            processes=processes,
        ),
        baseline=BaselineRecord(variant="base", tuning="default", config=BASELINE),
        variants={
            k.split(":")[0]: VariantRecord(definition={"source": "pypi"}, status="ready")
            for k in keys
        },
        configs=tuple(config_entry(k) for k in keys),
    )
    return add_aa(results)
