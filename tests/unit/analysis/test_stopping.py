"""When a sequential session stops at a look, and what it says: under the rules a session was
decided by (6: the answer against the standard decides; 5: a config known within the margin of
the fastest; 4 and before: the leading tier resolved to its target), held back while the A/A
control is not fit, with the configs put out or resting said first and not counted as running."""

from __future__ import annotations

from dataclasses import replace

from support.synthetic import session

from tfbuild.analysis.stopping import design_text, stopping
from tfbuild.results.model import Design, Elimination, Look, LookEstimate, Results

BASE, AA = "base:default", "base:default~aa"


def sequential(version: int, budget_s: float | None = None) -> Results:
    """A session of the baseline, its copy and three configs, decided by rules `version`."""
    results = session({"fast:x": 1.3, "mid:x": 1.1, "slow:x": 0.8}, rounds=5)
    design = Design(kind="sequential", first=3, horizon=30, resolve=0.05, budget_s=budget_s,
                    rules=version)  # fmt: skip
    return replace(results, session=replace(results.session, design=design))


ACTIVE = (BASE, AA, "fast:x", "mid:x", "slow:x")


def look(**given: object) -> Look:
    fields: dict[str, object] = {
        "round": 5, "elapsed_s": 60.0, "active": ACTIVE, "eliminated": (),
        "leading": (BASE, "fast:x"), "resolution": 0.2, "margin": 0.05, "estimates": {},
    }  # fmt: skip
    return Look(**{**fields, **given})  # type: ignore[arg-type]


def test_rules_6_stop_when_the_answer_is_decided_and_the_control_fits() -> None:
    kept = stopping(sequential(6), look(answer=BASE, leading=(BASE,)), ACTIVE)
    assert kept.stop is not None and kept.stop.reason == "resolved" and kept.stop.round == 5
    assert kept.stop.message == (
        "the answer is decided after 5 rounds: no config can be faster than the baseline by "
        "more than the 5.0% margin"
    )
    assert kept.notes == (
        "after round 5: 1 could be the fastest; no config can be faster than the baseline by "
        "more than the 5.0% margin; 5 configs run",
    )
    used = stopping(sequential(6), look(answer="fast:x"), ACTIVE)
    assert used.stop is not None
    assert used.stop.message.endswith(
        "fast:x is faster than the baseline and within the 5.0% margin of the fastest"
    )
    assert used.notes[0].startswith("after round 5: 2 could be the fastest; fast:x is faster")


def test_rules_6_run_on_while_open_or_while_the_control_shows_the_baseline_unlike_itself() -> None:
    open_ = stopping(sequential(6), look(rounds_left=4), ACTIVE)
    assert open_.stop is None
    assert open_.notes == (
        "after round 5: 2 could be the fastest; neither answer is shown at the 5.0% margin yet; "
        "5 configs run; about 4 more rounds",
    )
    control = {AA: LookEstimate(ratio=1.1, low=1.05, high=1.15, rounds=5)}
    unlike = stopping(sequential(6), look(answer=BASE, aa_fit=False, estimates=control), ACTIVE)
    assert unlike.stop is None
    assert unlike.notes[-1] == (
        "the A/A control (1.100x [1.050, 1.150]) shows the baseline unlike its own copy: running on"
    )
    held = stopping(sequential(6), look(answer=BASE, aa_fit=False, held=True), ACTIVE)
    assert held.stop is None and held.notes[0].startswith(
        "after round 5: 2 could be the fastest (the A/A control cannot tell the baseline from "
        "itself yet: only configs far behind are put out); "
    )
    assert held.notes[-1] == "the A/A control cannot tell the baseline from itself yet: running on"


def test_configs_put_out_or_resting_are_said_first_and_run_no_more() -> None:
    out = Elimination(config="slow:x", slower_than="fast:x", ratio=0.8, upper=0.9)
    looked = look(eliminated=(out,), rested=("mid:x",), answer=None)
    said = stopping(sequential(6), looked, ACTIVE).notes
    assert said[0] == (
        "out after round 5: slow:x trails fast:x (0.800x paired by round, beyond the one-sided "
        "bound); the configs left still hold the fastest"
    )
    assert said[1] == (
        "resting after round 5: mid:x is known to the target ±5.0%: it runs no more rounds and "
        "stays in the leading tier, judged at this look"
    )
    assert said[2].endswith("; 3 configs run")  # five ran the round; two stop here


def test_rules_5_name_the_config_known_within_the_margin_furthest_ahead() -> None:
    ahead = {
        "fast:x": LookEstimate(ratio=1.3, low=1.2, high=1.4, rounds=5),
        "mid:x": LookEstimate(ratio=1.1, low=1.0, high=1.2, rounds=5),
    }
    both = look(floors={"fast:x": 0.99, "mid:x": 0.97}, estimates=ahead)
    said = stopping(sequential(5), both, ACTIVE)
    assert said.stop is not None
    assert said.stop.message.endswith("fast:x is within the 5.0% margin of the fastest")
    unsure = stopping(sequential(5), look(floors={"fast:x": 0.9, "mid:x": 0.92}), ACTIVE)
    assert unsure.stop is None
    assert unsure.notes[0] == (
        "after round 5: 2 could be the fastest; none is known within the 5.0% margin of the "
        "fastest yet (closest: mid:x, at least 0.920 of it); 5 configs run"
    )
    alone = stopping(sequential(5), look(floors={"mid:x": None}), ACTIVE)  # it leads alone
    assert alone.stop is not None
    assert alone.stop.message.endswith("mid:x is within the 5.0% margin of the fastest")


def test_rules_4_stop_when_the_leading_tier_is_resolved_to_its_target() -> None:
    resolved = stopping(sequential(4), look(resolution=0.03), ACTIVE)
    assert resolved.stop is not None
    assert resolved.stop.message == (
        "the leading tier is resolved to ±3.0% (target ±5.0%) after 5 rounds"
    )
    assert resolved.notes == (
        "after round 5: 1 config besides the baseline could be the fastest, known to ±3.0% "
        "(target ±5.0%); 5 configs run",
    )
    wide = stopping(sequential(4), look(resolution=0.2, rounds_left=7), ACTIVE)
    assert wide.stop is None and wide.notes[-1].endswith("; about 7 more rounds")
    alone = stopping(sequential(4), look(leading=(BASE,)), ACTIVE)
    assert alone.stop is not None and alone.stop.message == (
        "every other config is shown slower than the baseline base:default after 5 rounds"
    )
    unfit = stopping(sequential(4), look(resolution=0.03, aa_fit=False), ACTIVE)
    assert unfit.stop is None
    assert unfit.notes[-1] == (
        "the A/A control is still too wide for an answer at the 5.0% margin: running on until "
        "it is not"
    )


def test_how_long_a_design_runs_in_words() -> None:
    assert design_text(Design(kind="fixed", rounds=10)) == "fixed rounds"
    assert design_text(sequential(6, budget_s=1800).design) == (
        "at least 3 rounds, until the answer is decided at the 5.0% margin, within 30 min"
    )
    assert design_text(sequential(4).design) == "at least 3 rounds, until resolved to ±5%"
