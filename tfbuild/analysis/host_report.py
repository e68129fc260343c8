"""From raw bench results to an answer: which config is fastest here, by how much, how sure.

Every claim the report makes is read off one family of simultaneous confidence intervals, so
that with probability at least 95 % every one of them is true at once:

- A round ran every config in contention once, each in its own process, in a shuffled order;
  a config's speed in a round is its (weighted) mean log throughput over the benchmarks, the
  baseline's the mean of its two processes (the baseline and its A/A copy).
- Each config is compared with the baseline on the per-round differences of speeds (rounds pair
  them, so drift of the machine cancels): a 10 % trimmed mean (Yuen) with a t interval.
- The intervals are simultaneous: alpha is split between families (results.rules: the verdicts
  against the baseline, the selection of the configs that could be the fastest, the
  per-benchmark table, the seed experiments); within each, the max-t level of comparisons that
  share a config (Dunnett 1955), variances moderated across the comparisons judged together
  (Smyth 2004, with guards: stats.moderated), alpha spent over the looks of a sequential
  session (Lan-DeMets; sequential.sequential_levels), and under rules 6 every interval widened
  by the resemblance of the processes one zygote forked, as the session's own data estimate it
  (analysis.zygotes). A sequential session is judged by the rules its looks were decided by.
- Verdicts against the baseline: faster or slower when the whole interval lies beyond the
  indifference margin, equivalent when inside it, undecided otherwise.
- Which configs could be the fastest: multiple comparisons with the best (Hsu 1984); a config
  is out when another one is ahead of it beyond the one-sided bound of their paired difference,
  the family the k - 1 comparisons with the truly fastest. Under rules 6 nothing is put out
  while the A/A control cannot yet tell the baseline from itself.
- The answer (analysis.answer), at the last look, a comparison with the standard: "Use X" when
  X is shown faster than the baseline and within the margin of the fastest (its floor), "Keep
  the baseline" when no config that could be the fastest can be faster by more than the
  margin, else "Inconclusive".

Fixed-design sessions from the same machine are pooled (rounds stay paired within their
session); a sequential session is analysed on its own; different machines are reported side by
side.

A report is made in steps, each in its own module and each handing the next a frozen record:
the basis (analysis.basis: the sessions, what they measured, the setup on their per-round
speeds), the judged estimates (analysis.judging), the ranking (analysis.ranking), the problems
(analysis.gaps), the answer (analysis.answering); HostReport is made of their records.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence

from tfbuild.analysis.answering import answered_of
from tfbuild.analysis.basis import basis_of
from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.forms import form_figures
from tfbuild.analysis.gaps import problems_of
from tfbuild.analysis.judging import judged_of
from tfbuild.analysis.ranking import ranked_of
from tfbuild.analysis.reported import Course, Figures, HostReport
from tfbuild.analysis.sessions import Session


def analyse_host(
    sessions: Sequence[Session],
    margin: float | None = None,
    *,
    power: bool = False,
    weights: Mapping[str, float] | None = None,
) -> HostReport:
    """The report for sessions of one machine (one sequential session, or pooled fixed ones).
    `margin` overrides the design's indifference margin; `weights` weigh the benchmarks in the
    overall speed (benchmark -> weight, 1 for those not named; None: as the session recorded
    them, --weight of bench and run). `power` runs the planners
    (tfbuild.analysis.power, hundreds of simulated sessions each): the fixed design a
    sequential session is worth (Course.fixed_equivalent) and the budget that would settle
    an inconclusive answer (Answer.settle). A report to be read asks for them; without them
    nothing is simulated, and the report says nothing of either."""
    basis = basis_of(sessions, weights)
    judged = judged_of(basis, margin)
    ranked = ranked_of(basis, judged, power)
    warnings = [*judged.warnings, *ranked.warnings]
    problems = problems_of(sessions, basis.setup, basis.measured.variants, warnings)
    forms = form_figures(sessions)
    answered = answered_of(basis, judged, ranked, problems, forms, power)
    table = basis.table
    return HostReport(
        measured=basis.measured,
        method=judged.method,
        figures=Figures(
            estimates={
                **{(c, OVERALL): e for c, e in judged.overall.items()},
                **judged.per_benchmark,
            },
            ranking=ranked.ranking,
            tiers=ranked.tiers,
            out=ranked.claims,
            resolution=ranked.resolution,
            aa=judged.aa,
            contrasts=answered.contrasts,
            medians={k: statistics.median(list(v.values())) for k, v in table.items() if v},
            samples=basis.samples,
        ),
        course=Course(
            looks=ranked.looks,
            stop=basis.first.session.stop if len(sessions) == 1 else None,
            replay=answered.replay,
            fixed_equivalent=ranked.fixed_equivalent,
        ),
        problems=problems,
        decision=answered.decision,
        answer=answered.answer,
        choice=answered.choice,
        forms=forms,
        zygotes=judged.zygotes,
    )


def analyse(
    sessions: Sequence[Session],
    margin: float | None = None,
    *,
    power: bool = False,
    weights: Mapping[str, float] | None = None,
) -> list[HostReport]:
    """One report per machine; a sequential session is reported on its own. `margin`,
    `power` and `weights` as analyse_host's."""
    groups: dict[tuple[str, str], list[Session]] = defaultdict(list)
    for s in sessions:
        groups[(s.host_key, s.id if s.design.sequential else "")].append(s)
    return [analyse_host(group, margin, power=power, weights=weights) for group in groups.values()]
