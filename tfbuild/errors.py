"""The errors a user can cause, one class per kind of mistake, each with its own exit code.

The CLI prints ``str(error)`` and exits with ``error.exit_code``; a traceback is shown only with
``--debug``. Anything that is not a :class:`TfbuildError` is a bug in tfbuild (exit code 1).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_ERROR = re.compile(r"(?i)\b(error|fatal|unable to|could not|cannot|no such)\b")
_SUMMARY = re.compile(r"error executing command|^(FAILED|INFO|Target //|Use --verbose)")
_ID = re.compile(r"\b[0-9a-f]{12,64}\b")
_FIGURE = re.compile(r"\d+(\.\d+)?")


class TfbuildError(Exception):
    """Base class: a problem the user can fix, reported without a traceback."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One located problem in an input file."""

    file: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message}"


class MatrixError(TfbuildError):
    """matrix.yaml is not valid. Carries every problem found, each with file, line and column."""

    exit_code = 2

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("MatrixError needs at least one problem")
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


class HostProfileError(TfbuildError):
    """A saved host profile (host.json) or cpuinfo file cannot be used."""

    exit_code = 3


class SelectionError(TfbuildError):
    """A variant or tuning named on the command line is unknown, or a pattern selects nothing."""

    exit_code = 4


class EngineUnavailable(TfbuildError):
    """A Docker engine is needed and none is reachable."""

    exit_code = 5


class UsageError(TfbuildError):
    """Command-line options that contradict each other or name something unusable."""

    exit_code = 64


class InstallError(TfbuildError):
    """Fetching a wheel or installing it into a runtime failed (the pip log tail says why)."""

    exit_code = 8


class NotBuiltError(TfbuildError):
    """A source variant has no wheel in the store yet."""

    exit_code = 8


class ResultsError(TfbuildError):
    """A results file cannot be read, resumed or compared."""

    exit_code = 9


class NothingRan(TfbuildError):
    """A bench session finished without a single successful measurement."""

    exit_code = 11


class RegressionFound(TfbuildError):
    """The regression gate found configs slower than the threshold allows."""

    exit_code = 10


class BuildFailed(TfbuildError):
    """A Docker build or the bazel build inside it failed (the log tail and path say why)."""

    exit_code = 7

    def __init__(self, message: str, tail: Sequence[str] = (), log: Path | None = None) -> None:
        super().__init__(message)
        self.tail = tuple(tail)
        self.log = log

    def full(self) -> str:
        """The message, then the last lines of the build log."""
        if not self.tail:
            return str(self)
        return f"{self}\n--- last lines of {self.log} ---\n" + "\n".join(self.tail)

    def cause(self, variant: str) -> str:
        """What tells this failure apart from another variant's: its message and the first line
        of the log's tail that says what went wrong (not bazel's summary or the command line,
        which carry the variant's own flags), the variant's name, the engine's ids and the
        figures taken out."""
        said = [line for line in self.tail if _ERROR.search(line) and not _SUMMARY.search(line)]
        text = "\n".join([str(self), *said[:1]]).replace(variant, "<variant>")
        return _FIGURE.sub("#", _ID.sub("<id>", text))


class IncompatibleWheel(TfbuildError):
    """A wheel needs instructions (or a glibc) the target machine does not have."""

    exit_code = 6


class ToolMissing(TfbuildError):
    """A command-line tool tfbuild needs for this command is not installed."""

    exit_code = 12


class StaleOutput(TfbuildError):
    """A generated file (the CI workflow) no longer matches what tfbuild generates now."""

    exit_code = 13


class BadWheel(TfbuildError):
    """A file given as a wheel is not one: a name that is not a wheel name, not a zip archive,
    a damaged archive, or no metadata."""

    exit_code = 14


class WorkloadError(TfbuildError):
    """`--workload` cannot be measured as asked, whatever the build: a path that is no model,
    options that do not apply to it, a signature it lacks, inputs that do not fit it, a script
    without step(state)."""

    exit_code = 15


class FormFailed(TfbuildError):
    """A model form cannot be made from this model with this TensorFlow (an op LiteRT lacks, a
    converter that refuses it), or its outputs differ from the as-given form's beyond the
    tolerances."""

    exit_code = 16
