"""Synthetic bench sessions with known effects, built as `tfbuild bench` builds its results."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from support.env import FIXTURES
from tfbuild.analysis.estimates import Setup, make_setup
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.rounds import Rounds, round_table, zygote_table
from tfbuild.analysis.sessions import Session, Timeline
from tfbuild.config.model import INHERIT_PIP
from tfbuild.config.suite import BENCHMARKS as SUITE
from tfbuild.config.suite import SUITE_VERSION
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.machine.peak import Peak
from tfbuild.machine.profile import HostProfile
from tfbuild.results.codec import to_json
from tfbuild.results.documents import write_json
from tfbuild.results.model import (
    AA_SUFFIX,
    BaselineRecord,
    BenchmarkResult,
    Design,
    Results,
    Run,
    Sample,
    SessionInfo,
    Stop,
    SuiteRecord,
    VariantRecord,
    WheelRecord,
    config_entry,
)
from tfbuild.results.rules import rules

BENCHMARKS = ("gru-keras", "matmul-pinned", "input-fed")
UNITS = {name: b.unit for name, b in SUITE.items()}
BASELINE = "base:default"
STARTED = "2026-01-01T00:00:00+00:00"
FINISHED = "2026-01-01T00:30:00+00:00"
PEAK = Peak(gflops=300.0, cores=2, ghz=2.5, lanes=8, fma_units=2, assumptions="synthetic")


HASWELL = "haswell-xeon-e5-2680v3.cpuinfo"


def host(hostname: str = "bench-host", cpuinfo: str = HASWELL) -> HostProfile:
    """A host profile from a saved /proc/cpuinfo (tests/fixtures/cpuinfo): the machine class
    results are compared by comes from the CPU, never from the hostname."""
    profile = profile_from_cpuinfo(FIXTURES / "cpuinfo" / cpuinfo)
    return replace(profile, hostname=hostname, detected_at=STARTED)


def session(
    effects: Mapping[str, float | Mapping[str, float]],
    *,
    noise: float = 0.02,
    rounds: int = 10,
    seed: int = 0,
    benchmarks: Sequence[str] = BENCHMARKS,
    hostname: str = "bench-host",
    cpuinfo: str = HASWELL,
    aa: bool = True,
    aa_effect: float = 1.0,
    session_id: str | None = None,
    noise_of: Mapping[str, float] | None = None,
    failing: Mapping[str, Sequence[str]] | None = None,
) -> Results:
    """A session of a fixed design: the baseline plus one config per `effects` entry.

    `effects` maps a config key ("variant:tuning") to its speed relative to the baseline, for
    all benchmarks or per benchmark. Each config's round value carries lognormal noise with
    sigma `noise` (or `noise_of[key]`); a drift shared by all configs of a round stands for a
    machine that speeds up and slows down (pairing by round must cancel it). `failing` maps a
    config to benchmarks that raise in every round.
    """
    rng = random.Random(seed)
    keys = [BASELINE, *effects] + ([BASELINE + AA_SUFFIX] if aa else [])
    configs = []
    for key in keys:
        single = key.removesuffix(AA_SUFFIX).endswith(":single")
        configs.append(
            config_entry(
                key,
                intra_op=1 if single else None,
                env={"OMP_NUM_THREADS": "1"} if single else {},
                peak=PEAK,
            )
        )
    variants = sorted({c.variant for c in configs})
    runs: list[Run] = []
    orders = []
    for r in range(rounds):
        order = list(keys)
        rng.shuffle(order)
        orders.append(tuple(order))
        drift = rng.gauss(0, 0.03)
        for position, key in enumerate(order):
            effect = (
                aa_effect
                if key.endswith(AA_SUFFIX)
                else effects.get(key, 1.0)
                if key != BASELINE
                else 1.0
            )
            sigma = (noise_of or {}).get(key, noise)
            benches = {}
            for b in benchmarks:
                if b in (failing or {}).get(key, ()):
                    benches[b] = BenchmarkResult(error="RuntimeError: boom", total_s=0.1)
                    continue
                factor = effect if isinstance(effect, float | int) else effect.get(b, 1.0)
                level = 1000.0 * factor * pow(2.718281828, drift + rng.gauss(0, sigma))
                samples = tuple(
                    Sample(wall_s=0.3, cpu_s=0.55, throughput=level * (1 + rng.gauss(0, noise / 4)))
                    for _ in range(3)
                )
                benches[b] = BenchmarkResult(
                    unit=UNITS[b],
                    iterations=10,
                    build_s=0.05,
                    trace_s=0.3,
                    warmup_s=0.02,
                    warmup_iterations=2,
                    samples=samples,
                    total_s=1.3,
                )
            runs.append(
                Run(
                    round=r,
                    position=position,
                    config=key,
                    status="ok",
                    started_at=STARTED,
                    wall_s=6.5,
                    import_s=1.9,
                    smoke_s=0.05,
                    payload_s=6.4,
                    threads={"intra_op": 0, "inter_op": 0, "env": {}, "affinity": [0, 1]},
                    benchmarks=benches,
                )
            )
    return Results(
        session=SessionInfo(
            id=session_id or f"synthetic-{seed}",
            started_at=STARTED,
            updated_at=FINISHED,
            finished_at=FINISHED,
            complete=True,
            tfbuild_version="0.1.0",
            argv=("tfbuild", "bench"),
            matrix="matrix.yaml",
            seed=seed,
            design=Design(kind="fixed", rounds=rounds),
            stop=Stop(reason="fixed", round=rounds, message=f"{rounds} rounds"),
            elapsed_s=1800.0,
            timeout_s=1800,
            pip=INHERIT_PIP,
        ),
        host=host(hostname, cpuinfo),
        suite=SuiteRecord(
            version=SUITE_VERSION,
            benchmarks=tuple(benchmarks),
            warmup_steps=2,
            iterations={b: 10 for b in benchmarks},
            samples={b: 3 for b in benchmarks},
            units={b: UNITS[b] for b in benchmarks},
        ),
        baseline=BaselineRecord(
            variant="base",
            tuning="default",
            config=BASELINE,
            aa_config=BASELINE + AA_SUFFIX if aa else None,
        ),
        variants={
            v: VariantRecord(
                definition={"name": v, "source": "pypi", "requirement": f"{v}-tensorflow==2.21.0"},
                status="ready",
                artifact=WheelRecord(
                    variant_id=f"tf2.21-py3.11-{v}",
                    wheel=f"wheels/tf2.21-py3.11-{v}/{v}-2.21.0-py3-none-any.whl",
                    sha256=hashlib.sha256(v.encode()).hexdigest(),
                ),
            )
            for v in variants
        },
        configs=tuple(configs),
        order=tuple(orders),
        runs=tuple(runs),
    )


def setup_of(results: Results, design: Design | None = None) -> Setup:
    """The setup of a fixed session at its one look, as the report makes it (`design`: judged
    as if it were of that one)."""
    found = Session(Path("s.json"), results)
    logs = Rounds(round_table([found]), zygote_table([found]))
    keys = [c.key for c in results.configs if not c.aa and c.key != BASELINE]
    timeline = Timeline((results.design.rounds or 0,))
    aa = results.baseline.aa_config
    return make_setup(results, keys, logs, design or results.design, aa, timeline)


def write(path: Path, results: Results) -> Path:
    """The session as a results file, written as tfbuild writes one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, to_json(results))
    return path


def assert_coherent_tiers(report: HostReport) -> None:
    """Two tiers follow the ranking: the configs that could be the fastest, then the ones put
    out, each by a claim naming a config ahead of it; a config whose verdict is slower than
    the baseline is out, and so is the baseline when a config is faster than it (under rules
    6 only when it trails by more than the A/A control shows two processes of one build can
    land apart: then not always)."""
    assert 1 <= len(report.figures.tiers) <= 2
    tier_of = {c: i for i, tier in enumerate(report.figures.tiers) for c in tier}
    order = [tier_of[e.config] for e in report.figures.ranking]
    assert order == sorted(order), order
    assert sorted(tier_of) == sorted(e.config for e in report.figures.ranking)
    out = {c.config for c in report.figures.out}
    assert out == set(report.figures.tiers[1] if len(report.figures.tiers) == 2 else ()) or (
        len(report.figures.tiers) == 1 and not out & set(report.figures.tiers[0])
    )
    assert all(c.ratio <= c.upper < 1.0 for c in report.figures.out)
    verdicts = {e.config: e.verdict for e in report.figures.ranking}
    if rules(report.method.rules).standard:
        return
    for config, verdict in verdicts.items():
        if verdict == "slower":
            assert config in out, config
        if verdict == "faster":
            assert report.measured.baseline in out, config


RECORDED = FIXTURES / "results" / "aa-run-epyc.json.gz"
"""A real session's results file (an A/A session on an AMD EPYC guest)."""


def recorded_document() -> dict[str, Any]:
    """The JSON of a real results file, to damage or edit as a user (or a bad copy) might."""
    document: dict[str, Any] = json.loads(gzip.decompress(RECORDED.read_bytes()))
    return document


def edited(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    """A maker of a results.json in a folder: the recorded session's JSON, changed."""

    def make(folder: Path) -> Path:
        document = recorded_document()
        change(document)
        path = folder / "results.json"
        path.write_text(json.dumps(document))
        return path

    return make
