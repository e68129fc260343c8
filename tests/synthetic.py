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
from tfbuild.compare import HostReport

BENCHMARKS = ("gru-keras", "matmul-pinned", "input-fed")
UNITS = {name: b.unit for name, b in SUITE.items()}
BASELINE = "base:default"


def host_json(hostname: str = "bench-host") -> dict[str, Any]:
    profile = host.profile_from_cpuinfo(FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo")
    document = profile.to_json()
    document["hostname"] = hostname
    document["detected_at"] = "2026-01-01T00:00:00+00:00"
    return document


def session(
    effects: Mapping[str, float | Mapping[str, float]],
    *,
    noise: float = 0.02,
    rounds: int = 10,
    seed: int = 0,
    benchmarks: Sequence[str] = BENCHMARKS,
    hostname: str = "bench-host",
    aa: bool = True,
    aa_effect: float = 1.0,
    session_id: str | None = None,
    noise_of: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """A results document: the baseline plus one config per `effects` entry.

    `effects` maps a config key ("variant:tuning") to its speed relative to the baseline, for
    all benchmarks or per benchmark. Each config's round value carries lognormal noise with
    sigma `noise` (or `noise_of[key]`); a drift shared by all configs of a round stands for a
    machine that speeds up and slows down (pairing by round must cancel it).
    """
    rng = random.Random(seed)
    keys = [BASELINE, *effects] + ([BASELINE + "~aa"] if aa else [])
    configs: list[dict[str, Any]] = []
    for key in keys:
        variant, _, tuning = key.removesuffix("~aa").partition(":")
        configs.append(
            {
                "key": key,
                "variant": variant,
                "tuning": tuning,
                "aa": key.endswith("~aa"),
                "intra_op": 1 if tuning == "single" else None,
                "inter_op": None,
                "env": {"OMP_NUM_THREADS": "1"} if tuning == "single" else {},
                "peak": {"gflops": 300.0},
            }
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
                    "warmup_iterations": 3,
                    "warmup_s": 0.5,
                    "samples": samples,
                    "gaps_s": [1e-5, 1e-5],
                    "total_s": 1.5,
                }
            runs.append(
                {
                    "round": r,
                    "position": position,
                    "config": key,
                    "status": "ok",
                    "started_at": "2026-01-01T00:00:00+00:00",
                    "wall_s": 8.0,
                    "import_s": 2.0,
                    "threads": {"intra_op": 0, "inter_op": 0, "env": {}, "affinity": [0, 1]},
                    "benchmarks": benches,
                    "failure": None,
                }
            )
    return {
        "schema": "tfbuild.results/1",
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
            "rounds": rounds,
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
        "host": host_json(hostname),
        "suite": {
            "version": 1,
            "benchmarks": list(benchmarks),
            "warmup": 3,
            "samples": 3,
            "iterations": {b: 10 for b in benchmarks},
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
        "runs": runs,
    }


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(json.dumps(document))
    return path


def assert_coherent_tiers(report: HostReport) -> None:
    """Tiers are consecutive runs of the ranking, and the baseline's tier holds only configs
    that tie with it."""
    tier_of = {c: i for i, tier in enumerate(report.tiers) for c in tier}
    order = [tier_of[e.config] for e in report.ranking]
    assert order == sorted(order), order
    assert sorted(tier_of) == sorted(e.config for e in report.ranking)
    verdicts = {e.config: e.verdict for e in report.ranking}
    base_tier = report.tiers[tier_of[report.baseline]]
    assert all(verdicts[c] in ("tie", "baseline") for c in base_tier), base_tier
