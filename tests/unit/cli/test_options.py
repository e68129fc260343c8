"""The options every command shares: --debug (each setting and the layer that set it; the
traceback of a failure, only when asked), the switches that act as they are parsed
(--keep-containers, --color), the environment variables the shared options read, --format and
its old --json spelling, and the ranges a session's options are held to before anything
runs."""

from __future__ import annotations

import os
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from support.cli import debug_said, run_tfbuild

from tfbuild.cli.options import (
    Command,
    Flags,
    command_cascade,
    format_option,
    json_option,
    keep_containers_option,
    store_option,
    variable_settings,
)
from tfbuild.engine import KEEP_ENV

NO_RESULTS = (
    "no results there; expected a results file, a folder of them, or a quoted pattern like "
    "'previous/*.json'"
)


@pytest.mark.parametrize(
    ("before", "after", "env"),
    [
        ((), (), {}),
        ((), (), {"TFBUILD_DEBUG": ""}),  # set but empty: not asked
        (("--debug",), (), {}),
        ((), ("--debug",), {}),
        ((), (), {"TFBUILD_DEBUG": "1"}),
    ],
    ids=["not-asked", "empty-variable", "on-the-group", "on-the-command", "environment"],
)
def test_a_mistake_is_one_line_and_its_traceback_shown_only_when_asked(
    tmp_path: Path, before: tuple[str, ...], after: tuple[str, ...], env: dict[str, str]
) -> None:
    """A user mistake (compare of a file that is not there) ends in exit 64 and one line
    naming it; --debug (before or after the command's name) or TFBUILD_DEBUG=1 also shows
    the traceback, above that same line."""
    missing = tmp_path / "missing.json"
    proc = run_tfbuild(*before, "compare", str(missing), *after, env=env)
    assert proc.returncode == 64, proc.stderr
    said = f"tfbuild: RESULTS '{missing}': {NO_RESULTS}"
    asked = bool(before or after or env.get("TFBUILD_DEBUG"))
    if asked:
        assert "Traceback (most recent call last):" in proc.stderr
        assert proc.stderr.rstrip("\n").splitlines()[-1] == said
    else:
        assert proc.stderr == said + "\n"


def test_debug_says_each_option_and_the_layer_that_set_it(tmp_path: Path) -> None:
    """calibrate --report of a file that is no calibration: before it fails, --debug says
    every option with its value and where it came from, the command line over the
    environment (TFBUILD_CACHE_DIR given and --cache-dir too), the environment over the
    default (TFBUILD_WHEELS, TFBUILD_RESULTS, TFBUILD_PROCESSES)."""
    report = tmp_path / "not-a-calibration.json"
    report.write_text("{}")
    env = {
        "TFBUILD_WHEELS": str(tmp_path / "store"),
        "TFBUILD_RESULTS": str(tmp_path / "results"),
        "TFBUILD_PROCESSES": "fresh",
        "TFBUILD_CACHE_DIR": str(tmp_path / "env-cache"),
    }
    args = ["calibrate", "--report", str(report), "--cache-dir", str(tmp_path / "cache"),
            "--only", "stock*", "--only", "mkl*"]  # fmt: skip
    proc = run_tfbuild("--debug", *args, env=env)
    assert proc.returncode == 9, proc.stderr  # a results file of the wrong schema
    said = debug_said(proc.stderr)
    assert said == {
        "--matrix": ("none", "default"),
        "--only": ("stock* mkl*", "option --only"),
        "--skip": ("none", "default"),
        "--with": ("none", "default"),
        "--store": (str(tmp_path / "store"), "environment TFBUILD_WHEELS"),
        "--rounds": ("10", "default"),
        "--seed": ("none", "default"),
        "--runtime": ("auto", "default"),
        "--processes": ("fresh", "environment TFBUILD_PROCESSES"),
        "--results": (str(tmp_path / "results"), "environment TFBUILD_RESULTS"),
        "--cache-dir": (str(tmp_path / "cache"), "option --cache-dir"),
        "--report": (str(report), "option --report"),
        "--format": ("table", "default"),
        "--quiet": ("no", "default"),
    }
    quiet = run_tfbuild(*args, env=env)
    assert quiet.returncode == 9 and "tfbuild: debug:" not in quiet.stderr
    assert quiet.stderr.startswith(f"tfbuild: {report}: not a tfbuild file"), quiet.stderr


def test_a_value_from_the_environment_is_checked_as_the_option_is() -> None:
    """TFBUILD_PROCESSES=bogus is refused as --processes bogus would be: exit 64, the
    choices named and the variable that set it, no traceback."""
    proc = run_tfbuild("bench", env={"TFBUILD_PROCESSES": "bogus"})
    assert proc.returncode == 64, proc.stderr
    assert (
        "Invalid value for '--processes': 'bogus' is not one of 'fresh', 'forked'. "
        "(set by TFBUILD_PROCESSES)"
    ) in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_option_given_wins_without_its_variable_being_read() -> None:
    """TFBUILD_PROCESSES=bogus under --processes fresh: the option is what counts, so the
    command goes on (to the selection it refuses, exit 4), the variable unread."""
    proc = run_tfbuild("bench", "--processes", "fresh", "--only", "nothing",
                       env={"TFBUILD_PROCESSES": "bogus"})  # fmt: skip
    assert proc.returncode == 4, proc.stderr
    assert "TFBUILD_PROCESSES" not in proc.stderr and "--only 'nothing'" in proc.stderr


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (
            ("--min-rounds", "1"),
            "Invalid value for '--min-rounds': 1 is not in the range 2<=x<=1000.",
        ),
        (("--rounds", "0"), "Invalid value for '--rounds': 0 is not in the range 1<=x<=1000."),
        (("--calls", "0"), "Invalid value for '--calls': 0 is not in the range 1<=x<=100000."),
        (("--batch", "0"), "Invalid value for '--batch': 0 is not in the range 1<=x<=1000000."),
        (
            ("--runtime", "podman"),
            "Invalid value for '--runtime': 'podman' is not one of 'auto', 'local', 'docker'.",
        ),
        (("--seed", "one"), "Invalid value for '--seed': 'one' is not a valid integer."),
    ],
    ids=["min-rounds", "rounds", "calls", "batch", "runtime", "seed"],
)
def test_a_session_option_out_of_its_range_is_refused_before_anything_runs(
    tmp_path: Path, option: tuple[str, ...], said: str
) -> None:
    results = tmp_path / "results"
    proc = run_tfbuild("bench", *option, "--results", str(results), "--store", str(tmp_path / "w"))
    assert proc.returncode == 64, proc.stderr
    assert said in proc.stderr and "Traceback" not in proc.stderr
    assert not results.exists() and not (tmp_path / "w").exists()


def test_a_file_option_refuses_a_folder_and_a_folder_option_a_file(tmp_path: Path) -> None:
    """--matrix and --host name files, --store a folder: the wrong kind is named at once."""
    a_file = tmp_path / "file"
    a_file.write_text("")
    proc = run_tfbuild("matrix", "--matrix", str(tmp_path))
    assert proc.returncode == 64
    assert f"Invalid value for '--matrix': File '{tmp_path}' is a directory." in proc.stderr
    proc = run_tfbuild("matrix", "--host", str(tmp_path))
    assert proc.returncode == 64
    assert f"Invalid value for '--host': File '{tmp_path}' is a directory." in proc.stderr
    proc = run_tfbuild("inspect", "x.whl", "--store", str(a_file))
    assert proc.returncode == 64
    assert f"Invalid value for '--store': Directory '{a_file}' is a file." in proc.stderr


def test_an_unknown_format_names_the_formats_the_command_has() -> None:
    proc = run_tfbuild("compare", "any.json", "--format", "yaml")
    assert proc.returncode == 64, proc.stderr
    assert (
        "Invalid value for '--format': 'yaml' is not one of 'table', 'markdown', 'json', 'html'."
        in proc.stderr
    )


def test_color_never_and_always_win_over_the_environment() -> None:
    """--color never drops a FORCE_COLOR the environment sets, --color always a NO_COLOR:
    piped output is plain, then coloured."""
    plain = run_tfbuild("--color", "never", "matrix", env={"FORCE_COLOR": "1"})
    assert plain.returncode == 0 and "\x1b[" not in plain.stdout
    forced = run_tfbuild("matrix", "--color", "always", env={"NO_COLOR": "1"})
    assert forced.returncode == 0 and "\x1b[" in forced.stdout
    assert "\x1b[" in run_tfbuild("matrix", env={"FORCE_COLOR": "1"}).stdout  # as set


def _as_json_command() -> click.Command:
    @click.command(cls=Command)
    @json_option("the numbers")
    def show(as_json: bool) -> None:
        click.echo("json" if as_json else "table")

    return show


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        ([], "table"),
        (["--format", "table"], "table"),
        (["--format", "json"], "json"),
        (["--json"], "json"),
        (["--json", "--format", "table"], "json"),  # either one given asks for JSON
        (["--format", "table", "--json"], "json"),
    ],
)
def test_json_is_asked_by_format_json_or_by_the_old_flag(args: list[str], shown: str) -> None:
    result = CliRunner().invoke(_as_json_command(), args)
    assert result.exit_code == 0, result.output
    assert result.output == f"{shown}\n"


def test_the_old_json_flag_is_not_in_the_help_and_the_format_help_says_each() -> None:
    result = CliRunner().invoke(_as_json_command(), ["--help"], terminal_width=200)
    assert result.exit_code == 0
    assert "--json" not in result.output
    assert "table: for a person; json: the numbers." in result.output
    assert "--color [auto|always|never]" in result.output  # every Command takes --color


def test_a_format_option_defaults_to_its_first_format() -> None:
    @click.command()
    @format_option({"plain": "for a person", "csv": "for a spreadsheet"})
    def show(fmt: str) -> None:
        click.echo(fmt)

    runner = CliRunner()
    assert runner.invoke(show, []).output == "plain\n"
    assert runner.invoke(show, ["--format", "csv"]).output == "csv\n"
    shown = runner.invoke(show, ["--help"], terminal_width=200).output
    assert "plain: for a person; csv: for a spreadsheet." in shown and "[default: plain]" in shown
    refused = runner.invoke(show, ["--format", "json"])
    assert refused.exit_code == 2
    assert "'json' is not one of 'plain', 'csv'." in refused.output


def test_switches_act_as_they_are_parsed_and_are_not_passed_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--keep-containers sets TFBUILD_KEEP_CONTAINERS=1 for this process and those it starts;
    the command's function receives no parameter for it (it takes none here)."""
    monkeypatch.setenv(KEEP_ENV, "")  # so that what the option sets is undone after
    monkeypatch.delenv(KEEP_ENV)
    seen: list[str | None] = []

    @click.command(cls=Command)
    @keep_containers_option
    def command() -> None:
        seen.append(os.environ.get(KEEP_ENV))

    assert CliRunner().invoke(command, []).exit_code == 0
    assert CliRunner().invoke(command, ["--keep-containers"]).exit_code == 0
    assert seen == [None, "1"]


def test_debug_settings_are_said_on_stderr_only_with_debug(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Outside a command (a stage that reads a matrix on its own), a setting resolved is said
    as it is resolved, and only with --debug."""
    environment = {"TFBUILD_WHEELS": "/srv/wheels"}
    monkeypatch.setattr(os, "environ", environment)

    def resolve() -> None:
        resolved = command_cascade()
        resolved.take("--store", "wheels", variable="TFBUILD_WHEELS")
        resolved.take("defaults.python", "3.12", matrix=("3.11", "matrix.yaml:4"))
        resolved.take("--quiet", False)

    monkeypatch.setattr(Flags, "debug", False)
    resolve()
    assert capsys.readouterr() == ("", "")
    monkeypatch.setattr(Flags, "debug", True)
    resolve()
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "tfbuild: debug: --store = /srv/wheels  [environment TFBUILD_WHEELS]",
        "tfbuild: debug: defaults.python = 3.11  [matrix matrix.yaml:4]",
        "tfbuild: debug: --quiet = no  [default]",
    ]


def test_a_command_says_its_options_under_debug_before_it_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Any command of the Command class: the store from TFBUILD_WHEELS, said on stderr before
    the command's own output."""
    monkeypatch.setattr(Flags, "debug", True)

    @click.command(cls=Command)
    @store_option
    def command(store_path: Path) -> None:
        click.echo(f"store {store_path}")

    result = CliRunner().invoke(command, [], env={"TFBUILD_WHEELS": str(tmp_path)})
    assert result.exit_code == 0, result.output
    assert result.stdout == f"store {tmp_path}\n"
    assert result.stderr == (
        f"tfbuild: debug: --store = {tmp_path}  [environment TFBUILD_WHEELS]\n"
    )


def test_every_command_resolves_its_options_through_the_cascade() -> None:
    """An option a variable may set is read only by a Command's cascade (click reads no
    variable): every command, those of a sub-group too, is a Command, so none ignores
    TFBUILD_WHEELS and the like."""
    from tfbuild.cli.app import cli

    def commands(group: click.Group) -> list[click.Command]:
        found: list[click.Command] = []
        for command in group.commands.values():
            found += commands(command) if isinstance(command, click.Group) else [command]
        return found

    every = commands(cli)
    assert {"bench", "build", "inspect", "github"} <= {c.name for c in every}
    assert [c.name for c in every if not isinstance(c, Command)] == []


def test_the_options_a_variable_sets_are_resolved_as_a_command_resolves_them() -> None:
    """What `matrix --explain` says of the commands after it: each option a variable may set,
    from the environment or its default (the cache folder under XDG_CACHE_HOME), and a value
    the option would refuse named with why, not an error."""
    env = {"TFBUILD_RESULTS": "/srv/results", "XDG_CACHE_HOME": "/var/cache/me",
           "TFBUILD_PROCESSES": "bogus"}  # fmt: skip
    found = {s.name: s for s in variable_settings(env)}
    assert list(found) == ["--store", "--cache-dir", "--results", "--processes", "--tf-source",
                           "--bazel-cache"]  # fmt: skip
    assert (found["--results"].value, found["--results"].source) == (
        "/srv/results", "environment TFBUILD_RESULTS"
    )  # fmt: skip
    assert (found["--cache-dir"].value, found["--cache-dir"].layer) == (
        "/var/cache/me/tfbuild", "default"
    )  # fmt: skip
    assert found["--store"].value == "wheels" and found["--processes"].value == "bogus"
    assert found["--processes"].where == (
        "TFBUILD_PROCESSES, refused: 'bogus' is not one of 'fresh', 'forked'."
    )
