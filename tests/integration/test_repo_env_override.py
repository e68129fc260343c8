"""The release wheel version (D4) rests on one bazel rule: a `--repo_env` on the command line
wins over the same variable set in TensorFlow's .bazelrc (`ML_WHEEL_TYPE="snapshot"`). This
checks that rule with a real bazel (Debian's 4.2.3, in the toy recipe's toolchain stage): a
repository rule reports the ML_WHEEL_TYPE it sees, under each cited .bazelrc line, with and
without the recipe's own `--repo_env` arguments.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import jinja2
import pytest
from support.env import FIXTURES, TOY
from support.recipes import recipe_for

from tfbuild.config.load import load_matrix
from tfbuild.machine.detect import profile_from_cpuinfo

pytestmark = [pytest.mark.docker, pytest.mark.slow]

BUILDER = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo")
IMAGE = "tfbuild-test/bazel-bootstrap:toolchain"

WHEEL_TYPE_BZL = """\
def _impl(ctx):
    ctx.file("BUILD", 'exports_files(["type.txt"])\\n')
    ctx.file("type.txt", ctx.os.environ.get("ML_WHEEL_TYPE", "unset") + "\\n")

wheel_type = repository_rule(implementation = _impl, environ = ["ML_WHEEL_TYPE"])
"""
WORKSPACE = """\
load("//:wheel_type.bzl", "wheel_type")
wheel_type(name = "wheel_type")
"""
BUILD = """\
genrule(name = "type", srcs = ["@wheel_type//:type.txt"], outs = ["type.txt"], cmd = "cp $< $@")
"""
# Runs in the container: one build per argument set, each printing what the rule saw (bazel
# itself writes to stderr).
SCRIPT = """\
set -e
cd /ws
bazel build --noshow_progress //:type
echo "rc-only=$(cat bazel-bin/type.txt)"
bazel build --noshow_progress "$@" //:type
echo "recipe=$(cat bazel-bin/type.txt)"
"""


@pytest.fixture(scope="module")
def bazel_image(base_image: str) -> str:
    """The toy recipe's toolchain stage (bazel-bootstrap from Debian), as its template says."""
    template = (TOY / "templates" / "tensorflow.Dockerfile.j2").read_text()
    toolchain = template.split("\n\nFROM toolchain AS source", 1)[0]
    assert "bazel-bootstrap" in toolchain
    environment = jinja2.Environment(undefined=jinja2.StrictUndefined)
    environment.filters["sh"] = shlex.quote
    rendered = environment.from_string(re.sub(r"\A#.*\n", "", toolchain))
    dockerfile = rendered.render(base_image=base_image, compiler_facts={"cc": None})
    subprocess.run(
        ["docker", "build", "-q", "-t", IMAGE, "-"],
        input=dockerfile, capture_output=True, text=True, check=True, timeout=900,
    )  # fmt: skip
    return IMAGE


def recipe_repo_env(tmp_path: Path) -> list[str]:
    """The --repo_env arguments of a 2.21 CPU build, as its recipe passes them to bazel."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("variants:\n  - {name: plain-2.21, source: bazel, tensorflow: 2.21.0}\n")
    loaded = load_matrix(matrix)
    recipe = recipe_for(loaded, "plain-2.21", BUILDER)
    return [arg for arg in recipe.bazel_args if arg.startswith("--repo_env=")]


@pytest.mark.parametrize("snapshot", ["2.21", "2.22dev"])
def test_the_recipes_repo_env_wins_over_tensorflows_bazelrc(
    bazel_image: str, snapshot: str, tmp_path: Path
) -> None:
    """`build --repo_env=ML_WHEEL_TYPE="snapshot"` (2.21) and its `common` form (2.22 dev), the
    lines verbatim from the cited fixtures: alone they give "snapshot"; with the recipe's
    arguments the repository rule sees "release"."""
    (line,) = (
        text
        for text in (FIXTURES / "bazelrc" / f"{snapshot}.bazelrc").read_text().splitlines()
        if text.startswith(("build --repo_env=ML_WHEEL_TYPE=", "common --repo_env=ML_WHEEL_TYPE="))
    )
    args = recipe_repo_env(tmp_path)
    assert "--repo_env=ML_WHEEL_TYPE=release" in args
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in [
        (".bazelrc", line + "\n"),
        ("WORKSPACE", WORKSPACE),
        ("BUILD", BUILD),
        ("wheel_type.bzl", WHEEL_TYPE_BZL),
    ]:
        (workspace / name).write_text(text)
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--label", "org.tfbuild=test",
         "-v", f"{workspace}:/ws", bazel_image, "bash", "-c", SCRIPT, "sh", *args],
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    seen = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert seen == {"rc-only": "snapshot", "recipe": "release"}
