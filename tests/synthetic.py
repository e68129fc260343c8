"""Synthetic bench sessions with known effects, shaped like `tfbuild bench` output."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from conftest import FIXTURES

from tfbuild import host
from tfbuild.bench.suite import BENCHMARKS as SUITE
from tfbuild.bench.suite import SUITE_VERSION
from tfbuild.compare import HostReport

BENCHMARKS = ("gru-keras", "matmul-pinned", "input-fed")
UNITS = {name: b.unit for name, b in SUITE.items()}
BASELINE = "base:default"


HASWELL = "haswell-xeon-e5-2680v3.cpuinfo"


def host_json(hostname: str = "bench-host", cpuinfo: str = HASWELL) -> dict[str, Any]:
    """A host profile from a saved /proc/cpuinfo (tests/fixtures/cpuinfo): the machine class
    results are compared by comes from the CPU, never from the hostname."""
    profile = host.profile_from_cpuinfo(FIXTURES / "cpuinfo" / cpuinfo)
    document = profile.to_json()
    document["hostname"] = hostname
    document["detected_at"] = "2026-01-01T00:00:00+00:00"
    return document


def config_entry(
    key: str,
    intra_op: int | None = None,
    env: dict[str, str] | None = None,
    peak: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A results file's entry for the config `key` ("variant:tuning", "~aa" for the copy)."""
    variant, _, tuning = key.removesuffix("~aa").partition(":")
    return {
        "key": key,
        "variant": variant,
        "tuning": tuning,
        "aa": key.endswith("~aa"),
        "intra_op": intra_op,
        "inter_op": None,
        "env": env or {},
        "peak": peak,
    }


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
) -> dict[str, Any]:
    """A results document (fixed design): the baseline plus one config per `effects` entry.

    `effects` maps a config key ("variant:tuning") to its speed relative to the baseline, for
    all benchmarks or per benchmark. Each config's round value carries lognormal noise with
    sigma `noise` (or `noise_of[key]`); a drift shared by all configs of a round stands for a
    machine that speeds up and slows down (pairing by round must cancel it). `failing` maps a
    config to benchmarks that raise in every round.
    """
    rng = random.Random(seed)
    keys = [BASELINE, *effects] + ([BASELINE + "~aa"] if aa else [])
    configs = []
    for key in keys:
        single = key.removesuffix("~aa").endswith(":single")
        configs.append(
            config_entry(
                key,
                intra_op=1 if single else None,
                env={"OMP_NUM_THREADS": "1"} if single else {},
                peak={"gflops": 300.0},
            )
        )
    variants = sorted({str(c["variant"]) for c in configs})
    runs, orders = [], []
    for r in range(rounds):
        order = list(keys)
        rng.shuffle(order)
        orders.append(order)
        drift = rng.gauss(0, 0.03)
        for position, key in enumerate(order):
            effect = (
                aa_effect
                if key.endswith("~aa")
                else effects.get(key, 1.0)
                if key != BASELINE
                else 1.0
            )
            sigma = (noise_of or {}).get(key, noise)
            benches = {}
            for b in benchmarks:
                if b in (failing or {}).get(key, ()):
                    benches[b] = {"error": "RuntimeError: boom", "total_s": 0.1}
                    continue
                factor = effect if isinstance(effect, float | int) else effect.get(b, 1.0)
                level = 1000.0 * factor * pow(2.718281828, drift + rng.gauss(0, sigma))
                samples = [
                    {
                        "wall_s": 0.3,
                        "cpu_s": 0.55,
                        "throughput": level * (1 + rng.gauss(0, noise / 4)),
                    }
                    for _ in range(3)
                ]
                benches[b] = {
                    "unit": UNITS[b],
                    "iterations": 10,
                    "build_s": 0.05,
                    "trace_s": 0.3,
                    "warmup_s": 0.02,
                    "warmup_iterations": 2,
                    "samples": samples,
                    "total_s": 1.3,
                }
            runs.append(
                {
                    "round": r,
                    "position": position,
                    "config": key,
                    "status": "ok",
                    "started_at": "2026-01-01T00:00:00+00:00",
                    "wall_s": 6.5,
                    "import_s": 1.9,
                    "smoke_s": 0.05,
                    "payload_s": 6.4,
                    "threads": {"intra_op": 0, "inter_op": 0, "env": {}, "affinity": [0, 1]},
                    "benchmarks": benches,
                    "failure": None,
                }
            )
    return {
        "schema": "tfbuild.results/2",
        "session": {
            "id": session_id or f"synthetic-{seed}",
            "started_at": "2026-01-01T00:00:00+00:00",
            "updated_at": "2026-01-01T00:30:00+00:00",
            "finished_at": "2026-01-01T00:30:00+00:00",
            "complete": True,
            "tfbuild_version": "0.1.0",
            "argv": ["tfbuild", "bench"],
            "matrix": "matrix.yaml",
            "seed": seed,
            "design": {"kind": "fixed", "rounds": rounds},
            "stop": {"reason": "fixed", "round": rounds, "message": f"{rounds} rounds"},
            "elapsed_s": 1800.0,
            "preset": None,
            "cpus": None,
            "runtime": "auto",
            "timeout_s": 1800,
            "pip": {
                "index_url": "inherit",
                "extra_index_urls": "inherit",
                "ca_bundle": "inherit",
                "trusted_hosts": [],
            },
        },
        "host": host_json(hostname, cpuinfo),
        "suite": {
            "version": SUITE_VERSION,
            "benchmarks": list(benchmarks),
            "warmup_steps": 2,
            "iterations": {b: 10 for b in benchmarks},
            "samples": {b: 3 for b in benchmarks},
            "units": {b: UNITS[b] for b in benchmarks},
        },
        "baseline": {
            "variant": "base",
            "tuning": "default",
            "config": BASELINE,
            "aa_config": BASELINE + "~aa" if aa else None,
        },
        "variants": {
            v: {
                "definition": {
                    "name": v,
                    "source": "pypi",
                    "requirement": f"{v}-tensorflow==2.21.0",
                },
                "status": "ready",
                "artifact": {
                    "variant_id": f"tf2.21-py3.11-{v}",
                    "wheel": f"wheels/tf2.21-py3.11-{v}/{v}-2.21.0-py3-none-any.whl",
                    "sha256": hashlib.sha256(v.encode()).hexdigest(),
                    "constraints": [],
                },
            }
            for v in variants
        },
        "tunings": {},
        "configs": configs,
        "failures": [],
        "order": orders,
        "looks": [],
        "runs": runs,
    }


def write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document))
    return path


def assert_coherent_tiers(report: HostReport) -> None:
    """Two tiers follow the ranking: the configs that could be the fastest, then the ones put
    out, each by a claim naming a config ahead of it; a config whose verdict is slower than
    the baseline is out, and so is the baseline when a config is faster than it."""
    assert 1 <= len(report.tiers) <= 2
    tier_of = {c: i for i, tier in enumerate(report.tiers) for c in tier}
    order = [tier_of[e.config] for e in report.ranking]
    assert order == sorted(order), order
    assert sorted(tier_of) == sorted(e.config for e in report.ranking)
    out = {c.config for c in report.out}
    assert out == set(report.tiers[1] if len(report.tiers) == 2 else ()) or (
        len(report.tiers) == 1 and not out & set(report.tiers[0])
    )
    assert all(c.ratio <= c.upper < 1.0 for c in report.out)
    verdicts = {e.config: e.verdict for e in report.ranking}
    for config, verdict in verdicts.items():
        if verdict == "slower":
            assert config in out, config
        if verdict == "faster":
            assert report.baseline in out, config
