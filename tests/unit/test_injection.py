"""Arbitrary strings (newlines, spaces, quotes, $(), backticks, backslashes, unicode) through
every matrix value that reaches a Dockerfile, the build script, the bazel command, the runtime
install or a printed shell line: either the matrix is refused (MatrixError: exit code 2, each
problem at a line of the file), or the output parses with the value confined to its slot:
the Dockerfile keeps the reference render's instructions, the build script passes `sh -n` and
keeps the reference's commands, the bazel command line holds the value as one word, and the
printed "use this" lines split back into the value."""

from __future__ import annotations

import copy
import gzip
import json
import shlex
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO
from support.recipes import recipe_for

from tfbuild.analysis.choice import WHEELS_VARIABLE
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.sessions import load_sessions
from tfbuild.build.render import render, template_dirs
from tfbuild.config.load import parse_matrix
from tfbuild.errors import InstallError, MatrixError
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.report.comparison import choice_lines
from tfbuild.runtime.container import _pip_conf

BUILDER = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo")
NASTY = st.sampled_from([*" \n\r\t'\"$`\\;|&<>(){}[]#=,*?~!%^:@/.-_", "$(id)", "${X}", "é"])
RAW = st.lists(NASTY | st.characters(), min_size=1, max_size=24).map("".join)
# Most raw strings are refused outright; a valid-looking head gets the rest past the first
# check, so that accepted values are exercised too.
HEADS = st.sampled_from(["", "-DX=", "--copt=-DX=", "x", "tfbuild/base:", "/cache/", "2.17.1"])
PRINTABLE = st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=24)
VALUES = st.builds(str.__add__, HEADS, RAW | PRINTABLE)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VARIANT = {"name": "v", "source": "bazel", "tensorflow": "2.17.1", "configs": ["mkl"]}


def slot(where: Callable[[dict[str, Any], str], None]) -> Callable[[str], dict[str, Any]]:
    def matrix(value: str) -> dict[str, Any]:
        document: dict[str, Any] = {"schema_version": 1, "variants": [dict(VARIANT)]}
        where(document, value)
        return document

    return matrix


def variant_key(key: str, as_list: bool = False) -> Callable[[str], dict[str, Any]]:
    return slot(lambda d, v: d["variants"][0].__setitem__(key, [v] if as_list else v))


def cuda(key: str, as_list: bool = False) -> Callable[[str], dict[str, Any]]:
    def set_cuda(d: dict[str, Any], v: str) -> None:
        fields: dict[str, Any] = {"version": "12.5.1", "compute_capabilities": ["sm_90"]}
        fields[key] = [v] if as_list else v
        d["variants"][0].update(tensorflow="2.19.0", configs=[], cuda=fields)

    return slot(set_cuda)


def default(section: str, key: str, as_list: bool = False) -> Callable[[str], dict[str, Any]]:
    return slot(lambda d, v: d.setdefault("defaults", {}).__setitem__(
        section, {key: [v] if as_list else v}
    ))  # fmt: skip


SLOTS: dict[str, Callable[[str], dict[str, Any]]] = {
    "variant name": variant_key("name"),
    "variant id": variant_key("id"),
    "copts": variant_key("copts", as_list=True),
    "configs": variant_key("configs", as_list=True),
    "march": variant_key("march"),
    "tensorflow": variant_key("tensorflow"),
    "bazel flags": default("bazel", "flags", as_list=True),
    "bazel cache": default("bazel", "cache"),
    "base image": default("base_images", "build"),
    "bazel remote cache": default("bazel", "remote_cache"),
    "bazel remote executor": default("bazel", "remote_executor"),
    "python": variant_key("python"),
    "cuda version": cuda("version"),
    "cudnn": cuda("cudnn"),
    "compute capabilities": cuda("compute_capabilities", as_list=True),
}


def load(document: dict[str, Any], tmp: Path) -> Any:
    text = yaml.safe_dump(document, allow_unicode=True)
    return parse_matrix(text, str(tmp / "matrix.yaml"), tmp)


def structure(dockerfile: str, tmp: Path) -> list[str]:
    path = tmp / "Dockerfile"
    path.write_text(dockerfile)
    return [i["instruction"] for i in DockerfileParser(str(path)).structure]


def commands(script: str) -> list[str]:
    """The first word of each script line that is not a comment: the commands it runs."""
    words = [line.split()[0] for line in script.splitlines() if line.strip()]
    return [w for w in words if not w.startswith("#")]


def rendered(matrix: Any) -> tuple[str, str, list[str]]:
    recipe = recipe_for(matrix, matrix.variants[0].name, BUILDER, ca_bundle=False)
    files = render(recipe, template_dirs(None))
    return files.dockerfile, files.build_script, recipe.bazel_command


def check_slot(name: str, value: str, tmp: Path) -> None:
    try:
        matrix = load(SLOTS[name](value), tmp)
    except MatrixError as exc:
        assert exc.exit_code == 2
        assert all(p.file.endswith("matrix.yaml") and p.line >= 1 for p in exc.problems)
        return
    known = {
        "march": "haswell",
        "tensorflow": "2.17.1",
        "configs": "mkl",
        "bazel flags": "--jobs=8",
        "copts": "-O3",
        "bazel remote cache": "grpcs://cache.example.com",
        "bazel remote executor": "grpcs://rbe.example.com",
        "python": "3.11",
        "cuda version": "12.5.1",
        "cudnn": "9.3.0",
        "compute capabilities": "sm_90",
    }
    reference = known.get(name, "x")
    reference_file, reference_script, reference_command = rendered(
        load(SLOTS[name](reference), tmp)
    )
    dockerfile, script, command = rendered(matrix)
    assert structure(dockerfile, tmp) == structure(reference_file, tmp), name
    assert commands(script) == commands(reference_script), name
    checked = subprocess.run(
        ["sh", "-n"], input=script, text=True, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stderr
    assert len(command) == len(reference_command), (name, command)
    if name in ("copts", "bazel flags"):
        assert any(value in word for word in command), command


@FUZZ
@given(name=st.sampled_from(sorted(SLOTS)), value=VALUES)
def test_matrix_values_are_refused_or_confined(
    name: str, value: str, tmp_path_factory: Any
) -> None:
    check_slot(name, value, tmp_path_factory.mktemp("slot"))


CRAFTED = json.loads(gzip.decompress((FIXTURES / "results" / "aa-run-epyc.json.gz").read_bytes()))


@FUZZ
@given(value=VALUES, folder=VALUES, constraint=VALUES, source=st.sampled_from(["pypi", "wheel"]))
def test_printed_shell_lines_split_back_into_their_values(
    value: str, folder: str, constraint: str, source: str, tmp_path_factory: Any
) -> None:
    """A tuning's environment value, the store folder of the wheel and a constraint from a
    results file (a CI artifact, maybe crafted) come back whole from the "use this" lines a
    user pastes into a shell, and never start a line of their own."""
    document = copy.deepcopy(CRAFTED)
    for config in document["configs"]:
        config["env"] = {"LD_PRELOAD": value}
    stock = document["variants"]["stock"]
    stock["definition"]["source"] = source
    artifact = stock["artifact"]
    name = artifact["wheel"].rsplit("/", 1)[-1]
    artifact["wheel"], artifact["constraints"] = f"{folder}/{name}", [constraint]
    path = tmp_path_factory.mktemp("crafted") / "results.json"
    path.write_text(json.dumps(document))
    lines = choice_lines(analyse_host(load_sessions([path])))
    commands = [line for line in lines if not line.startswith("#")]
    links = ["--find-links", f"${{{WHEELS_VARIABLE}:?a folder or page that holds the wheel}}"]
    links = links if source != "pypi" else []
    requirement = "tensorflow-cpu==2.21.0"
    assert [shlex.split(line) for line in commands] == [
        ["echo", f"{requirement} --hash=sha256:{artifact['sha256']}", "|",
         "pip", "install", "--no-deps", "--require-hashes", *links, "-r", "/dev/stdin"],
        ["pip", "install", *links, requirement, constraint],
        ["export", f"LD_PRELOAD={value}"],
    ]  # fmt: skip


@FUZZ
@given(url=VALUES)
def test_index_settings_never_reach_the_install_script(url: str) -> None:
    """Index settings go to a pip.conf copied into the install container (never into the
    install script or an image), one line per setting; control characters are refused."""
    env = {"PIP_INDEX_URL": url}
    if not url.isprintable():
        with pytest.raises(InstallError, match="holds control characters"):
            _pip_conf(env, ca_bundle=False)
        return
    conf = _pip_conf(env, ca_bundle=False)
    assert conf.splitlines() == ["[global]", f"index-url = {url}"]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("copts", "-DX=="),
        ("bazel cache", "/srv/cache"),
        ("variant id", "x.y_z-1"),
        ("compute capabilities", "compute_80"),
        ("bazel remote cache", "grpcs://cache.internal:443"),
        ("cudnn", "9.1.0"),
    ],
)
def test_accepted_values_stay_in_their_slot(name: str, value: str, tmp_path: Path) -> None:
    """Values the matrix accepts, including a host folder as the bazel cache (whose BuildKit
    cache id is derived from it, since a cache mount cannot bind a host folder)."""
    load(SLOTS[name](value), tmp_path)  # accepted
    check_slot(name, value, tmp_path)
    if name == "bazel cache":
        dockerfile, _, _ = rendered(load(SLOTS[name](value), tmp_path))
        assert "--mount=type=cache,id=tfbuild-bazel-cache-" in dockerfile
        assert value not in dockerfile


def test_a_source_tree_name_cannot_add_an_instruction(tmp_path: Path) -> None:
    """--tf-source names a folder, copied in: a newline in its name is refused (it would end
    the Dockerfile comment that names the tree and start an instruction)."""
    tree = tmp_path / "tf\nRUN touch pwned"
    tree.mkdir()
    (tree / "WORKSPACE").touch()
    proc = run_tfbuild(
        "build", "--variant", "mkl-avx2", "--dry-run", "--tf-source", str(tree),
        "--matrix", str(REPO / "matrix.yaml"),
    )  # fmt: skip
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "holds control characters; rename the folder" in proc.stderr
    assert "RUN touch pwned" not in proc.stdout
