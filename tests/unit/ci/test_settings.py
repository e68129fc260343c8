"""What the nightly workflow is generated from: the drift check's command line, which bash runs
on GitHub and which hands `tfbuild ci github` the very options that made the workflow (quoted
values and all) with the path the file is committed at; the install commands the jobs may
run (this repository's, never a bare name from the index that belongs to someone else); and
where the build jobs run. The GitHub runner is stood in for by bash with the two variables
GitHub sets; the command line is read back by tfbuild's own option parser."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.env import REPO

from tfbuild.ci.settings import DEFAULT_INSTALL, Settings, build_runner, check_install
from tfbuild.cli.generating import github
from tfbuild.config.load import load_matrix
from tfbuild.errors import UsageError

GITHUB = {
    "GITHUB_REPOSITORY": "octo-org/tf-builds",
    "GITHUB_WORKFLOW_REF": "octo-org/tf-builds/.github/workflows/nightly.yml@refs/heads/main",
}


def run_by_github(s: Settings) -> list[str]:
    """The drift check's script as a workflow step runs it (bash, GitHub's variables), with
    `tfbuild` a shell function that prints the arguments it is given, one per NUL."""
    script = "tfbuild() { printf '%s\\0' \"$@\"; }\n" + s.command_line()
    proc = subprocess.run(
        ["bash", "-eo", "pipefail", "-c", script],
        env={"PATH": os.environ["PATH"], **GITHUB}, capture_output=True, text=True,
        check=True, timeout=30,
    )  # fmt: skip
    return proc.stdout.split("\0")[:-1]


def parsed(args: list[str]) -> dict[str, Any]:
    """What `tfbuild ci github` makes of these arguments."""
    assert args[:2] == ["ci", "github"], args
    with github.make_context("github", args[2:]) as ctx:
        return dict(ctx.params)


def test_the_drift_check_hands_back_every_option_that_made_the_workflow() -> None:
    """Values with spaces and quotes survive, repeated options keep their order, and --out is
    the path the workflow is committed at (not the one it was generated at)."""
    s = Settings(
        matrix_file="ci/matrix one.yaml",
        out="build/wf.yml",
        install="pip install -e '.[test]' && echo \"it's installed\"",
        build_runner="linux-64-core",
        bench_runners=("ubuntu-latest", "skx-box"),
        bench_hosts={"skx-box": "hosts/skx box.json", "zen-box": "hosts/zen.json"},
        fail_above="2.5%",
        publish=True,
        workload="models/my model.keras",
    )
    got = parsed(run_by_github(s))
    assert got == {
        "matrix_path": Path("ci/matrix one.yaml"),
        "out": Path(".github/workflows/nightly.yml"),
        "install": "pip install -e '.[test]' && echo \"it's installed\"",
        "build_runner": "linux-64-core",
        "bench_runners": ("ubuntu-latest", "skx-box"),
        "bench_hosts": ("skx-box=hosts/skx box.json", "zen-box=hosts/zen.json"),
        "workload": Path("models/my model.keras"),
        "fail_above": "2.5%",
        "publish": "pages",
        "check": True,
    }


def test_the_drift_check_of_the_defaults_names_them_all() -> None:
    """Every default is said, so a later change of a default in tfbuild shows as drift instead
    of silently changing what the workflow was made with."""
    args = run_by_github(Settings("matrix.yaml", "x.yml"))
    assert args == [
        "ci", "github", "--matrix", "matrix.yaml", "--install", DEFAULT_INSTALL,
        "--bench-runner", "ubuntu-latest", "--fail-above", "5%",
        "--out", ".github/workflows/nightly.yml", "--check",
    ]  # fmt: skip
    got = parsed(args)
    assert (got["build_runner"], got["workload"], got["publish"]) == (None, None, None)


@pytest.mark.parametrize(
    "command",
    [
        "uv pip install .",
        "python3 -m pip install --no-deps ./dist/tfbuild_bench-0.1.0-py3-none-any.whl",
        "pip install TFBuild.Bench==0.1.0",  # the same name once normalised (PEP 503)
        "pip install --index-url https://pypi.example.org/simple 'tfbuild-bench[test]>=0.1'",
        "make install && pip install .",  # `install` of another program is not pip's
    ],
)
def test_installs_of_this_project_are_accepted(command: str) -> None:
    assert check_install(command) == command


@pytest.mark.parametrize(
    ("command", "name", "owner"),
    [
        ("uv pip install tfbuild", "tfbuild", "an unrelated project"),
        ("sudo pip install 'tfbuild[gpu]'", "tfbuild", "an unrelated project"),
        ("pip install TFBuild", "TFBuild", "an unrelated project"),
        ("/usr/bin/pip install . numpy", "numpy", "not this repository"),
        ("pip install -e . ; python -m pip install requests==2.32", "requests", "not this"),
    ],
)
def test_an_install_of_a_foreign_name_is_refused(command: str, name: str, owner: str) -> None:
    with pytest.raises(UsageError) as refused:
        check_install(command)
    said = str(refused.value)
    assert said.startswith(f"--install {command!r}: installs {name!r} by name")
    assert f"belongs to {owner}" in said
    assert "install from the checkout ('pip install .'), a wheel or URL, or tfbuild-bench" in said


def test_an_install_that_is_no_shell_command_is_refused() -> None:
    with pytest.raises(UsageError, match=r"not a shell command \(No closing quotation\)"):
        check_install("pip install 'tfbuild-bench")


def test_builds_run_on_the_named_runner_else_remotely_else_nowhere() -> None:
    matrix = load_matrix(REPO / "matrix.yaml")
    bazel = dataclasses.replace(matrix.defaults.bazel, remote_executor="grpcs://rbe.example.com")
    remote = dataclasses.replace(matrix, defaults=dataclasses.replace(matrix.defaults, bazel=bazel))
    named = Settings("matrix.yaml", "n.yml", build_runner="linux-64-core")
    unnamed = Settings("matrix.yaml", "n.yml")
    assert build_runner(matrix, named) == build_runner(remote, named) == "linux-64-core"
    assert build_runner(remote, unnamed) == "ubuntu-latest"
    assert build_runner(matrix, unnamed) is None
