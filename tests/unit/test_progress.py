"""Progress as a user reads it: without a terminal a line per step with the counts, the
elapsed time and an estimate of what is left; a long step's status at most once a minute; a
live bar on a terminal; nothing at all with -q. The reporters write to a console of their
own here, read back as text."""

from __future__ import annotations

import io
import os
import sys
import time
from collections.abc import Iterator

import pytest
from rich.console import Console

from tfbuild.progress import QuietReporter, Reporter, RichReporter, make_reporter


def console() -> tuple[Console, io.StringIO]:
    """A console that is no terminal, whatever the environment says (FORCE_COLOR...)."""
    out = io.StringIO()
    screen = Console(
        file=out, width=200, soft_wrap=True, highlight=False, color_system=None,
        force_terminal=False, force_interactive=False,
    )  # fmt: skip
    return screen, out


def test_each_step_says_its_counts_elapsed_time_and_time_left() -> None:
    """Three of four steps done in 90 seconds: about 30 seconds left."""
    screen, out = console()
    reporter = Reporter(screen)
    reporter.start(4, "benchmark runs")
    reporter.advance("round 1: stock:default")
    reporter.advance("round 1: native:default")
    reporter.started = time.monotonic() - 90  # the third step ends 90 s after the start
    reporter.advance("round 2: stock:default")
    lines = out.getvalue().splitlines()
    assert lines[0] == "benchmark runs (4)"
    assert lines[1].startswith("[1/4] round 1: stock:default  (elapsed ")
    assert lines[2].startswith("[2/4] round 1: native:default  (elapsed ")
    assert lines[3] == "[3/4] round 2: stock:default  (elapsed 90 s, about 30 s left)"


def test_steps_beyond_the_total_raise_it_and_a_new_total_never_falls_below_the_done() -> None:
    screen, out = console()
    reporter = Reporter(screen)
    reporter.start(3, "builds")
    reporter.advance("two at once", steps=2)
    reporter.advance("two more", steps=2)
    reporter.retotal(10)
    reporter.advance("re-estimated")
    reporter.retotal(2)
    reporter.advance("fewer left than done")
    lines = out.getvalue().splitlines()
    assert [line.split("]")[0] + "]" for line in lines[1:]] == ["[2/3]", "[4/4]", "[5/10]", "[6/6]"]
    assert lines[2].endswith("about 0 s left)")


def test_a_long_steps_status_is_said_at_first_and_then_once_a_minute() -> None:
    """Bazel's progress ([1,234 / 5,000] ...) is printed as it is, not read as markup."""
    screen, out = console()
    reporter = Reporter(screen)
    reporter.status("avx512: [1,234 / 5,000] 12 actions running")
    reporter.status("avx512: [1,300 / 5,000] 12 actions running")
    reporter.said_at -= Reporter.STATUS_EVERY_S  # a minute after the first
    reporter.status("avx512: [2,000 / 5,000] 9 actions running")
    assert out.getvalue().splitlines() == [
        "avx512: [1,234 / 5,000] 12 actions running",
        "avx512: [2,000 / 5,000] 9 actions running",
    ]


def test_notes_stay_and_their_markup_is_styling() -> None:
    screen, out = console()
    reporter = Reporter(screen)
    reporter.note("[red]fail[/] native: its build failed")
    reporter.running("smoke test stock")  # shown live on a terminal only
    assert out.getvalue() == "fail native: its build failed\n"


def test_quiet_says_nothing() -> None:
    screen, out = console()
    reporter = QuietReporter(screen)
    with reporter:
        reporter.start(2, "benchmark runs")
        reporter.note("runtime stock: local, 3 s")
        reporter.status("avx512: [1 / 5] building")
        reporter.running("round 1: stock:default")
        reporter.advance("round 1: stock:default")
    assert out.getvalue() == ""


def test_the_live_bar_ends_on_the_last_step_and_count() -> None:
    """Written to a console that is not a terminal, the bar is drawn once, at the end: the
    last step's description, done of the latest total; notes above it."""
    screen, out = console()
    with RichReporter(screen) as reporter:
        reporter.start(5, "benchmark runs")
        reporter.advance("round 1: stock:default")
        reporter.note("fail native: its build failed")
        reporter.advance("round 1: avx2-fma:default")
        reporter.retotal(8)
        reporter.running("round 2: stock:default")
    lines = out.getvalue().splitlines()
    assert lines[0] == "fail native: its build failed"
    assert "round 2: stock:default" in lines[-1] and " 2/8 " in lines[-1]


@pytest.fixture
def terminal() -> Iterator[io.TextIOWrapper]:
    """The writing end of a real pseudo-terminal."""
    leader, follower = os.openpty()
    with os.fdopen(follower, "w", encoding="utf-8") as tty:
        yield tty
    os.close(leader)


def test_the_reporter_follows_the_output_and_the_quiet_flag(
    monkeypatch: pytest.MonkeyPatch, terminal: io.TextIOWrapper
) -> None:
    assert type(make_reporter(quiet=True)) is QuietReporter
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # piped, or a log file
    assert type(make_reporter(quiet=False)) is Reporter
    monkeypatch.setattr(sys, "stderr", terminal)
    assert type(make_reporter(quiet=False)) is RichReporter
    assert type(make_reporter(quiet=True)) is QuietReporter
