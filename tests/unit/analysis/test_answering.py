"""The answer of a report, step by step: a config shown faster and the fastest is the one to
use, with how to get it and the seed experiments inside it; with none faster the baseline is
kept, and its experiments are shown; a config that missed a benchmark in some rounds is never
the one to use; only `power` plans the budget that would settle an inconclusive answer; a
session that stopped on another answer than its report gives says so."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support.cli import RESULTS
from support.synthetic import BASELINE, session

from tfbuild.analysis.answering import Answered, answered_of
from tfbuild.analysis.basis import basis_of
from tfbuild.analysis.forms import form_figures
from tfbuild.analysis.gaps import problems_of
from tfbuild.analysis.judging import judged_of
from tfbuild.analysis.ranking import ranked_of
from tfbuild.analysis.sessions import Session
from tfbuild.config.suite import CONTRASTS
from tfbuild.results.codec import load
from tfbuild.results.model import Results

FAST, SLOW = "fast:default", "slow:default"


def answered(results: Results, power: bool = False) -> Answered:
    sessions = [Session(Path("s.json"), results)]
    basis = basis_of(sessions, None)
    judged = judged_of(basis, None)
    ranked = ranked_of(basis, judged, power)
    problems = problems_of(sessions, basis.setup, basis.measured.variants, [])
    return answered_of(basis, judged, ranked, problems, form_figures(sessions), power)


def test_the_fastest_config_shown_faster_is_the_one_to_use() -> None:
    found = answered(session({FAST: 1.3, SLOW: 0.7}, noise=0.01, rounds=12, seed=5))
    assert (found.decision.kind, found.decision.config) == ("use", FAST)
    assert found.answer.decided and found.answer.lines[0].startswith(f"Use {FAST}: ")
    assert found.choice is not None and found.choice.config == FAST
    assert found.replay == []


def test_with_none_faster_the_baseline_is_kept_and_its_experiments_shown() -> None:
    """The seed experiments are each a pair of the suite's benchmarks inside the config the
    answer names (the baseline here): one for each pair the session measured."""
    pairs = tuple(dict.fromkeys(b for c in CONTRASTS for b in (c.faster_if, c.than)))
    found = answered(session({SLOW: 0.7}, noise=0.01, rounds=12, seed=5, benchmarks=pairs))
    assert (found.decision.kind, found.decision.config) == ("keep", BASELINE)
    assert found.choice is not None and found.choice.config == BASELINE
    assert [(e.config, e.benchmark) for e in found.contrasts] == [
        (BASELINE, c.name) for c in CONTRASTS
    ]
    assert answered(session({SLOW: 0.7}, rounds=12, seed=5)).contrasts == []  # no pair


def test_a_config_that_missed_a_benchmark_is_never_the_one_to_use() -> None:
    found = answered(session({FAST: 1.3}, noise=0.01, rounds=12, seed=5,
                             failing={FAST: ["input-fed"]}))  # fmt: skip
    assert found.decision.config != FAST and found.decision.kind != "use"


def test_only_power_plans_the_budget_that_would_settle_it() -> None:
    """Two configs 2 % apart in 4 % noise, 4 rounds: neither answer is shown; with `power` the
    answer says how many rounds would decide it."""
    results = session({FAST: 1.02}, noise=0.04, rounds=4, seed=7)
    plain, planned = answered(results), answered(results, power=True)
    assert plain.decision.kind == planned.decision.kind == "inconclusive"
    assert plain.answer.settle is None
    assert planned.answer.settle is not None or "more than" in planned.answer.lines[-1]
    assert planned.answer.lines[:-1] == plain.answer.lines


def test_a_session_that_stopped_on_another_answer_says_so() -> None:
    """The README session stopped resolved; had its last look named the baseline, its report
    (which answers use) says where the two part."""
    results = load(RESULTS / "default-run-epyc.json.gz")
    looks = results.looks or ()
    told = replace(results, looks=(*looks[:-1], replace(looks[-1], answer="stock:default")))
    found = answered(told)
    assert found.decision.kind == "use" and found.decision.config != "stock:default"
    assert found.replay[-1] == (
        f"the session stopped on the answer stock:default; its report answers "
        f"{found.decision.config} (use)"
    )
    assert not any("stopped on the answer" in line for line in answered(results).replay)
