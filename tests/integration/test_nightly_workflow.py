"""The generated nightly workflow, replayed step by step (support/ghactions.py) in a clean
container that holds only what GitHub's hosted Ubuntu 24.04 runner image lists
(support/runner.py): plan -> build (the toy recipe, for real, on the Docker engine, from a base
image pulled by digest) -> bench on two runner classes -> compare and the regression gate, with
artifacts and caches as folders. The plan finds a newer release than the toy matrix's 2.17.1;
its avx2-fma variant asks for --config=noaws, which TensorFlow dropped after 2.17, so it keeps
building 2.17.1 (as mkl-avx2 keeps 2.21 once 2.22 is out) while the others move. A step
that calls a command the runner image does not have fails, as the base-image step generated
before did (it made the image with debootstrap).

Stand-ins, because they cannot run here: GitHub itself (support/ghactions.py), the runner image
(a container of the Debian base image whose PATH holds only the listed commands; see
support/runner.py for what stands in for what), Docker Hub (a registry on this machine, holding
the debootstrapped Debian image, support/registry.py), and the benchmark: two runner classes
are two saved host profiles (a Haswell and a Skylake-SP Xeon), and `tfbuild bench` in the bench
job writes a prepared results file for its runner's class instead of measuring (a real bench
session on this machine is tests/integration/test_bench.py). The jobs share one runner
container and its setup-python venv; the second nights reuse the first night's plan
and builds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_tfbuild
from support.docker import containers, image_attrs
from support.env import FIXTURES, REPO
from support.ghactions import Replay
from support.registry import push, registry
from support.runner import PYTHON_BIN, SYSTEM_PATH, listed, runner_image
from support.runner import environment as runner_environment
from support.runner import runner as runner_container
from support.serve import served
from support.synthetic import session, write

from tfbuild.ci.settings import RESULTS_BRANCH
from tfbuild.files import sha256_of
from tfbuild.results.model import Results, RunFailure, is_aa

pytestmark = [pytest.mark.docker, pytest.mark.slow]

WORKFLOW = ".github/workflows/tfbuild-nightly.yml"
STANDARD = ".github/workflows/standard-runners.yml"
"""The same workflow generated without a build runner: no build job."""
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
def pinned(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Docker Hub's stand-in, up while the module runs: the Debian base image in a registry on
    this machine, as ADDRESS/debian@sha256:DIGEST."""
    with registry(tmp_path_factory.mktemp("registry")) as address:
        yield push(base_image, address, "debian:bookworm")


@pytest.fixture(scope="module")
def replay_base() -> Iterator[str]:
    """The tag the replay's matrix names for its base images: on no engine before the replay,
    as on a fresh hosted runner."""
    tag = f"tfbuild-replay/base-{uuid.uuid4().hex[:10]}:bookworm"
    yield tag
    subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, check=False)


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory, pinned: str, replay_base: str) -> Path:
    """This repository, plus a matrix of toy variants (one tuned with `march: host`, base
    images from the registry by digest), the two runners' saved profiles, and the workflow
    generated for them."""
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
    ).replace("cpu_flags: [avx2, fma]}", "cpu_flags: [avx2, fma], configs: [noaws]}")
    assert "name: tuned" in matrix and "configs: [noaws]" in matrix
    with (toy / "src" / ".bazelrc").open("a") as bazelrc:  # as TensorFlow's up to 2.17
        bazelrc.write("build:noaws --define=no_aws_support=true\n")
    images = '  base_images: {build: "tfbuild/base:bookworm", runtime: "tfbuild/base:bookworm"}\n'
    assert images in matrix
    matrix = matrix.replace(
        images,
        f'  base_images: {{build: "{replay_base}", runtime: "{replay_base}", from: "{pinned}"}}\n',
    )
    (toy / "matrix.yaml").write_text(matrix)
    for runner, cpuinfo in RUNNERS.items():
        out = repo / "hosts" / f"{runner}.json"
        proc = run_tfbuild("detect", "--cpuinfo", str(FIXTURES / "cpuinfo" / cpuinfo),
                           "--output", str(out))  # fmt: skip
        assert proc.returncode == 0, proc.stderr
    common = ["ci", "github", "--matrix", "toy/matrix.yaml", "--install", LOCKED]
    for runner in RUNNERS:
        common += ["--bench-runner", runner, "--bench-host", f"{runner}=hosts/{runner}.json"]
    built = ["--build-runner", "builder", "--publish", "pages"]
    for path, extra in ((WORKFLOW, built), (STANDARD, [])):
        proc = run_tfbuild(*common, *extra, "--out", path, cwd=repo)
        assert proc.returncode == 0, proc.stderr
    return repo


@pytest.fixture(scope="module")
def standin(base_image: str, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The runner image's stand-in (support/runner.py)."""
    return runner_image(base_image, wheelhouse, tmp_path_factory.mktemp("runner"))


@pytest.fixture
def container(standin: str, tmp_path: Path) -> Iterator[str]:
    """A runner container for one test's nights, the test's folder mounted where it is."""
    with runner_container(standin, [tmp_path]) as started:
        yield started


def workflow(repository: Path, path: str = WORKFLOW) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((repository / path).read_text())
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


def server(folder: Path) -> Path:
    """GitHub's side of the repository's git remote: a bare repository where the replay's
    GITHUB_SERVER_URL and GITHUB_REPOSITORY name it (the results branch is pushed there)."""
    bare = folder / "server" / "octo-org" / "tfbuild.git"
    if not bare.exists():
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    return bare


def served_wheel(site: Path, requirement: str, into: Path) -> Path:
    """The wheel `pip download` gets for `requirement` from the site's index, the site served
    over HTTP as GitHub Pages serves it (static files)."""
    with served(site) as url:
        download = [sys.executable, "-m", "pip", "download", "--isolated", "--no-deps",
                    "--no-cache-dir", "--index-url", f"{url}wheels/simple/", "-d", str(into),
                    requirement]  # fmt: skip
        proc = subprocess.run(download, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (wheel,) = into.glob("*.whl")
    return wheel


def branch_files(bare: Path, tree: str = RESULTS_BRANCH) -> list[str]:
    """The names in a tree of the remote: the branch's top level, or `BRANCH:history`."""
    listed = subprocess.run(["git", f"--git-dir={bare}", "ls-tree", "--name-only", tree],
                            capture_output=True, text=True, check=True)  # fmt: skip
    return sorted(listed.stdout.split())


def branch_text(bare: Path, path: str) -> str:
    return subprocess.run(["git", f"--git-dir={bare}", "show", f"{RESULTS_BRANCH}:{path}"],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


def branch_blobs(bare: Path) -> dict[str, str]:
    """The branch's top-level files (the gate's reference) -> their blob ids."""
    listed = subprocess.run(["git", f"--git-dir={bare}", "ls-tree", RESULTS_BRANCH],
                            capture_output=True, text=True, check=True)  # fmt: skip
    return {
        line.split("\t")[1]: line.split()[2]
        for line in listed.stdout.splitlines()
        if line.split()[1] == "blob" and line.endswith(".json")
    }


LOCKED = (
    "pip install --require-hashes -r .github/tfbuild-requirements.txt && "
    "pip install --no-deps --no-build-isolation ."
)
"""How the committed nightly installs tfbuild (test_run.py checks the committed file says so)."""
PUSH = f"The history, and a passing night's reference, for the {RESULTS_BRANCH} branch"


class Night:
    def __init__(
        self, repository: Path, container: str, root: Path, run_id: int,
        remote: Path | None = None, path: str = WORKFLOW,
    ) -> None:  # fmt: skip
        self.root = root
        shims = root / "shims"
        shims.mkdir(parents=True)
        for name, text in (("tfbuild", BENCH_SHIM), ("sudo", SUDO_SHIM)):
            (shims / name).write_text(text)
            (shims / name).chmod(0o755)
        env = runner_environment()
        env.update(REPLAY_DIR=str(root), VENV=str(PYTHON_BIN.parent), TFBUILD_TF_SOURCE="toy/src")
        self.replay = Replay(
            workflow=workflow(repository, path),
            path=path,
            repository=repository,
            root=root / "jobs",
            python_bin=PYTHON_BIN,
            caches=root / "caches",
            artifacts=root / "artifacts",
            run_id=run_id,
            server_url=f"file://{(remote or server(root)).parents[1]}",
            secrets={"TFBUILD_BAZEL_REMOTE_HEADER": "Authorization=Bearer s3cr3t"},
            extra_path=shims,
            env=env,
            container=container,
            system_path=SYSTEM_PATH,
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
    """The secret reaches the build step only; every install is the lock's (hash-checked),
    then this repository's, with nothing else fetched."""
    flow = workflow(repository)
    installs = 0
    for job_id, job in flow["jobs"].items():
        assert "secrets." not in json.dumps(job.get("env", {}))
        for step in job["steps"]:
            text = json.dumps(step)
            if job_id == "build" and step.get("name") == "Build":
                assert "secrets.TFBUILD_BAZEL_REMOTE_HEADER" in json.dumps(step["env"])
            else:
                assert "secrets." not in text, (job_id, step)
            run = " ".join(str(step.get("run", "")).split())
            if run.startswith("pip install"):
                assert run == LOCKED, (job_id, run)  # the lock, hash-checked; then tfbuild
                installs += 1
            assert not re.search(r"pip install (?!--require-hashes|--no-deps)", run), run
    assert installs == len(flow["jobs"]) - 2  # every job but deploy (no steps) and push
    checker = shutil.which("check-jsonschema")
    assert checker, "pip install '.[test]' provides check-jsonschema"
    valid = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(repository / WORKFLOW)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_the_runner_standin_has_only_listed_commands(
    repository: Path, container: str, tmp_path: Path
) -> None:
    """Every command on the stand-in's PATH is on the runner image's list, and one this
    Debian has that the list does not is not found by a step."""
    on_path = subprocess.run(["docker", "exec", container, "ls", SYSTEM_PATH],
                             capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert {"bash", "docker", "python3", "tar", "apt-get"} <= set(on_path) <= set(listed())
    assert "debootstrap" not in listed() and "debconf-set-selections" not in listed()
    night = Night(repository, container, tmp_path / "probe", run_id=8)
    here = night.replay._shell("command -v debconf-set-selections", tmp_path, {"PATH": SYSTEM_PATH})
    assert here.returncode == 1, here.stdout
    anywhere = night.replay._shell("ls /usr/bin/debconf-set-selections", tmp_path, {})
    assert anywhere.returncode == 0, "the command is in the image, only not on the runner's PATH"


def test_the_base_image_step_generated_before_fails_on_the_runner_image(
    repository: Path, container: str, tmp_path: Path
) -> None:
    """The step generated before, `sudo -E "$(command -v tfbuild)" base-image`, made the image
    with debootstrap, which the runner image does not have. Replayed in the same stand-in (as
    today's command with --debootstrap, which does the same, for a tag of its own that no
    engine has, as on a fresh runner, whatever the other tests made before), the step fails
    for want of it and the build is skipped; the same job as generated now is
    test_the_first_night_builds_the_release_the_plan_found."""
    fresh = f"tfbuild-replay/old-base-{uuid.uuid4().hex[:10]}:bookworm"
    assert image_attrs(fresh) is None
    old = workflow(repository)
    build = old["jobs"]["build"]
    (step,) = [s for s in build["steps"] if s.get("name") == "Base image"]
    assert step["run"] == "tfbuild base-image --matrix toy/matrix.yaml"
    step["run"] = (
        f'sudo -E "$(command -v tfbuild)" base-image {fresh} --debootstrap --matrix toy/matrix.yaml'
    )
    build["strategy"]["matrix"]["include"] = build["strategy"]["matrix"]["include"][:1]
    night = Night(repository, container, tmp_path / "old", run_id=9)
    night.replay.workflow = old
    night.run("plan", "build")
    (job,) = night.job("build")
    base = job.step("Base image")
    assert base.outcome == "failure", _log([job])
    assert f"cannot make {fresh}: --debootstrap, and debootstrap is not installed" in base.output
    assert job.step("Build").outcome == "skipped"
    assert image_attrs(fresh) is None


@dataclass
class FirstNight:
    """The first night, replayed once for the tests after it: its plan and build jobs, the git
    remote it pushed to, and the module's folder (mounted in its runner container)."""

    night: Night
    plan: Any
    builds: list[Any]
    remote: Path
    folder: Path
    container: str


@pytest.fixture(scope="module")
def nights(standin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One runner container for the module's nights, their folder mounted where it is."""
    folder = tmp_path_factory.mktemp("nights")
    with runner_container(standin, [folder]) as started:
        yield started, folder


@pytest.fixture(scope="module")
def built_night(repository: Path, nights: tuple[str, Path]) -> FirstNight:
    """The first night's plan and build jobs, on a repository with no results branch yet."""
    container, folder = nights
    remote = server(folder)
    first = Night(repository, container, folder / "night-1", run_id=1, remote=remote)
    first.results(tonight({}, seed=10))
    first.run("plan", "build")
    (plan,) = first.job("plan")
    assert plan.ok, _log([plan])
    return FirstNight(first, plan, first.job("build"), remote, folder, container)


@pytest.fixture(scope="module")
def first_night(built_night: FirstNight) -> FirstNight:
    """The first night whole: plan -> build, then bench -> compare -> push."""
    built_night.night.run("bench", "compare", "push")
    return built_night


def test_the_first_night_builds_the_release_the_plan_found(
    repository: Path, built_night: FirstNight, pinned: str, replay_base: str
) -> None:
    first, plan = built_night.night, built_night.plan
    assert plan.outputs["run"] == "true"
    release = plan.outputs["tensorflow"]
    latest = json.loads(run_tfbuild("matrix", "--matrix", str(repository / "toy/matrix.yaml"),
                                    "--latest", "--format", "json").stdout)["latest"]  # fmt: skip
    assert release == latest["build"] != "2.17.1", "a newer release than the matrix's default"

    builds = built_night.builds
    assert [(b.matrix["variant"], b.matrix["for"]) for b in builds] == [
        ("avx2-fma", "any"), ("tuned", "runner-a"), ("tuned", "runner-b"),
    ]  # fmt: skip
    assert all(b.ok for b in builds), _log(builds)
    made = [b.step("Base image").output for b in builds]  # pulled once, then on the engine
    assert made[0].startswith(f"{replay_base}: pulled, {pinned} + python3"), made[0]
    assert all(m.startswith(f"{replay_base}: present") for m in made[1:]), made
    assert not any("debootstrap" in m for m in made)
    for b in builds:
        artifact = first.root / "artifacts" / f"wheel-{b.matrix['for']}-{b.matrix['variant']}"
        (manifest_path,) = artifact.glob("*/manifest.json")
        manifest = json.loads(manifest_path.read_text())
        if b.matrix["variant"] == "avx2-fma":  # --config=noaws: gone after 2.17, so it stays
            assert manifest["tensorflow"] == "2.17.1" and manifest["configs"] == ["noaws"]
            assert "--config=noaws" in manifest["bazel_command"]
            assert f"note: variant 'avx2-fma': TensorFlow {release} (--tensorflow) has no " \
                "--config=noaws (its .bazelrc defines it up to 2.17): it builds 2.17.1" \
                in b.step("Build").output  # fmt: skip
        else:
            assert manifest["tensorflow"] == release  # the release the plan found, not 2.17.1
        if b.matrix["variant"] == "tuned":
            assert f"-march={MARCH[b.matrix['for']]}" in manifest["copts"], manifest["copts"]
    for build in builds:  # each build job saved its bazel cache, under a key of this run
        (saved,) = (first.root / "caches").glob(
            f"bazel-{build.matrix['variant']}-{build.matrix['for']}-*-1-1"
        )
        assert (saved / "toy" / "builds").is_file()


def test_the_first_night_benches_what_it_built_compares_and_pushes(
    first_night: FirstNight,
) -> None:
    """The bench job of each runner class gets the release the plan found and the builds for
    its class; compare finds no results branch to gate against; push starts the branch, with
    the history of each machine class."""
    first, plan = first_night.night, first_night.plan
    release = plan.outputs["tensorflow"]
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
            "tf2.17-py3.11-avx2-fma", f"tf{minor}-py3.11-tuned"
        ]  # fmt: skip
    (compare,) = first.job("compare")
    assert compare.ok, _log([compare])
    summary = (first.root / "jobs" / "compare-0" / "summary").read_text()
    assert "Against the previous results" not in summary and "Gold 6132" in summary
    assert f"First night: no {RESULTS_BRANCH} branch yet, so nothing to gate against" in summary
    assert branch_files(first_night.remote) == [
        "history",
        "history.html",
        "runner-a.json",
        "runner-b.json",
    ]
    assert branch_files(first_night.remote, f"{RESULTS_BRANCH}:history") == [
        "night-10-runner-a.json.gz",
        "night-10-runner-b.json.gz",
    ]
    page = branch_text(first_night.remote, "history.html")
    assert page.count("<h2>") == 2 and page.count("1 night,") == 2  # one per machine class


def test_a_build_out_of_time_keeps_its_cache_and_a_rerun_replaces_its_wheel(
    first_night: FirstNight,
) -> None:
    """Re-run failed jobs: a build that runs out of time (here the Build step's limit lasts
    seconds) still saves its bazel cache, under its attempt's key, and stops its container;
    the next attempt passes, its upload replacing the artifact of the first (GitHub refuses a
    second artifact of one name in a run, 409 Conflict, unless told to overwrite)."""
    first = first_night.night
    replay = first.replay
    replay.run_attempt, replay.minute_s = 2, 0.005  # the Build step stops after 1.7 s
    try:
        (timed_out,) = replay.run_job("build", only=[0])
    finally:
        replay.run_attempt, replay.minute_s = 3, 60.0
    assert timed_out.matrix["variant"] == "avx2-fma"
    build_step = timed_out.step("Build")
    assert build_step.outcome == "failure", _log([timed_out])
    assert build_step.output.endswith("##[error]The action has timed out.")
    save = timed_out.step("Save the bazel caches (also when the build failed or timed out)")
    assert save.outcome == "success"
    (again,) = (first.root / "caches").glob("bazel-avx2-fma-any-*-1-2")
    assert "avx2-fma " in (again / "toy" / "builds").read_text()  # restored, then saved
    store = first.root / "jobs" / "build-0" / "attempt-2" / "work" / "wheels"
    assert containers(f"org.tfbuild.store={store}", stopped=True) == []
    (rerun,) = replay.run_job("build", only=[0])
    assert rerun.ok, _log([rerun])
    artifact = first.root / "artifacts" / "wheel-any-avx2-fma"
    assert len(list(artifact.glob("*/*.whl"))) == 1


def test_a_passing_night_publishes_an_index_pip_installs_from(
    first_night: FirstNight, tmp_path: Path
) -> None:
    """Its wheels built for any runner, as an index that pip installs from over HTTP (the
    Pages site served here), beside the report."""
    first = first_night.night
    first.run("publish", "deploy")
    (publish,) = first.job("publish")
    assert publish.ok, _log([publish])
    site = first.root / "artifacts" / "github-pages"
    assert (site / "index.html").read_text().lower().startswith("<!doctype html>")
    assert "<h1>tfbuild nightly history</h1>" in (site / "history.html").read_text()
    (built,) = (first.root / "artifacts" / "wheel-any-avx2-fma").glob("*/*.whl")
    fetched = served_wheel(site, "tfbuild-probe==1.0.0+avx2.fma", tmp_path / "fetched")
    assert fetched.name == built.name and sha256_of(fetched) == sha256_of(built)


def copied_remote(first_night: FirstNight, folder: Path) -> Path:
    """A copy of the first night's git remote in `folder`, as server() lays one out."""
    shutil.copytree(first_night.remote.parents[1], folder / "server")
    return server(folder)


def second(
    repository: Path, first_night: FirstNight, name: str, docs: dict[str, Results], run_id: int,
    path: str = WORKFLOW, remote: Path | None = None,
) -> Any:  # fmt: skip
    """A later night on the first night's plan, builds and caches, and on a copy of its git
    remote (of `remote`, when given): its bench and compare jobs; the compare job."""
    first = first_night.night
    root = first_night.folder / name
    if remote is None:
        remote = copied_remote(first_night, root)
    night = Night(repository, first_night.container, root, run_id, remote, path)
    shutil.copytree(first.root / "caches", night.root / "caches")
    night.root.joinpath("artifacts").mkdir()
    for artifact in (first.root / "artifacts").glob("wheel-*"):
        shutil.copytree(artifact, night.root / "artifacts" / artifact.name)
    night.results(docs)
    night.replay.results["plan"] = [first_night.plan]  # the first night's decision and release
    night.replay.results["build"] = first_night.builds
    night.run("bench", "compare", "push")
    (job,) = night.job("compare")
    return job


def test_an_unchanged_night_passes_its_gate_on_both_machine_classes(
    repository: Path, first_night: FirstNight
) -> None:
    docs = tonight({}, seed=20)
    unchanged = second(repository, first_night, "unchanged", docs, run_id=2)
    assert unchanged.ok, _log([unchanged])
    gate = unchanged.step("Report and regression gate (same machine class)")
    assert gate.outcome == "success"
    summary = (first_night.folder / "unchanged" / "jobs" / "compare-0" / "summary").read_text()
    assert summary.count("Against the previous results") == 1
    assert "Gold 6132" in summary and "E5-2680 v3" in summary  # both classes compared
    configs = {c.key for d in docs.values() for c in d.configs if not is_aa(c.key)}
    benchmarks = {b for d in docs.values() for b in d.suite.benchmarks}
    said = f"Compared {len(configs)} configs x {len(benchmarks)} benchmarks on 2 machine classes"
    assert f"**{said}.**" in summary, summary
    bare = server(first_night.folder / "unchanged")
    assert len(branch_files(bare, f"{RESULTS_BRANCH}:history")) == 4  # two nights, two classes
    page = branch_text(bare, "history.html")
    assert page.count("2 nights, 2026-") == 2, page[:2000]


def test_a_crash_fails_the_gate_naming_the_machine_class_and_keeps_only_its_history(
    repository: Path, first_night: FirstNight
) -> None:
    """The reference stays the first night's; the crashed night joins the history, so the
    trend shows it."""
    docs = tonight({}, seed=30, crash="tuned:default")
    crashed = second(repository, first_night, "crash", docs, run_id=3)
    gate = crashed.step("Report and regression gate (same machine class)")
    assert gate.outcome == "failure", _log([crashed])
    assert (
        "tuned:default: no results in the new results (round 1: this build uses CPU "
        "instructions this machine lacks (killed by SIGILL, signal 4))" in gate.output
    )
    assert "E5-2680 v3" in gate.output.split("tuned:default: no results", 1)[1].splitlines()[0]
    assert crashed.step("Keep tonight's results for tomorrow (per machine class)").outcome \
        == "skipped"  # fmt: skip
    assert crashed.step(PUSH).outcome == "success", _log([crashed])  # for the push job
    bare = server(first_night.folder / "crash")
    assert branch_blobs(bare) == branch_blobs(first_night.remote)  # the reference as it was
    nights = branch_files(bare, f"{RESULTS_BRANCH}:history")
    assert "night-30-runner-a.json.gz" in nights and len(nights) == 4


def test_a_slower_night_fails_the_gate_on_its_machine_class(
    repository: Path, first_night: FirstNight
) -> None:
    docs = tonight({"runner-b": {"tuned:default": 0.99}}, seed=40)
    slower = second(repository, first_night, "slower", docs, run_id=4)
    gate = slower.step("Report and regression gate (same machine class)")
    assert gate.outcome == "failure", _log([slower])
    causes = gate.output.split("cause(s):\n", 1)[1].splitlines()
    assert causes and all(c.strip().startswith("tuned:default ") for c in causes), causes
    assert all("slower than 5% allows" in c and "Gold 6132" in c for c in causes)


def test_a_results_branch_emptied_by_hand_fails_the_gate_and_says_why(
    repository: Path, first_night: FirstNight
) -> None:
    """A red night that says why, never a gate that turns itself off; on the workflow
    generated without a build runner: no build job, and each bench job skips the source
    variants, as its file says."""
    assert "build" not in workflow(repository, STANDARD)["jobs"]
    root = first_night.folder / "emptied"
    remote = copied_remote(first_night, root)
    empty = root / "empty-branch"
    for command in (["init", "-q", "-b", RESULTS_BRANCH, str(empty)],
                    ["-C", str(empty), "-c", "user.name=t", "-c", "user.email=t@example.com",
                     "commit", "-q", "--allow-empty", "-m", "emptied"],
                    ["-C", str(empty), "push", "-q", "--force", str(remote),
                     f"HEAD:refs/heads/{RESULTS_BRANCH}"]):  # fmt: skip
        subprocess.run(["git", *command], check=True)
    docs = tonight({}, seed=50)
    emptied = second(repository, first_night, "emptied/night", docs, 5, STANDARD, remote)
    for runner in RUNNERS:
        args = (root / "night" / f"bench-args-{runner}").read_text().split()
        assert [args[i + 1] for i, a in enumerate(args) if a == "--skip"] == ["avx2-fma", "tuned"]
    gate = emptied.step("Report and regression gate (same machine class)")
    assert gate.outcome == "failure", _log([emptied])
    assert f"the {RESULTS_BRANCH} branch holds no results to gate against" in gate.output
