"""The forecasts behind a running session's ETA (tfbuild.analysis.power); what they promise of
whole sessions is shown on replayed ones (test_looks.py's committed evidence)."""

from __future__ import annotations

from tfbuild.analysis import power

LOOKS = [(1, 0.05, 0.05), (3, 0.04, 0.05)]
"""Two looks ahead: rounds from now, the selection family's one-sided level, the two-sided
level against the baseline."""


def test_with_every_candidate_put_out_the_answer_is_decided_at_every_look() -> None:
    """Rules 5: when the look leaves no config but the baseline that can be the answer (the
    others put out or behind the leading tier) and only the A/A control is still waiting, there
    is no leader to simulate, and keeping the baseline is the answer at every look, so the ETA
    is when the control fits. (A session in that state once
    stopped with `StatisticsError: fmean requires at least one data point` after its first
    look.)"""
    decided = list(power.decided([], LOOKS, 0.10))
    assert len(decided) == len(LOOKS)
    assert all(d.shape == (power.PLAN_DRAWS,) and d.all() for d in decided)


def test_before_rules_5_no_leader_decides_nothing() -> None:
    """Before rules 5 the leading tier must be resolved: with no leader's rounds to resolve,
    no look is decided (the ETA is unknown), as it always was."""
    decided = list(power.decided([], LOOKS, 0.10, standard=False))
    assert len(decided) == len(LOOKS) and not any(d.any() for d in decided)
