"""The tfbuild command line. Each command turns its options into one frozen settings object and
calls a stage; errors a user can fix are reported in one line with their own exit code."""

from __future__ import annotations

import sys
import traceback

import click

from tfbuild.cli import building, comparing, generating, inspecting, machines, sessions
from tfbuild.cli.app import cli
from tfbuild.cli.common import Flags
from tfbuild.errors import MatrixError, TfbuildError, UsageError

COMMANDS = (building, comparing, generating, inspecting, machines, sessions)
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


def main(argv: list[str] | None = None) -> None:
    """Entry point: exit codes per error class, no traceback unless --debug."""
    try:
        code = cli.main(args=argv, prog_name="tfbuild", standalone_mode=False)
    except TfbuildError as error:
        _report(error)
        sys.exit(error.exit_code)
    except (click.exceptions.Abort, KeyboardInterrupt):
        print(
            "tfbuild: interrupted; finished work is kept (bench: --resume RESULTS_FILE)",
            file=sys.stderr,
        )
        sys.exit(130)
    except click.ClickException as error:
        error.show()
        sys.exit(UsageError.exit_code)
    except Exception as error:
        _report(error)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
