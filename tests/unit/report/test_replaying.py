"""`tfbuild replay` as text and JSON, from a replay whose sessions and looks are set here: the
answer first (where today's rules would have stopped, with how many processes, and how many
fewer or more than the session ran), how well the leading tier was resolved and how long the
processes took, both answers, the processes the recording lacked; then each side's looks, one
row each (a look held by its A/A control says so, a resting column only where a look rested)."""

from __future__ import annotations

from dataclasses import replace

from support.synthetic import BASELINE, session

from tfbuild.analysis.answer import Answer
from tfbuild.analysis.replay import Replayed
from tfbuild.report.replaying import replay_text, summary
from tfbuild.results.model import AA_SUFFIX, Design, Elimination, Look, Results, Stop
from tfbuild.results.rules import CURRENT_RULES

FAST = "fast:default"
ALL = (BASELINE, FAST, BASELINE + AA_SUFFIX)


def look(round_: int, resolution: float, **more: object) -> Look:
    fields: dict[str, object] = {"active": ALL, "eliminated": (), "leading": (BASELINE, FAST)}
    fields.update(more)
    return Look(round=round_, elapsed_s=17.0 * round_, resolution=resolution, margin=0.05,
                estimates={}, **fields)  # type: ignore[arg-type]  # fmt: skip


def sequential(
    rounds: int, design: Design, stop: Stop | None, elapsed: float, looks: tuple[Look, ...]
) -> Results:
    """A session of the baseline, fast and the A/A copy (3 processes a round)."""
    results = session({FAST: 1.2}, rounds=rounds, session_id="night-7")
    info = replace(results.session, design=design, stop=stop, elapsed_s=elapsed)
    return replace(results, session=info, looks=looks)


RECORDED = sequential(
    10,
    Design(kind="sequential", first=2, horizon=6, resolve=0.05, rules=1),  # looks 2, 3, 5, 6
    Stop(reason="budget", round=10, message="out of time"),
    1800.0,
    (look(2, 0.2), look(6, 0.045, rested=(FAST,))),
)
PUT_OUT = Elimination(config=BASELINE, slower_than=FAST, ratio=0.83, upper=0.9)
REPLAYED = sequential(
    4,
    Design(kind="sequential", first=3, horizon=5, resolve=0.05),  # looks 3, 4, 5
    Stop(reason="resolved", round=5, message="decided"),
    100.84,
    (
        look(3, 0.123, held=True),
        look(5, 0.03, eliminated=(PUT_OUT,), leading=(FAST,), answer=FAST),
    ),
)


def answer(kind: str, first: str) -> Answer:
    return Answer(True, kind, (first, "more"), "", None, margin=0.05, confidence=0.975)


def replayed() -> Replayed:
    answers = (answer("keep", "Keep base:default."), answer("use", "Use fast:default: 20% faster."))
    return Replayed(RECORDED, REPLAYED, missing=2, answers=answers)


def table(widths: tuple[int, ...], *rows: tuple[str, ...]) -> list[str]:
    """Rows as the looks table lays them out: two spaces in, every column right-aligned but the
    last."""
    return [
        "  " + "  ".join(c.ljust(w) if i == len(row) - 1 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows
    ]  # fmt: skip


def test_the_answer_comes_first_with_the_processes_saved() -> None:
    """12 processes replayed (4 rounds of 3) against the 30 recorded: 60 % fewer; 100.84 s of
    the processes' time is 1.7 min, the recorded session's 1800 s 30.0 min."""
    lines = replay_text("runs/night-7.json", replayed()).splitlines()
    assert lines[:5] == [
        "runs/night-7.json: under today's rules it would have stopped after round 5 (resolved) "
        "with 12 benchmark processes; the session stopped after round 10 (budget) with 30 "
        "(60% fewer)",
        "Leading tier: ±3.0% at the stop (recorded: ±4.5%); 1.7 min of the recorded processes' "
        "time (recorded: 30.0 min)",
        "Its answer: Use fast:default: 20% faster.",
        "The recorded session's answer: Keep base:default.",
        "2 of these processes were not recorded (a config the session had put out or rested by "
        "then, or a round after it stopped): each is one of the config's recorded processes, "
        "drawn at random",
    ]


def test_each_sides_looks_follow_as_tables() -> None:
    """Today's: a look held by its A/A control, then one that put the baseline out and
    answered; no look rested, so no resting column. The recorded: a look that rested fast."""
    lines = replay_text("runs/night-7.json", replayed()).splitlines()
    today = lines.index(f"Today's rules (version {CURRENT_RULES}), looks after rounds 3, 4, 5:")
    assert lines[today - 1] == ""
    assert lines[today + 1 : today + 4] == table(
        (11, 7, 7, 7, 10, 12),
        ("after round", "running", "put out", "leading", "resolution", "answer"),
        ("3", "3", "held", "2", "±12.3%", "-"),
        ("5", "3", "1", "1", "±3.0%", "fast:default"),
    )
    assert lines[today + 4] == ""
    assert lines[today + 5] == "Recorded (rules version 1), looks after rounds 2, 3, 5, 6:"
    assert lines[today + 6 :] == table(
        (11, 7, 7, 7, 7, 10, 6),
        ("after round", "running", "put out", "resting", "leading", "resolution", "answer"),
        ("2", "3", "0", "0", "2", "±20.0%", "-"),
        ("6", "3", "0", "1", "2", "±4.5%", "-"),
    )


def test_a_replay_needing_more_processes_than_a_session_that_never_stopped() -> None:
    """36 processes replayed (201.6 s, 3.4 min) against 30 recorded: 20 % more; the session
    recorded no look and no stop; no answers, nothing missing: none of those lines."""
    recorded = replace(RECORDED, looks=(), session=replace(RECORDED.session, stop=None))
    rounds = Stop(reason="max_rounds", round=12, message="12 rounds")
    longer = sequential(12, REPLAYED.design, rounds, 201.6, REPLAYED.looks or ())
    lines = replay_text("s.json", Replayed(recorded, longer, missing=0)).splitlines()
    assert lines[:3] == [
        "s.json: under today's rules it would have stopped after round 12 (max_rounds) with 36 "
        "benchmark processes; the session had not stopped with 30 (20% more)",
        "Leading tier: ±3.0% at the stop (recorded: no look); 3.4 min of the recorded "
        "processes' time (recorded: 30.0 min)",
        "",
    ]
    assert lines[-2:] == [  # no look: the table's head alone
        "Recorded (rules version 1), looks after rounds 2, 3, 5, 6:",
        "  after round  running  put out  leading  resolution  answer",
    ]
    assert not any(line.startswith(("Its answer", "The recorded")) for line in lines)
    assert not any("were not recorded" in line for line in lines)


def test_the_summary_puts_both_sides_numbers_side_by_side() -> None:
    found = summary(replayed())
    assert found["session"] == "night-7"
    assert found["answers"] == {
        "recorded": {"kind": "keep", "margin": 0.05, "first": "Keep base:default."},
        "replayed": {"kind": "use", "margin": 0.05, "first": "Use fast:default: 20% faster."},
    }
    recorded, today = found["recorded"], found["replayed"]
    assert {k: recorded[k] for k in ("rules", "schedule", "stop", "processes", "benchmark_s")} == {
        "rules": 1,
        "schedule": [2, 3, 5, 6],
        "stop": {"reason": "budget", "round": 10},
        "processes": 30,
        "benchmark_s": 1800.0,
    }
    assert recorded["resolution"] == 0.045 and "not_recorded" not in recorded
    assert recorded["looks"][1]["rested"] == [FAST]
    assert (today["processes"], today["benchmark_s"], today["not_recorded"]) == (12, 100.8, 2)
    assert today["schedule"] == [3, 4, 5] and today["resolution"] == 0.03
    assert today["looks"] == [
        {"round": 3, "running": 3, "put_out": [], "rested": [], "leading": [BASELINE, FAST],
         "resolution": 0.123, "answer": None, "held": True},
        {"round": 5, "running": 3, "put_out": [BASELINE], "rested": [], "leading": [FAST],
         "resolution": 0.03, "answer": FAST, "held": False},
    ]  # fmt: skip


def test_a_summary_without_answers_or_looks_has_empty_ones() -> None:
    recorded = replace(RECORDED, looks=(), session=replace(RECORDED.session, stop=None))
    found = summary(Replayed(recorded, REPLAYED, missing=0))
    assert found["answers"] == {}
    assert (found["recorded"]["stop"], found["recorded"]["resolution"]) == (None, None)
    assert found["recorded"]["looks"] == []
