"""The generated nightly workflow, replayed on this machine step by step (support/ghactions.py):
plan -> build (the toy recipe, for real, on the Docker engine) -> bench on two runner classes
-> compare and the regression gate, with artifacts and caches as folders.

Stand-ins, because they cannot run here: GitHub itself (support/ghactions.py), `sudo`
(the tests run as root), pip's isolated build environment (each `pip install .` builds with
the test environment's hatchling), and the benchmark: two runner classes are two saved host
profiles (a Haswell and a Skylake-SP Xeon), and `tfbuild bench` in the bench job writes a
prepared results file for its runner's class instead of measuring (a real bench session on
this machine is tests/integration/test_bench.py). The second nights reuse the first night's builds.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO
from support.ghactions import Replay
from support.synthetic import session, write

from tfbuild.results.model import Results, RunFailure

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WORKFLOW = ".github/workflows/tfbuild-nightly.yml"
RUNNERS = {
    "runner-a": "haswell-xeon-e5-2680v3.cpuinfo",
    "runner-b": "skylake-sp-xeon-gold-6132.cpuinfo",
}
MARCH = {"runner-a": "haswell", "runner-b": "skylake-avx512"}
BENCH_SHIM = """#!/bin/bash
# `tfbuild bench` on a simulated runner: its prepared results file; everything else is tfbuild.
if [ "$1" = bench ]; then
  printf '%s\\n' "$@" > "$REPLAY_DIR/bench-args-$RUNNER_NAME"
  results=results
  while [ $# -gt 0 ]; do [ "$1" = --results ] && results=$2; shift; done
  mkdir -p "$results"
  cp "$REPLAY_DIR/tonight/$RUNNER_NAME.json" "$results/"
  exit 0
fi
exec "$VENV/bin/tfbuild" "$@"
"""
SUDO_SHIM = """#!/bin/bash
# GitHub's runners have passwordless sudo; the tests already run as root.
[ "$1" = -E ] && shift
exec "$@"
"""


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This repository, plus a matrix of toy variants (one tuned with `march: host`), the two
    runners' saved profiles, and the workflow generated for them."""
    repo = tmp_path_factory.mktemp("repo")
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=False
    )
    names = tracked.stdout.split() if tracked.returncode == 0 else []
    assert names, "the replay copies the repository's tracked files"
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, repo / name)
    toy = repo / "toy"
    shutil.copytree(FIXTURES / "toy-recipe", toy, dirs_exist_ok=True)
    matrix = (toy / "matrix.yaml").read_text()
    matrix = matrix.replace(
        "  - {name: avx512, source: bazel, cpu_flags: [avx512f]}\n",
        "  - {name: tuned, source: bazel, march: host}\n",
    )
    assert "name: tuned" in matrix
    (toy / "matrix.yaml").write_text(matrix)
    for runner, cpuinfo in RUNNERS.items():
        out = repo / "hosts" / f"{runner}.json"
        proc = run_tfbuild("detect", "--cpuinfo", str(FIXTURES / "cpuinfo" / cpuinfo),
                           "--output", str(out))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    args = ["ci", "github", "--matrix", "toy/matrix.yaml", "--out", WORKFLOW]
    for runner in RUNNERS:
        args += ["--bench-runner", runner, "--bench-host", f"{runner}=hosts/{runner}.json"]
    proc = run_tfbuild(*args, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    return repo


@pytest.fixture(scope="module")
def python_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """actions/setup-python's interpreter: a fresh venv (the test environment's packages
    visible, so `pip install .` builds and installs only tfbuild itself)."""
    venv = tmp_path_factory.mktemp("setup-python") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                   check=True)  # fmt: skip
    return venv / "bin"


def workflow(repository: Path) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((repository / WORKFLOW).read_text())
    return document


def tonight(effects: dict[str, Any], seed: int, crash: str | None = None) -> dict[str, Results]:
    """The results each runner's bench job writes: runner-a's and runner-b's classes."""
    docs = {}
    for i, (runner, cpuinfo) in enumerate(RUNNERS.items()):
        doc = session(effects.get(runner, {"tuned:default": 1.1}), seed=seed + i,
                      cpuinfo=cpuinfo, session_id=f"night-{seed}-{runner}")  # fmt: skip
        if crash and runner == "runner-a":
            reason = (
                "this build uses CPU instructions this machine lacks (killed by SIGILL, signal 4)"
            )
            sigill = RunFailure(kind="sigill", signal=4, reason=reason)
            runs = tuple(
                replace(run, status="failed", benchmarks={}, failure=sigill)
                if run.config == crash
                else run
                for run in doc.runs
            )
            doc = replace(doc, runs=runs)
        docs[runner] = doc
    return docs


class Night:
    def __init__(self, repository: Path, python_bin: Path, root: Path, run_id: int) -> None:
        self.root = root
        shims = root / "shims"
        shims.mkdir(parents=True)
        for name, text in (("tfbuild", BENCH_SHIM), ("sudo", SUDO_SHIM)):
            (shims / name).write_text(text)
            (shims / name).chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TFBUILD_")}
        env.update(REPLAY_DIR=str(root), VENV=str(python_bin.parent), TFBUILD_TF_SOURCE="toy/src")
        # `pip install .` builds with the test environment's hatchling instead of fetching it
        # into a fresh build environment for each of the ~20 jobs (3.5 s an install, not 7).
        env.update(PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
        self.replay = Replay(
            workflow=workflow(repository),
            repository=repository,
            root=root / "jobs",
            python_bin=python_bin,
            caches=root / "caches",
            artifacts=root / "artifacts",
            run_id=run_id,
            secrets={"TFBUILD_BAZEL_REMOTE_HEADER": "Authorization=Bearer s3cr3t"},
            extra_path=shims,
            env=env,
        )

    def results(self, docs: dict[str, Results]) -> None:
        for runner, doc in docs.items():
            write(self.root / "tonight" / f"{runner}.json", doc)

    def run(self, *jobs: str) -> None:
        for job in jobs:
            self.replay.run_job(job)

    def job(self, name: str) -> Any:
        return self.replay.results[name]


def _log(runs: Any) -> str:
    return "\n".join(f"--- {r.job} {r.matrix} {s.name}: {s.outcome}\n{s.output[-3000:]}"
                     for r in runs for s in r.steps)  # fmt: skip


def test_workflow_secrets_and_installs(repository: Path) -> None:
    """The secret reaches the build step only; every install is of this repository."""
    flow = workflow(repository)
    for job_id, job in flow["jobs"].items():
        assert "secrets." not in json.dumps(job.get("env", {}))
        for step in job["steps"]:
            text = json.dumps(step)
            if job_id == "build" and step.get("name") == "Build":
                assert "secrets.TFBUILD_BAZEL_REMOTE_HEADER" in json.dumps(step["env"])
            else:
                assert "secrets." not in text, (job_id, step)
            for line in str(step.get("run", "")).splitlines():
                words = shlex.split(line)
                if words[:2] == ["pip", "install"]:
                    assert words[2:] == ["."], line
    checker = shutil.which("check-jsonschema")
    assert checker, "pip install '.[test]' provides check-jsonschema"
    valid = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(repository / WORKFLOW)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_nightly_workflow_replayed(
    repository: Path, python_bin: Path, base_image: str, tmp_path: Path
) -> None:
    first = Night(repository, python_bin, tmp_path / "night-1", run_id=1)
    first.results(tonight({}, seed=10))
    first.run("plan", "build", "bench", "compare")
    (plan,) = first.job("plan")
    assert plan.ok, _log([plan])
    assert plan.outputs["run"] == "true"
    release = plan.outputs["tensorflow"]
    latest = json.loads(run_tfbuild("matrix", "--matrix", str(repository / "toy/matrix.yaml"),
                                    "--latest", "--json").stdout)["latest"]  # fmt: skip
    assert release == latest["build"] != "2.17.1", "a newer release than the matrix's default"

    builds = first.job("build")
    assert [(b.matrix["variant"], b.matrix["for"]) for b in builds] == [
        ("avx2-fma", "any"), ("tuned", "runner-a"), ("tuned", "runner-b"),
    ]  # fmt: skip
    assert all(b.ok for b in builds), _log(builds)
    for b in builds:
        artifact = first.root / "artifacts" / f"wheel-{b.matrix['for']}-{b.matrix['variant']}"
        (manifest_path,) = artifact.glob("*/manifest.json")
        manifest = json.loads(manifest_path.read_text())
        assert manifest["tensorflow"] == release  # the release the plan found, not 2.17.1
        if b.matrix["variant"] == "tuned":
            assert f"-march={MARCH[b.matrix['for']]}" in manifest["copts"], manifest["copts"]
    benches = first.job("bench")
    assert [b.matrix["runner"] for b in benches] == list(RUNNERS)
    assert all(b.ok for b in benches), _log(benches)
    for runner in RUNNERS:
        args = (first.root / f"bench-args-{runner}").read_text().split()
        assert args[args.index("--tensorflow") + 1] == release and "--skip" not in args
    minor = ".".join(release.split(".")[:2])
    for n, runner in enumerate(RUNNERS):
        folder = first.root / "jobs" / f"bench-{n}" / "work" / "wheels"
        (tuned,) = folder.glob("*-tuned/manifest.json")
        assert f"-march={MARCH[runner]}" in json.loads(tuned.read_text())["copts"]
        assert sorted(p.name for p in folder.iterdir() if p.is_dir()) == [
            f"tf{minor}-py3.11-avx2-fma", f"tf{minor}-py3.11-tuned"
        ]  # fmt: skip
    (compare,) = first.job("compare")
    assert compare.ok, _log([compare])
    summary = (first.root / "jobs" / "compare-0" / "summary").read_text()
    assert "Against the previous results" not in summary and "Gold 6132" in summary
    kept = sorted(p.name for p in (first.root / "caches" / "tfbuild-results-1").iterdir())
    assert kept == ["runner-a.json", "runner-b.json"]

    def second(name: str, docs: dict[str, Results], run_id: int) -> Any:
        night = Night(repository, python_bin, tmp_path / name, run_id=run_id)
        shutil.copytree(first.root / "caches", night.root / "caches")
        night.root.joinpath("artifacts").mkdir()
        for artifact in (first.root / "artifacts").glob("wheel-*"):
            shutil.copytree(artifact, night.root / "artifacts" / artifact.name)
        night.results(docs)
        night.run("plan")
        night.replay.results["build"] = builds
        night.run("bench", "compare")
        (job,) = night.job("compare")
        return job

    unchanged = second("unchanged", tonight({}, seed=20), run_id=2)
    assert unchanged.ok, _log([unchanged])
    gate = unchanged.step("Report and regression gate (same machine class)")
    assert gate.outcome == "success"
    summary = (tmp_path / "unchanged" / "jobs" / "compare-0" / "summary").read_text()
    assert summary.count("Against the previous results") == 1
    assert "Gold 6132" in summary and "E5-2680 v3" in summary  # both classes compared

    crashed = second("crash", tonight({}, seed=30, crash="tuned:default"), run_id=3)
    gate = crashed.step("Report and regression gate (same machine class)")
    assert gate.outcome == "failure", _log([crashed])
    assert (
        "tuned:default: no results in the new results (round 1: this build uses CPU "
        "instructions this machine lacks (killed by SIGILL, signal 4))" in gate.output
    )
    assert "E5-2680 v3" in gate.output.split("tuned:default: no results", 1)[1].splitlines()[0]
    assert crashed.step("Keep tonight's results for tomorrow (per machine class)").outcome \
        == "skipped"  # fmt: skip

    slower = second("slower", tonight({"runner-b": {"tuned:default": 0.99}}, seed=40), run_id=4)
    gate = slower.step("Report and regression gate (same machine class)")
    assert gate.outcome == "failure", _log([slower])
    causes = gate.output.split("cause(s):\n", 1)[1].splitlines()
    assert causes and all(c.strip().startswith("tuned:default ") for c in causes), causes
    assert all("slower than 5% allows" in c and "Gold 6132" in c for c in causes)
