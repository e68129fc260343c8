"""The basis every step of a report starts from: what the sessions measured (pooled fixed
sessions counted together), the design they are judged by, the setup on their per-round speeds
(on the weights asked, and on those the session was decided on, which its looks are replayed
on), what a sequential session rested; and sessions with different baselines refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support.replay import SEQUENTIAL, replay_session
from support.synthetic import BASELINE, BENCHMARKS, session

from tfbuild.analysis.basis import basis_of
from tfbuild.analysis.rounds import raw_samples
from tfbuild.analysis.sessions import Session, rest_estimates, rested_at
from tfbuild.errors import ResultsError
from tfbuild.results.model import AA_SUFFIX, FIXED

AA = BASELINE + AA_SUFFIX
FAST, SLOW = "fast:default", "slow:default"


def test_pooled_fixed_sessions_are_one_fixed_design_over_all_their_rounds() -> None:
    one = Session(Path("one.json"), session({FAST: 1.2, SLOW: 0.9}, rounds=6, seed=1))
    two = Session(Path("two.json"), session({FAST: 1.2}, rounds=4, seed=2, session_id="s2"))
    basis = basis_of([one, two], None)
    measured = basis.measured
    assert measured.sessions == ["one.json", "two.json"]
    assert (measured.baseline, measured.benchmarks) == (BASELINE, list(BENCHMARKS))
    assert measured.rounds == basis.rounds == 10  # four rounds of the second session's own
    assert measured.runs == len(one.results.runs) + len(two.results.runs) == 6 * 4 + 4 * 3
    assert set(measured.configs) == {BASELINE, FAST, SLOW, AA}
    assert basis.design == FIXED and basis.first is one.results
    assert basis.setup.compared == (FAST, SLOW) and basis.setup.aa == AA
    assert basis.setup.timeline.rounds == (10,) and basis.notes == [] and basis.rested == {}
    assert basis.samples == raw_samples([one, two])
    assert basis.table[(FAST, "gru-keras")].keys() == {
        *((one.id, r) for r in range(6)),
        *(("s2", r) for r in range(4)),
    }


def test_weights_asked_weigh_the_setup_and_the_recorded_one_keeps_the_sessions() -> None:
    """Without weights asked the setup is the session's own; with them the setup's speeds are
    weighed so, and the recorded setup (what its looks are replayed on) weighs as the session
    did: the same comparisons on other speeds."""
    results = session({FAST: {"gru-keras": 2.0, "matmul-pinned": 1.0, "input-fed": 1.0}}, seed=3)
    plain = basis_of([Session(Path("s.json"), results)], None)
    assert plain.recorded is plain.setup and plain.weights == results.suite.weights == {}
    weighed = basis_of([Session(Path("s.json"), results)], {"gru-keras": 0.0})
    assert weighed.setup.logs.weights == {"gru-keras": 0.0} == weighed.weights
    assert weighed.recorded.logs.weights == {}
    assert weighed.recorded.compared == weighed.setup.compared == (FAST,)
    key = (results.id, 0)
    fast_weighed = weighed.setup.logs.speed(FAST, BENCHMARKS, None)[key]
    fast_recorded = weighed.recorded.logs.speed(FAST, BENCHMARKS, None)[key]
    assert fast_weighed != fast_recorded == plain.setup.logs.speed(FAST, BENCHMARKS, None)[key]


def test_sessions_with_different_baselines_are_refused() -> None:
    results = session({FAST: 1.2}, seed=4)
    other = replace(results, baseline=replace(results.baseline, config=FAST))
    with pytest.raises(ResultsError, match="use different baselines"):
        basis_of([Session(Path("a.json"), results), Session(Path("b.json"), other)], None)


def test_a_sequential_session_is_judged_at_its_looks_and_counts_its_rounds_run() -> None:
    """Rules 4: a session that rested a config: its design is its own, its rounds those it ran,
    the config judged at the look it rested at, with the interval that look recorded."""
    results = replay_session(4, replace(SEQUENTIAL, rules=4), 80_001)
    basis = basis_of([Session(Path("s.json"), results)], None)
    assert basis.design == results.design and basis.rounds == len(results.order or ())
    assert basis.rested == rest_estimates(results.looks) != {}
    assert rested_at(results.looks).items() <= basis.setup.at.items()
    assert basis.setup.timeline.rounds[-1] == basis.rounds
    for config in basis.rested:
        assert basis.setup.look_of(config) < basis.rounds
