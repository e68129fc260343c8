"""The tfbuild command line. Each command turns its options into one frozen settings object and
calls a stage; errors a user can fix are reported in one line with their own exit code."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from types import FrameType

BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def _numpy_on_one_thread() -> None:
    """Load numpy with its BLAS on one thread. tfbuild's own arithmetic is on arrays of a few
    hundred numbers at most, and OpenBLAS starts a thread per CPU when it loads: on two CPUs
    that is 0.13 of the 0.59 CPU-seconds `tfbuild detect` takes. What tfbuild starts (pip,
    benchmark processes) gets the environment as it was."""
    before = os.environ.get(BLAS_THREADS)
    os.environ[BLAS_THREADS] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        if before is None:
            del os.environ[BLAS_THREADS]
        else:
            os.environ[BLAS_THREADS] = before


_numpy_on_one_thread()

import click  # noqa: E402

from tfbuild import engine  # noqa: E402
from tfbuild.cli import (  # noqa: E402
    building,
    comparing,
    exporting,
    generating,
    inspecting,
    machines,
    sessions,
)
from tfbuild.cli.app import cli  # noqa: E402
from tfbuild.cli.options import Flags  # noqa: E402
from tfbuild.errors import MatrixError, TfbuildError, UsageError  # noqa: E402

COMMANDS = (building, comparing, exporting, generating, inspecting, machines, sessions)
"""The modules whose commands register on the group (imported for that)."""


def _report(error: BaseException) -> None:
    stream = sys.stderr
    if Flags.debug:
        traceback.print_exception(error, file=stream)
    message = str(error)
    if isinstance(error, MatrixError):
        # FILE:LINE:COL: lines, as compilers print them, so editors can jump to each one.
        print(message, file=stream)
        if len(error.problems) > 1:
            print(
                f"tfbuild: {len(error.problems)} problems in {error.problems[0].file}", file=stream
            )
    elif isinstance(error, TfbuildError):
        print(f"tfbuild: {message or type(error).__name__}", file=stream)
    else:
        print(
            f"tfbuild: internal error: {type(error).__name__}: {message}\n"
            "This is a bug in tfbuild; rerun with --debug for the traceback.",
            file=stream,
        )


INTERRUPTED = {
    "bench": "the rounds it finished are saved; `tfbuild bench --resume RESULTS_FILE` goes on",
    "run": "the rounds it finished are saved; `tfbuild bench --resume RESULTS_FILE` goes on",
    "build": "finished builds are in the store; the same command again builds the rest",
}


def _interrupted(argv: list[str]) -> str:
    """What Ctrl-C left, for the command that was running."""
    command = next((a for a in argv if a in cli.commands), None)
    left = INTERRUPTED.get(command or "", "nothing it writes is left half-written")
    return f"tfbuild: interrupted; {left}"


def _stop(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a CI step's time limit, `docker stop`, a cancelled job) ends tfbuild as Ctrl-C
    does: the containers it started are removed and finished work is kept."""
    raise KeyboardInterrupt


def _default_sigterm() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def stop_on_sigterm() -> None:
    """SIGTERM to this process takes Ctrl-C's path. A process forked from it (the audit's pool
    workers, which their pool stops with SIGTERM) gets the default action back at once: a
    Python handler runs only when the interpreter gets control, so a worker blocked in a lock
    would never end, and one that did run it would unwind into a copy of the command."""
    signal.signal(signal.SIGTERM, _stop)
    os.register_at_fork(after_in_child=_default_sigterm)


def _run(argv: list[str] | None) -> object:
    """The command, and then the containers it left (--keep-containers), named."""
    try:
        return cli.main(args=argv, prog_name="tfbuild", standalone_mode=False)
    finally:
        if engine.kept:
            names = " ".join(engine.kept)
            print(f"tfbuild: kept {len(engine.kept)} container(s) ({engine.KEEP_ENV}): {names}; "
                  f"remove them with `docker rm -f {names}`", file=sys.stderr)  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit codes per error class, no traceback unless --debug."""
    stop_on_sigterm()
    try:
        code = _run(argv)
    except TfbuildError as error:
        _report(error)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        print(_interrupted(sys.argv[1:] if argv is None else argv), file=sys.stderr)
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(UsageError.exit_code)
    except Exception as error:
        _report(error)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
