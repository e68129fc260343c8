"""`tfbuild compare --format json`: every figure of the reports, versioned (COMPARE_SCHEMA), for
scripts. Formats; never computes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from tfbuild.analysis.estimates import ALPHA, Estimate
from tfbuild.analysis.gate import Gate
from tfbuild.analysis.reported import HostReport
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
                "host": r.measured.host_key,
                "sessions": r.measured.sessions,
                "design": {
                    "kind": r.method.design.kind,
                    "first": r.method.design.first,
                    "horizon": r.method.design.horizon,
                    "resolve": r.method.design.resolve,
                    "budget_s": r.method.design.budget_s,
                    "rules": r.method.rules,
                },
                "alpha_split": r.method.split,
                "stop": asdict(r.course.stop) if r.course.stop else None,
                "baseline": r.measured.baseline,
                "rounds": r.measured.rounds,
                "benchmarks": r.measured.benchmarks,
                "weights": {b: r.method.weights.get(b, 1.0) for b in r.measured.benchmarks},
                "units": r.measured.units,
                "margins": r.method.margins,
                "margin_source": r.method.margin_source,
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
                "resolution": _finite(r.figures.resolution),
                "fixed_equivalent": r.course.fixed_equivalent,
                "processes": r.measured.runs,
                "benchmark_s": r.measured.benchmark_s,
                "throughput": {
                    c: {
                        b: r.figures.medians[(c, b)]
                        for b in r.measured.benchmarks
                        if (c, b) in r.figures.medians
                    }
                    for c in r.measured.configs
                    if any((c, b) in r.figures.medians for b in r.measured.benchmarks)
                },
                "aa": {k: _estimate_json(v) for k, v in r.figures.aa.items()},
                "warnings": r.problems.warnings,
                "replay": r.course.replay,
                "ranking": [_estimate_json(e) for e in r.figures.ranking],
                "tiers": r.figures.tiers,
                "out": [asdict(c) for c in r.figures.out],
                "looks": [look_json(look) for look in r.course.looks],
                "flags": {c: asdict(f) for c, f in r.problems.flags.items()},
                "estimates": [_estimate_json(e) for e in r.figures.estimates.values()],
                "failures": [asdict(f) for f in r.problems.failures],
                **({"forms": [asdict(f) for f in r.forms]} if r.forms else {}),
                "answer": asdict(r.answer),
                "choice": asdict(r.choice) if r.choice else None,
                "contrasts": [_estimate_json(e) for e in r.figures.contrasts],
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
