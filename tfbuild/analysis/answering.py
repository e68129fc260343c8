"""The answer of a report: the last look, as the session would take it there (a sequential one
that stopped on its answer: the very look it stopped at), what it decides, its words (with
what a quantized model form costs in accuracy, and, when asked, the budget that would settle
an inconclusive answer), the config to use and how to get it, and the seed experiments inside
that config."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tfbuild.analysis.answer import Answer, Decision, answer, confidence, decide
from tfbuild.analysis.basis import Basis
from tfbuild.analysis.choice import Choice, choice_for
from tfbuild.analysis.estimates import OVERALL, Estimate, contrasts
from tfbuild.analysis.forms import FormFigures, with_accuracy_cost
from tfbuild.analysis.gaps import Problems
from tfbuild.analysis.judging import Judged
from tfbuild.analysis.looks import take_look
from tfbuild.analysis.power import MOST_ROUNDS, fixed_decided
from tfbuild.analysis.ranking import Ranked


@dataclass(frozen=True, kw_only=True)
class Answered:
    """What the last look decides, the answer in words, the config to use, the seed
    experiments inside it, and the replay's differences with where the session stopped."""

    decision: Decision
    answer: Answer
    choice: Choice | None
    contrasts: list[Estimate]
    replay: list[str]


def answered_of(
    basis: Basis,
    judged: Judged,
    ranked: Ranked,
    problems: Problems,
    forms: Sequence[FormFigures],
    power: bool,
) -> Answered:
    """The answer: the last look's, as the session would take it there; a config that did not
    measure everything in every round is never the one to use. Its words (with what it costs
    in accuracy, for a quantized model form; with `power`, the budget that would settle it),
    the config to use and how (None when the baseline has no results), the seed experiments
    inside it, and the replay's differences with where the session stopped."""
    setup, measured, flags = basis.setup, basis.measured, problems.flags
    margin = judged.method.margins[OVERALL]
    stopped_on = _stopped_on(basis, ranked)
    running = _running_at_end(basis)
    final = take_look(setup, running, setup.timeline.last)
    missed = {c: f.text() for c, f in flags.items() if not f.clean}
    contenders = [c for c in final.leading if c != setup.baseline]
    floors = final.floors if ranked.has_baseline else {}
    sure = confidence(setup.split)
    decision = decide(floors, margin, setup.baseline, final.estimates, contenders, final.aa,
                      basis.rounds, missed, held=final.gated)  # fmt: skip
    candidates = [c for c in decision.floors if c != setup.baseline]

    def settle_plan(margin: float) -> tuple[int, int] | None:
        n = fixed_decided(setup, candidates, margin)
        return None if n is None else (n, n * len(setup.everyone))

    processes, benchmark_s = measured.runs, measured.benchmark_s
    seconds = benchmark_s / processes if benchmark_s and processes else None
    chosen = {b: e for (c, b), e in judged.per_benchmark.items() if c == decision.config}
    said = answer(decision, ranked.ranking, setup.baseline, settle_plan if power else None,
                  seconds, MOST_ROUNDS, sure, chosen)  # fmt: skip
    said = with_accuracy_cost(said, decision.config, measured.configs, forms)
    choice = None
    if ranked.has_baseline:
        left_out = {  # leading, but it did not measure everything
            c: flags[c].text()
            for c in (ranked.tiers[0] if ranked.tiers else [])
            if c in flags and not flags[c].clean and c != decision.config
        }
        choice = choice_for(decision, ranked.by_config, setup.baseline, measured.configs,
                            measured.variants, left_out)  # fmt: skip
    inside = contrasts(setup, choice.config if choice else setup.baseline, margin)
    replay = list(ranked.replay)
    if stopped_on is not None and stopped_on != decision.config:
        replay.append(
            f"the session stopped on the answer {stopped_on}; its report answers "
            f"{decision.config or 'nothing'} ({decision.why or decision.kind})"
        )
    return Answered(decision=decision, answer=said, choice=choice, contrasts=inside,
                    replay=replay)  # fmt: skip


def _stopped_on(basis: Basis, ranked: Ranked) -> str | None:
    """The answer a sequential session stopped on, as its last look recorded it."""
    stopped, looks = basis.first.session.stop, ranked.looks
    return looks[-1].answer if looks and stopped and stopped.reason == "resolved" else None


def _running_at_end(basis: Basis) -> list[str]:
    """The configs of the last look: those that ran the last round of a sequential session
    (the baseline's copy aside), every config of a fixed design."""
    setup, first = basis.setup, basis.first
    running = [*setup.compared, setup.baseline]
    if basis.design.sequential and first.order:
        return [c for c in first.order[-1] if c in running]
    return running
