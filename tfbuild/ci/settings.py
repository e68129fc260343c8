"""What the nightly workflow is generated from (`tfbuild ci github`'s options) and the facts
about GitHub's runners and actions that shape it."""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from tfbuild.config.model import Matrix
from tfbuild.errors import UsageError

NIGHTLY = "0 3 * * *"
RELEASE_CHECK = "0 */6 * * *"
BAZEL_CACHE = "~/.cache/tfbuild-bazel"
DISTRIBUTION = "tfbuild-bench"
"""tfbuild's distribution name (pyproject.toml); `tfbuild` on the index is someone else's."""
DEFAULT_INSTALL = "pip install ."
RESULTS_BRANCH = "tfbuild-results"
"""The branch that holds the last passing night's results, the gate's reference: a cache
entry would be evicted first once the bazel caches fill the repository's 10 GB."""
PUSH_NOTE = f"pushes the nights and the gate's reference to {RESULTS_BRANCH}; installs nothing"
SECRET_LINE = "TFBUILD_BAZEL_REMOTE_HEADER: ${{ secrets.TFBUILD_BAZEL_REMOTE_HEADER }}"
SECRET_NOTE = "zizmor: ignore[secrets-outside-env] optional, and this step's only"
"""The remote cache's credentials reach the Build step and nothing else; a deployment
environment for them would record a deployment for every build job every night."""
ARTIFACT_DAYS = 14
"""How long a night's wheels, results and report are kept (GitHub's default is 90 days)."""
SAVE_MARGIN_MIN = 20
"""Minutes of a build job kept for saving its bazel cache and uploading its wheel store when
the build itself runs out of time (the Build step times out first)."""
RECIPE_FILES = "'{matrix}', '{beside}templates/**', 'templates/**', 'tfbuild/data/tensorflow.yaml'"
"""What a source build's recipe is made of, in the repository the jobs check out: the matrix,
the templates beside it, tfbuild's own templates and release facts."""
BUILD_TIMEOUT_MIN = 360
"""GitHub stops a job on its hosted runners after 6 hours."""
STANDARD_RUNNERS = ("ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04")
"""Labels of GitHub's standard hosted Linux runners (4 vCPUs, 16 GB of RAM, a 14 GB SSD in a
public repository; README, "The nightly CI on GitHub's runners")."""


@dataclass(frozen=True)
class Settings:
    matrix_file: str
    out: str
    install: str = DEFAULT_INSTALL
    build_runner: str | None = None
    """Where the build jobs run; None schedules none (unless the matrix names a remote
    executor, when a standard runner drives it)."""
    bench_runners: tuple[str, ...] = ("ubuntu-latest",)
    bench_hosts: Mapping[str, str] = field(default_factory=dict)
    """Runner label -> its saved `tfbuild detect --format json` profile, a path in the
    repository."""
    fail_above: str = "5%"
    publish: bool = False
    """Publish each passing night's wheels (a PEP 503 index) and report on GitHub Pages."""
    workload: str | None = None
    """The user's own model, a path in the repository, that every bench job measures (in the
    matrix's `forms:`) instead of the fixed suite; None: the suite."""

    def command_line(self) -> str:
        """The drift check: `tfbuild ci github` with the arguments that made this workflow, on
        the file as committed, wherever it is (GitHub gives its path in GITHUB_WORKFLOW_REF,
        OWNER/REPO/PATH@REF), so the generated text does not depend on --out."""
        args = ["--matrix", self.matrix_file, "--install", self.install]
        if self.build_runner is not None:
            args += ["--build-runner", self.build_runner]
        for runner in self.bench_runners:
            args += ["--bench-runner", runner]
        for runner, path in self.bench_hosts.items():
            args += ["--bench-host", f"{runner}={path}"]
        if self.workload is not None:
            args += ["--workload", self.workload]
        args += ["--fail-above", self.fail_above]
        if self.publish:
            args += ["--publish", "pages"]
        return (
            'committed="${GITHUB_WORKFLOW_REF#"$GITHUB_REPOSITORY"/}"\n'
            "tfbuild ci github " + shlex.join(args) + ' --out "${committed%%@*}" --check'
        )


def check_install(command: str) -> str:
    """Refuse an install command that fetches a package by a bare name the repository does not
    own (the project's own distribution name is allowed; paths and URLs are)."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--install {command!r}: not a shell command ({exc})") from exc
    for i, word in enumerate(words):
        if word != "install" or i == 0 or not words[i - 1].endswith("pip"):
            continue
        for arg in words[i + 1 :]:
            if arg in {"&&", ";", "||", "|"}:
                break
            if arg.startswith("-") or "/" in arg or arg.startswith(".") or arg.endswith(".whl"):
                continue
            name = re.split(r"[\[<>=!~; @]", arg, maxsplit=1)[0]
            if re.sub(r"[-_.]+", "-", name).lower() != DISTRIBUTION:
                owner = (
                    "an unrelated project" if name.lower() == "tfbuild" else "not this repository"
                )
                raise UsageError(
                    f"--install {command!r}: installs {name!r} by name from the package index, "
                    f"and that name belongs to {owner}; install from the checkout "
                    f"({DEFAULT_INSTALL!r}), a wheel or URL, or {DISTRIBUTION} (this project's "
                    "distribution name)"
                )
    return command


def build_runner(matrix: Matrix, s: Settings) -> str | None:
    """Where the build jobs run: the named build runner; with a remote executor and none
    named, a standard runner (bazel's actions run remotely); else nowhere."""
    if s.build_runner is not None:
        return s.build_runner
    return "ubuntu-latest" if matrix.defaults.bazel.remote_executor else None
