"""Progress for long work: a rich display with an ETA on a terminal, plain lines otherwise,
nothing with -q. Stages report through this interface and never print on their own."""

from __future__ import annotations

import math
import sys
import time
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class Reporter:
    """Plain-line reporter: used when output is not a terminal."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.total = 0
        self.done = 0
        self.started = time.monotonic()
        self.said_at = -math.inf

    def __enter__(self) -> Reporter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def note(self, message: str) -> None:
        """A line that stays: a stage finished, a smoke result, a failure."""
        self.console.print(message)

    def start(self, total: int, description: str) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()
        self.console.print(f"{description} ({total})")

    def running(self, description: str) -> None:
        """What is running now (shown live on a terminal; a no-op here)."""

    STATUS_EVERY_S = 60.0

    def status(self, description: str) -> None:
        """How far a long step is (a build's actions and ETA): live on a terminal, here a line
        at first and then at most once a minute."""
        now = time.monotonic()
        if now - self.said_at >= self.STATUS_EVERY_S:
            self.said_at = now
            self.console.print(description, markup=False)

    def retotal(self, total: int) -> None:
        """The amount of work changed (a sequential session re-estimates it after each look)."""
        self.total = max(total, self.done)

    def advance(self, description: str, steps: int = 1) -> None:
        self.done += steps
        self.total = max(self.total, self.done)
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        self.console.print(
            f"[{self.done}/{self.total}] {description}  "
            f"(elapsed {elapsed:.0f} s, about {eta:.0f} s left)"
        )


class QuietReporter(Reporter):
    def note(self, message: str) -> None:
        return None

    def status(self, description: str) -> None:
        return None

    def start(self, total: int, description: str) -> None:
        return None

    def advance(self, description: str, steps: int = 1) -> None:
        return None


class RichReporter(Reporter):
    """A live progress bar with the current step, counts, elapsed time and an ETA."""

    def __init__(self, console: Console | None = None) -> None:
        super().__init__(console)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
            transient=False,
        )
        self.task: TaskID | None = None

    def __enter__(self) -> Reporter:
        self.progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.progress.stop()

    def note(self, message: str) -> None:
        self.progress.console.print(message)

    def start(self, total: int, description: str) -> None:
        self.task = self.progress.add_task(description, total=total)

    def running(self, description: str) -> None:
        if self.task is not None:
            self.progress.update(self.task, description=description)

    def status(self, description: str) -> None:
        self.running(description)

    def retotal(self, total: int) -> None:
        super().retotal(total)
        if self.task is not None:
            self.progress.update(self.task, total=self.total)

    def advance(self, description: str, steps: int = 1) -> None:
        if self.task is not None:
            self.progress.update(self.task, advance=steps, description=description)


def make_reporter(quiet: bool) -> Reporter:
    if quiet:
        return QuietReporter()
    if sys.stderr.isatty():
        return RichReporter(Console(stderr=True, highlight=False))
    return Reporter(Console(stderr=True, highlight=False, soft_wrap=True))
