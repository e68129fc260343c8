"""`tfbuild compare --format json`: every figure of the reports, versioned (COMPARE_SCHEMA), for
scripts. Formats; never computes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tfbuild.analysis.estimates import ALPHA, Estimate
from tfbuild.analysis.gate import Gate
from tfbuild.analysis.host_report import HostReport
from tfbuild.results.codec import look_json

COMPARE_SCHEMA = "tfbuild.compare/3"


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _estimate_json(e: Estimate) -> dict[str, Any]:
    data = asdict(e)
    for key in ("ratio", "low", "high", "p", "level", "sd"):
        data[key] = _finite(data[key])
    return data


def _zygotes_json(r: HostReport) -> dict[str, Any] | None:
    z = r.zygotes
    if z is None:
        return None
    found = z.resemblance.to_json() if z.resemblance else None
    return {"zygotes": z.zygotes, "most": z.most, "widening": z.widening, "resemblance": found}


def compare_json(reports: Sequence[HostReport], verdict: Gate | None = None) -> dict[str, Any]:
    return {
        "schema": COMPARE_SCHEMA,
        "alpha": ALPHA,
        "hosts": [
            {
                "host": r.host_key,
                "sessions": r.sessions,
                "design": {
                    "kind": r.design.kind,
                    "first": r.design.first,
                    "horizon": r.design.horizon,
                    "resolve": r.design.resolve,
                    "budget_s": r.design.budget_s,
                    "rules": r.rules,
                },
                "alpha_split": r.split,
                "stop": asdict(r.stop) if r.stop else None,
                "baseline": r.baseline,
                "rounds": r.rounds,
                "benchmarks": r.benchmarks,
                "weights": {b: r.weights.get(b, 1.0) for b in r.benchmarks},
                "units": r.units,
                "margins": r.margins,
                "margin_source": r.margin_source,
                "decision": {
                    "kind": r.decision.kind,
                    "config": r.decision.config,
                    "margin": r.decision.margin,
                    "floors": {c: _finite(f) for c, f in r.decision.floors.items()},
                    "contenders": list(r.decision.contenders),
                    "held": r.decision.held,
                    "cause": r.decision.cause,
                },
                "zygotes": _zygotes_json(r),
                "resolution": _finite(r.resolution),
                "fixed_equivalent": r.fixed_equivalent,
                "processes": r.processes,
                "benchmark_s": r.benchmark_s,
                "throughput": {
                    c: {b: r.medians[(c, b)] for b in r.benchmarks if (c, b) in r.medians}
                    for c in r.configs
                    if any((c, b) in r.medians for b in r.benchmarks)
                },
                "aa": {k: _estimate_json(v) for k, v in r.aa.items()},
                "warnings": r.warnings,
                "replay": r.replay,
                "ranking": [_estimate_json(e) for e in r.ranking],
                "tiers": r.tiers,
                "out": [asdict(c) for c in r.out],
                "looks": [look_json(look) for look in r.looks],
                "flags": {c: asdict(f) for c, f in r.flags.items()},
                "estimates": [_estimate_json(e) for e in r.estimates.values()],
                "failures": [asdict(f) for f in r.failures],
                **({"forms": [asdict(f) for f in r.forms]} if r.forms else {}),
                "answer": asdict(r.answer),
                "choice": asdict(r.choice) if r.choice else None,
                "contrasts": [_estimate_json(e) for e in r.contrasts],
            }
            for r in reports
        ],
        "against": (
            {
                "changes": [asdict(c) for c in verdict.changes],
                "missing": [asdict(m) for m in verdict.missing],
                "compared": verdict.compared(),
                "notes": verdict.notes,
                "strangers": verdict.strangers,
                "nothing": verdict.nothing,
                "suite_change": verdict.suite_change,
                "suite_change_passes": verdict.suite_change_passes,
            }
            if verdict is not None
            else None
        ),
    }
