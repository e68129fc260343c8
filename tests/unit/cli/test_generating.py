"""`tfbuild index` and `tfbuild ci github` as a user runs them: an index over a store of tiny
real wheels that pip installs from (each link's sha256 and Requires-Python as the wheel says),
what the command prints and its JSON, and the ci options refused, each with one line, before
any workflow is written; --check's verdict on a workflow as generated and as edited."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cext import tagged_wheel
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.ci import workflow
from tfbuild.cli.generating import GithubSettings, check_current, outside_workflows
from tfbuild.config.load import load_matrix
from tfbuild.errors import StaleOutput

HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"
WORKFLOW = ".github/workflows/nightly.yml"


def store_of_wheels(store: Path) -> dict[str, Path]:
    """Two versions of `alpha` in two variants' folders (2.0 for Python 2 only), and a
    `Beta_Pkg`, whose project name pip normalizes to beta-pkg."""
    return {
        "alpha-1.0": tagged_wheel(store / "tf2.21-py3.11-a", "alpha", "py3-none-any",
                                  "Requires-Python: >=3.8\n", "1.0"),
        "alpha-2.0": tagged_wheel(store / "tf2.22-py3.11-a", "alpha", "py3-none-any",
                                  "Requires-Python: <3\n", "2.0"),
        "beta": tagged_wheel(store / "tf2.21-py3.11-b", "Beta_Pkg", "py3-none-any", "", "0.5"),
    }  # fmt: skip


def test_index_lists_every_wheel_and_how_to_install_from_it(tmp_path: Path) -> None:
    store = tmp_path / "wheels"
    wheels = store_of_wheels(store)
    proc = run_tfbuild("index", cwd=tmp_path)  # STORE defaults to ./wheels
    assert proc.returncode == 0, proc.stderr
    root = (store / "simple").resolve()
    assert proc.stdout.splitlines() == [
        f"indexed 3 wheels of 2 projects in {root}",
        f"  alpha: {wheels['alpha-1.0'].name}",
        f"  alpha: {wheels['alpha-2.0'].name}",
        f"  beta-pkg: {wheels['beta'].name}",
        f"pip install --index-url {root.as_uri()}/ PROJECT==VERSION",
    ]
    said = run_tfbuild("index", str(store), "--format", "json")
    assert said.returncode == 0, said.stderr
    assert json.loads(said.stdout) == {
        "index": str(root),
        "url": f"{root.as_uri()}/",
        "wheels": [
            {"project": "alpha", "wheel": wheels["alpha-1.0"].name},
            {"project": "alpha", "wheel": wheels["alpha-2.0"].name},
            {"project": "beta-pkg", "wheel": wheels["beta"].name},
        ],
        "left_out": [],
    }
    old = run_tfbuild("index", str(store), "--json")  # the old spelling, kept for scripts
    assert old.returncode == 0 and json.loads(old.stdout) == json.loads(said.stdout)


def test_each_link_carries_the_wheels_sha256_and_requires_python(tmp_path: Path) -> None:
    store = tmp_path / "wheels"
    wheels = store_of_wheels(store)
    assert run_tfbuild("index", str(store)).returncode == 0
    page = (store / "simple" / "alpha" / "index.html").read_text()
    links = dict(re.findall(r'<a href="([^"]+)"([^>]*)>', page))
    for key, requires in (("alpha-1.0", "&gt;=3.8"), ("alpha-2.0", "&lt;3")):
        wheel = wheels[key]
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        href = f"../../{wheel.parent.name}/{wheel.name}#sha256={digest}"
        assert links[href] == f' data-requires-python="{requires}"'
    top = (store / "simple" / "index.html").read_text()
    assert re.findall(r'<a href="([^"]+)"', top) == ["alpha/", "beta-pkg/"]


def test_pip_installs_from_the_index_the_newest_wheel_for_this_python(tmp_path: Path) -> None:
    """pip, pointed at the index alone (no configuration, no other index or links): alpha 2.0
    is for Python 2 only, so it takes 1.0, checking its sha256; beta-pkg by its normalized
    name."""
    store = tmp_path / "wheels"
    wheels = store_of_wheels(store)
    assert run_tfbuild("index", str(store)).returncode == 0
    url = (store / "simple").resolve().as_uri() + "/"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull
    got = tmp_path / "got"
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", "--index-url", url, "--dest", str(got),
         "alpha", "beta-pkg"],
        check=True, env=env, timeout=120,
    )  # fmt: skip
    assert sorted(p.name for p in got.iterdir()) == sorted(
        [wheels["alpha-1.0"].name, wheels["beta"].name]
    )


def test_index_forgets_a_project_no_longer_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "wheels"
    wheels = store_of_wheels(store)
    assert run_tfbuild("index", str(store)).returncode == 0
    assert (store / "simple" / "beta-pkg" / "index.html").is_file()
    wheels["beta"].unlink()
    proc = run_tfbuild("index", str(store))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("indexed 2 wheels of 1 projects")
    assert not (store / "simple" / "beta-pkg").exists()
    assert "beta-pkg" not in (store / "simple" / "index.html").read_text()


def test_index_of_a_store_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    proc = run_tfbuild("index", cwd=tmp_path)
    assert proc.returncode == 64
    assert proc.stderr == "tfbuild: wheels: no such wheel store (build or fetch something first)\n"
    assert not (tmp_path / "wheels").exists()


def test_ci_github_runs_a_bench_job_per_runner_named_else_on_ubuntu_latest(
    tmp_path: Path,
) -> None:
    def runners(*args: str) -> list[str]:
        proc = run_tfbuild("ci", "github", "--out", WORKFLOW, *args, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"wrote {WORKFLOW}\n")
        workflow = yaml.safe_load((tmp_path / WORKFLOW).read_text())
        include = workflow["jobs"]["bench"]["strategy"]["matrix"]["include"]
        return [entry["runner"] for entry in include]

    assert runners() == ["ubuntu-latest"]
    assert runners("--bench-runner", "big-x86", "--bench-runner", "arm-ish") == [
        "big-x86",
        "arm-ish",
    ]


def test_ci_github_check_says_whether_the_file_is_what_it_would_write(tmp_path: Path) -> None:
    """--check never writes: exit 0 when the workflow is what the same options generate,
    exit 13 (with how to regenerate it) when it was edited or other options made it."""
    made = run_tfbuild("ci", "github", "--out", WORKFLOW, "--bench-runner", "r1", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    path = tmp_path / WORKFLOW
    text = path.read_text()
    same = run_tfbuild("ci", "github", "--out", WORKFLOW, "--bench-runner", "r1", "--check",
                       cwd=tmp_path)  # fmt: skip
    assert same.returncode == 0 and same.stdout == f"{WORKFLOW} is current\n", same.stderr
    stale = (
        f"tfbuild: {WORKFLOW} is not what `tfbuild ci github` generates from matrix.yaml now; "
        "regenerate it with the same command without --check\n"
    )
    other = run_tfbuild("ci", "github", "--out", WORKFLOW, "--check", cwd=tmp_path)
    assert other.returncode == 13 and other.stderr == stale
    path.write_text(text.replace("runner: r1", "runner: r2"))
    edited = run_tfbuild("ci", "github", "--out", WORKFLOW, "--bench-runner", "r1", "--check",
                         cwd=tmp_path)  # fmt: skip
    assert edited.returncode == 13 and edited.stderr == stale
    assert path.read_text() == text.replace("runner: r1", "runner: r2")  # left as it was


def test_ci_github_refuses_a_mistaken_option_before_writing_anything(tmp_path: Path) -> None:
    profile = tmp_path / "missing.json"
    for args, code, said in (
        (("--fail-above", "5"), 64, "tfbuild: --fail-above '5': a number without % is a "
         "fraction (0.05 is 5%); did you mean 5%?"),
        (("--bench-host", "runner-a"), 64, "tfbuild: --bench-host 'runner-a': expected "
         "RUNNER=PROFILE.json"),
        (("--bench-host", "=profile.json"), 64, "tfbuild: --bench-host '=profile.json': "
         "expected RUNNER=PROFILE.json"),
        (("--bench-host", f"runner-a={profile}"), 3, f"tfbuild: {profile}: cannot read (No such "
         "file or directory)"),
        (("--workload", str(tmp_path / "model")), 64, f"tfbuild: --workload {tmp_path / 'model'}:"
         " the bench jobs read it from their checkout of this repository; give its path "
         "relative to the repository's root"),
        (("--workload", "../model"), 64, "tfbuild: --workload ../model: the bench jobs read it "
         "from their checkout of this repository; give its path relative to the repository's "
         "root"),
        (("--publish", "s3"), 64, "Invalid value for '--publish': 's3' is not 'pages'."),
    ):  # fmt: skip
        proc = run_tfbuild("ci", "github", "--out", WORKFLOW, *args, cwd=tmp_path)
        assert proc.returncode == code, (args, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert not (tmp_path / ".github").exists(), args


def test_ci_github_takes_a_saved_profile_for_a_bench_runner(tmp_path: Path) -> None:
    """A readable profile (`tfbuild detect --output`) is accepted and the workflow names the
    runner it belongs to."""
    profile = tmp_path / "hosts" / "haswell.json"
    profile.parent.mkdir()
    saved = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--format", "json", "-o",
                        str(profile))  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    proc = run_tfbuild("ci", "github", "--out", WORKFLOW, "--bench-runner", "haswell-box",
                       "--bench-host", "haswell-box=hosts/haswell.json", cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    workflow = yaml.safe_load((tmp_path / WORKFLOW).read_text())
    include = workflow["jobs"]["bench"]["strategy"]["matrix"]["include"]
    assert [entry["runner"] for entry in include] == ["haswell-box"]
    assert "hosts/haswell.json" in (tmp_path / WORKFLOW).read_text()


def nightly(**given: Any) -> GithubSettings:
    """`ci github`'s settings with these options, the others at their defaults."""
    defaults = GithubSettings(
        matrix=None, out=Path(WORKFLOW), install="pip install .", build_runner=None,
        bench_runners=("ubuntu-latest",), bench_hosts={}, fail_above="5%", publish=False,
        check=False, workload=None,
    )  # fmt: skip
    return dataclasses.replace(defaults, **given)


def test_the_workflow_is_generated_from_the_options_as_the_jobs_read_them() -> None:
    """The matrix as given (none: matrix.yaml, found in the checkout), paths as strings with
    forward slashes; the other options as they are."""
    plain = nightly().generator()
    assert (plain.matrix_file, plain.out, plain.workload) == ("matrix.yaml", WORKFLOW, None)
    generator = nightly(
        matrix=Path("ci/matrix.yaml"), workload=Path("models/gru.keras"), publish=True,
        bench_runners=("ubuntu-latest", "skx"), bench_hosts={"skx": "hosts/skx.json"},
        build_runner="big", fail_above="3%", install="pip install -e .",
    ).generator()  # fmt: skip
    assert generator.matrix_file == "ci/matrix.yaml" and generator.workload == "models/gru.keras"
    assert generator.bench_runners == ("ubuntu-latest", "skx") and generator.publish is True
    assert generator.bench_hosts == {"skx": "hosts/skx.json"} and generator.build_runner == "big"
    assert (generator.fail_above, generator.install) == ("3%", "pip install -e .")


def test_github_runs_workflows_only_from_under_github_workflows(tmp_path: Path) -> None:
    assert outside_workflows(tmp_path / ".github" / "workflows" / "nightly.yml") is None
    assert outside_workflows(tmp_path / "ci" / ".github" / "workflows" / "n.yml") is None
    said = outside_workflows(tmp_path / ".github" / "nightly.yml")
    assert said == (
        f"{tmp_path / '.github' / 'nightly.yml'} is not under .github/workflows/, the only place "
        "GitHub runs workflows from; commit it there (any name: its drift check reads the path "
        "it is committed at)"
    )


def test_check_passes_the_workflow_as_generated_and_names_the_matrix_when_it_is_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / ".github" / "workflows" / "nightly.yml"
    settings = nightly(matrix=Path("matrix.yaml"), out=out, check=True)
    text = workflow.render(load_matrix(REPO / "matrix.yaml"), settings.generator())
    out.parent.mkdir(parents=True)
    out.write_text(text)
    check_current(settings, text)
    assert capsys.readouterr().out == f"{out} is current\n"
    out.write_text(text + "# edited\n")
    with pytest.raises(StaleOutput) as stale:
        check_current(settings, text)
    assert str(stale.value) == (
        f"{out} is not what `tfbuild ci github` generates from matrix.yaml now; regenerate it "
        "with the same command without --check"
    )
