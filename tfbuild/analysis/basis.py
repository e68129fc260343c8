"""What every step of the report on one machine's sessions starts from (Basis): the sessions,
what they measured, the design they are judged by, and the comparison setup on their per-round
speeds, on the weights asked and on those the sessions were decided on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from tfbuild.analysis.estimates import Setup, make_setup
from tfbuild.analysis.reported import Measured
from tfbuild.analysis.rounds import RoundKey, Rounds, raw_samples, round_table, zygote_table
from tfbuild.analysis.sessions import Session, final_timeline, rest_estimates
from tfbuild.errors import ResultsError
from tfbuild.results import model
from tfbuild.results.model import FIXED, ConfigEntry, Design, VariantRecord


@dataclass(frozen=True, kw_only=True)
class Basis:
    """The sessions of one report and what the steps after read of them."""

    sessions: Sequence[Session]
    design: Design
    """A sequential session's own design; sessions pooled are one fixed design."""
    measured: Measured
    table: dict[tuple[str, str], dict[RoundKey, float]]
    """(config, benchmark) -> {(session, round): the round's median sample throughput}."""
    samples: dict[tuple[str, str], list[float]]
    """(config, benchmark) -> every raw sample throughput, for distribution plots."""
    setup: Setup
    """The comparisons, on the speeds over the weights asked."""
    recorded: Setup
    """The same comparisons on the speeds the session was decided on (its own weights): what
    its looks are replayed on."""
    weights: Mapping[str, float]
    """The weights asked (benchmark -> weight, 1 for those not named)."""
    notes: list[str]
    """What the timeline says of a session that has not finished."""
    rested: dict[str, model.LookEstimate]
    """The configs a sequential session rested (rules 4), each with its interval at the look
    it rested at."""

    @property
    def first(self) -> model.Results:
        return self.sessions[0].results

    @property
    def rounds(self) -> int:
        return self.measured.rounds


def basis_of(sessions: Sequence[Session], weights: Mapping[str, float] | None) -> Basis:
    """The basis of a report on `sessions` of one machine (one sequential session, or fixed
    ones pooled), its overall speed weighed by `weights` (None: as the sessions recorded
    them); ResultsError when the sessions use different baselines."""
    aa, keys = _compared(sessions)
    configs, variants, benchmark_s = _entries(sessions)
    first = sessions[0].results
    design = sessions[0].design if len(sessions) == 1 else FIXED
    weighed = first.suite.weights
    chosen = weighed if weights is None else weights
    table = round_table(sessions)
    logs = Rounds(table, zygote_table(sessions), chosen)
    same = dict(chosen) == dict(weighed)
    recorded = logs if same else Rounds(table, zygote_table(sessions), weighed)
    samples = raw_samples(sessions)
    rounds = max((len(v) for v in table.values()), default=0)
    if design.sequential:
        rounds = len(first.order or ())
    timeline, at, notes = final_timeline(first, design, rounds)
    rested = rest_estimates(first.looks)
    setup = make_setup(first, keys, logs, design, aa, timeline, at)
    measured = Measured(
        host=first.host,
        host_key=sessions[0].host_key,
        sessions=[str(s.path) for s in sessions],
        baseline=setup.baseline,
        benchmarks=list(setup.benchmarks),
        units=dict(first.suite.units),
        rounds=rounds,
        runs=sum(len(s.results.runs) for s in sessions),
        benchmark_s=benchmark_s,
        workload=first.suite.workload.describe() if first.suite.workload else None,
        forked=first.suite.processes == "forked",
        configs=configs,
        variants=variants,
    )
    return Basis(
        sessions=sessions,
        design=design,
        measured=measured,
        table=table,
        samples=samples,
        setup=setup,
        recorded=setup if recorded is logs else replace(setup, logs=recorded),
        weights=chosen,
        notes=notes,
        rested=rested,
    )


def _compared(sessions: Sequence[Session]) -> tuple[str | None, list[str]]:
    """The baseline's A/A copy, and the configs compared with the baseline: those of a variant
    ready in any session, in the order the sessions first name them."""
    baselines = {s.results.baseline.config for s in sessions}
    if len(baselines) > 1:
        raise ResultsError(
            f"sessions of {sessions[0].host_key} use different baselines {sorted(baselines)}; "
            "compare them separately"
        )
    baseline = sessions[0].results.baseline.config
    ready = {n for s in sessions for n in s.results.ready}
    aa = next(
        (s.results.baseline.aa_config for s in sessions if s.results.baseline.aa_config), None
    )
    keys: list[str] = []
    for s in sessions:
        for c in s.results.configs:
            wanted = c.variant in ready and not c.aa and c.key != baseline
            if wanted and c.key not in keys:
                keys.append(c.key)
    return aa, keys


def _entries(
    sessions: Sequence[Session],
) -> tuple[dict[str, ConfigEntry], dict[str, VariantRecord], float | None]:
    """Each config and variant as the sessions recorded it (a variant ready in one of them as
    it was there), and the seconds they spent benchmarking, when all recorded it."""
    configs: dict[str, ConfigEntry] = {}
    variants: dict[str, VariantRecord] = {}
    for s in sessions:
        for c in s.results.configs:
            configs.setdefault(c.key, c)
        for name, v in (s.results.variants or {}).items():
            if v.status == "ready" or name not in variants:
                variants[name] = v
    spent = [s.results.session.elapsed_s or 0.0 for s in sessions]
    return configs, variants, float(sum(spent)) if all(x > 0 for x in spent) else None
