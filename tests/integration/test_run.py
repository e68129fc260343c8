"""`tfbuild run` end to end, the PEP 503 index with a real pip, and the nightly workflow."""

from __future__ import annotations

import json
import shlex
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version
from support.cli import plans_made, run_tfbuild, toy_wheel
from support.env import REPO

from tfbuild.files import sha256_of
from tfbuild.store import Manifest

WORKFLOW = REPO / ".github" / "workflows" / "tfbuild-nightly.yml"
BUDGET_S = 20
"""The quick run's budget here: two rounds always run (three processes each, about 5 s a
process), so whether a third starts is what it decides."""


@pytest.mark.tf
@pytest.mark.slow
@pytest.mark.usefixtures("tf_python", "tf_214_python")  # both wheels fetched, audited, installed
def test_run_quick_on_two_prebuilt_variants(tf_workspace: Path, tmp_path: Path) -> None:
    """The default matrix, restricted to stock TF and (from its intel-2023 opt-in set) stock
    2.14 with their default tunings, on local venvs, with the quick preset on a shorter budget:
    the whole loop plans once, writes the report and prints the ranking. (The two wheels'
    fetch, audit and install are the shared TensorFlow fixtures': the run finds them done.)"""
    proc, plans = plans_made(
        tmp_path / "plans.jsonl",
        "run",
        "--quick",
        "--budget",
        f"{BUDGET_S}s",
        "--runtime",
        "local",
        "--with",
        "intel-2023",
        "--only",
        "stock*:default",
        "--store",
        str(tf_workspace / "wheels"),
        "--cache-dir",
        str(tf_workspace / "cache"),
        "--results",
        str(tmp_path / "results"),
        cwd=REPO,
        timeout=3600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert len(plans) == 1 and plans[0]["source"] == "live", plans  # one plan, for this machine
    (results,) = (tmp_path / "results").glob("*.json")
    report = results.with_suffix(".html")
    assert report.exists() and report.read_text().count("data:image/svg+xml;base64,") == 2
    document = json.loads(results.read_text())
    assert {c["key"] for c in document["configs"]} == {
        "stock:default",
        "stock-2.14:default",
        "stock:default~aa",
    }
    assert all(run["status"] == "ok" for run in document["runs"])
    assert document["suite"]["processes"] == "forked"  # the default: each from its zygote
    assert all(run["zygote"] for run in document["runs"])  # which one, recorded
    # the margin it answers at is said before anything runs: the quick preset's
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "answering at the 10.0% margin (--resolve sets it)" in said, said[:2000]
    # the first round runs all three whatever the machine's speed; the budget decides the rest
    assert len(document["runs"]) == sum(map(len, document["order"])) >= 3
    assert len(document["order"][0]) == 3
    stop = document["session"]["stop"]
    assert stop["reason"] in ("resolved", "budget")
    # Two rounds always run; a later one starts only while the budget has time left, and the
    # session stops on its budget only when the next round would not fit (how many rounds fit
    # depends on the machine's speed, so only that rule is checked).
    walls: dict[str, list[float]] = {}
    for r in range(len(document["order"])):
        spent = sum(run["wall_s"] for run in document["runs"] if run["round"] < r)
        if r >= 2:
            assert spent < BUDGET_S, (r, spent)
        for run in document["runs"]:
            if run["round"] == r:
                walls.setdefault(run["config"], []).append(run["wall_s"])
    if stop["reason"] == "budget":  # the session's clock when it stopped, and the next round
        spent = document["session"]["elapsed_s"]
        needed = sum(statistics.median(walls[c][-3:]) for c in document["order"][-1])
        assert spent + needed > BUDGET_S, (spent, needed)
    assert "stock-2.14:default" in proc.stdout
    assert "Ranking" in proc.stdout and "Use this" in proc.stdout
    # the whole runtime of the config to use, written beside the results, installed from there
    lock = results.with_suffix(".requirements.txt")
    assert lock.exists() and f"pip install --require-hashes -r {lock}" in proc.stdout
    assert f"report:  {report}" in proc.stdout
    # it ends as the report begins: with the answer `compare` gives for the same file
    figures = run_tfbuild("compare", str(results), "--format", "json")
    first = json.loads(figures.stdout)["hosts"][0]["answer"]["lines"][0]
    assert " ".join(proc.stdout.split()).endswith(" ".join(first.split()))


@pytest.mark.tf
@pytest.mark.slow
def test_run_in_json_and_the_config_to_use_installed_hash_checked_as_measured(
    tf_workspace: Path, tf_python: Path, tmp_path: Path
) -> None:
    """`run --format json`: standard output is one JSON document, the answer's kind and lines,
    the config to use, and the paths of the results, the report and the requirements file,
    each of them there; the progress stays on standard error. The requirements file is the
    whole runtime of the config to use: every package pip installed into it, pinned to the
    file's sha256 pip reported, as 'use this' (the terminal's and the HTML report's) says;
    pip, in require-hashes mode, resolves it to exactly those wheels, each matching its hash,
    with the numpy and keras the session recorded. (The default matrix's baseline alone, on
    one benchmark for two rounds, pinned to CPU 0 with --cpus: what is checked here is what
    `run` says and writes, not the suite.)"""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "suite: {benchmarks: [matmul-pinned]}\n"
    )
    proc = run_tfbuild(
        "run", "--matrix", str(matrix), "--rounds", "2", "--runtime", "local", "--cpus", "0",
        "--store", str(tf_workspace / "wheels"), "--cache-dir", str(tf_workspace / "cache"),
        "--results", str(tmp_path / "results"), "--format", "json",
        cwd=REPO, timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = json.loads(proc.stdout)
    assert said["answer"]["kind"] in ("use", "keep", "inconclusive")
    assert said["answer"]["lines"][0] == said["compare"]["hosts"][0]["answer"]["lines"][0]
    assert said["choice"]["config"] == "stock:default"  # the baseline: nothing else ran
    (results,) = (tmp_path / "results").glob("*.json")
    lock = results.with_suffix(".requirements.txt")
    assert said["results"] == str(results)
    assert said["report"] == str(results.with_suffix(".html"))
    assert said["requirements"] == str(lock)
    assert all(Path(said[k]).exists() for k in ("results", "report", "requirements"))

    document = json.loads(results.read_text())
    # --cpus: every process pinned to CPU 0 before TensorFlow started its thread pools
    assert document["runs"] and all(r["threads"]["affinity"] == [0] for r in document["runs"])
    variant = document["variants"][said["choice"]["variant"]]
    packages = variant["runtime"]["packages"]
    pins = [line for line in lock.read_text().splitlines() if not line.startswith("#")]
    assert pins == [f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}" for p in packages]
    (wheel,) = [p for p in packages if p["file"] == variant["artifact"]["wheel"].split("/")[-1]]
    assert wheel["sha256"] == variant["artifact"]["sha256"]  # the build measured, by its hash
    smoke = variant["smoke"]
    shown = run_tfbuild("compare", str(results), "--requirements", str(lock))
    said_block = " ".join(shown.stdout.split())
    assert shown.returncode == 0, shown.stderr
    assert f"pip install --require-hashes -r {lock}" in said_block
    assert f"numpy {smoke['numpy']}, keras {smoke['keras']} among them" in said_block
    assert 'download="requirements.txt"' in results.with_suffix(".html").read_text()

    # pip resolves the file in require-hashes mode (every dependency must be pinned there) and
    # fetches each wheel it names, checked against its pin; installing those 600 MB again would
    # prove no more than the local runtime the session ran in, which is that install.
    fetched = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--require-hashes", "-r", str(lock),
         "--dest", str(tmp_path / "downloaded")],
        capture_output=True, text=True, check=False, timeout=1800,
    )  # fmt: skip
    assert fetched.returncode == 0, fetched.stderr[-3000:]
    got = {}
    for path in (tmp_path / "downloaded").iterdir():
        name, version, *_ = parse_wheel_filename(path.name)
        got[str(name)] = str(version)
    assert got == {canonicalize_name(p["name"]): p["version"] for p in packages}
    assert (got["numpy"], got["keras"]) == (smoke["numpy"], smoke["keras"])


@pytest.mark.docker
def test_pip_installs_from_the_generated_index(toy_store: Path, tmp_path: Path) -> None:
    """A real `pip install --index-url file://...` picks the labelled wheel, by its sha256."""
    store = tmp_path / "wheels"
    shutil.copytree(toy_store, store, ignore=shutil.ignore_patterns("logs"))
    proc = run_tfbuild("index", str(store))
    assert proc.returncode == 0, proc.stderr
    assert "indexed 2 wheels of 1 projects" in proc.stdout
    page = (store / "simple" / "tfbuild-probe" / "index.html").read_text()
    assert page.count("#sha256=") == 2 and "1.0.0+avx512" in page
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    report = tmp_path / "report.json"
    install = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--isolated",
            "--no-cache-dir",
            "--index-url",
            (store / "simple").resolve().as_uri() + "/",
            "--report",
            str(report),
            "tfbuild-probe==1.0.0+avx2.fma",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    (item,) = json.loads(report.read_text())["install"]
    wheel = toy_wheel(toy_store, "avx2-fma")
    assert item["download_info"]["archive_info"]["hashes"]["sha256"] == sha256_of(wheel)
    assert item["metadata"]["version"] == "1.0.0+avx2.fma"
    version = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('tfbuild-probe'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == "1.0.0+avx2.fma"


def drift_check(out: str) -> list[str]:
    """The committed workflow's own drift check (its plan job's step), writing to `out`: the
    `tfbuild` arguments that regenerate it."""
    flow = yaml.safe_load(WORKFLOW.read_text())
    (step,) = [s for s in flow["jobs"]["plan"]["steps"]
               if s.get("name") == "Check the workflow matches the matrix"]  # fmt: skip
    line = step["run"].splitlines()[-1]
    words = shlex.split(line.replace('"${committed%%@*}"', shlex.quote(out)))
    assert words[:3] == ["tfbuild", "ci", "github"] and words[-1] == "--check", line
    return words[1:]


def test_committed_workflow_is_current_and_valid() -> None:
    """Regenerated from matrix.yaml by the command its plan job checks itself with, it is byte
    for byte the committed file, and it validates against the GitHub workflow schema. Every
    job installs tfbuild's dependencies from the committed lock, hash-checked, and tfbuild
    itself with nothing else fetched."""
    relative = str(WORKFLOW.relative_to(REPO))
    args = drift_check(relative)
    install = args[args.index("--install") + 1]
    assert install == (
        "pip install --require-hashes -r .github/tfbuild-requirements.txt && "
        "pip install --no-deps --no-build-isolation ."
    )
    proc = run_tfbuild(*args, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    checker = shutil.which("check-jsonschema")
    assert checker, "pip install '.[test]' provides check-jsonschema"
    valid = subprocess.run(
        [checker, "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_workflow_fanout_is_the_matrix() -> None:
    """The committed workflow names no build runner, so it schedules no build and its bench
    skips every source variant; the plan's fan-out (one build job per source variant, built
    once a build runner is named) leaves out `native` (march: host: the runner has no saved
    profile) and the CUDA variant, with a line in the file, since no bench runner has a GPU."""
    workflow = yaml.safe_load(WORKFLOW.read_text())
    planned = json.loads(run_tfbuild("matrix", "--format", "json", cwd=REPO).stdout)
    assert "build" not in workflow["jobs"]
    assert [v["variant"] for v in planned["ci"]["build"]["include"]] == [
        "avx2-fma",
        "mkl-avx2",
        "avx512",
    ]  # cuda-sm90 left out: no bench runner of the committed workflow has a GPU
    assert list(planned["ci"]["left_out"]) == ["cuda-sm90"]
    assert "# Not built: cuda-sm90, a CUDA build (sm_90, compute_90), and no bench runner" in (
        WORKFLOW.read_text()
    )
    assert planned["ci"]["host_tuned"] == ["native"]
    assert workflow["jobs"]["bench"]["strategy"]["matrix"]["include"] == [
        {"runner": "ubuntu-latest", "skip": "avx2-fma mkl-avx2 avx512 native"}
    ]
    assert workflow["on"]["schedule"][0]["cron"] == "0 3 * * *"
    steps = json.dumps(workflow["jobs"]["compare"])
    assert (
        "gate=(--against previous-results --new-class-passes --new-suite-passes --fail-above 5%)"
        in steps
    )


def test_stale_workflow_is_detected(tmp_path: Path) -> None:
    stale = tmp_path / "wf.yml"
    stale.write_text(WORKFLOW.read_text().replace("avx2-fma", "avx2"))
    proc = run_tfbuild(*drift_check(str(stale)), cwd=REPO)
    assert proc.returncode == 13 and "regenerate it" in proc.stderr


@pytest.mark.slow  # asks the package index
def test_matrix_latest_asks_the_real_index() -> None:
    proc = run_tfbuild("matrix", "--latest", "--format", "json", cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    latest = json.loads(proc.stdout)["latest"]
    newest = Version(latest["tensorflow"])
    assert newest >= Version("2.21.0")
    # the baseline follows defaults.tensorflow (the release the source builds use), so a new
    # release on the index does not move it: only unpinned variants resolve to the newest
    assert "stock" not in latest["resolved"]
    assert latest["newer_than_defaults"] == (newest > Version(latest["defaults"]))


@pytest.mark.docker
def test_run_builds_nothing_unasked_and_takes_what_the_store_has(
    toy_store: Path, tmp_path: Path
) -> None:
    """The toy recipe's source variants (a Docker engine reachable): `run --quick` starts no
    build. Not in the store, they are named with the command that builds them and how long
    that takes here; a stored wheel of another recipe is estimated from its own recorded
    build; with the wheels in the store the run takes them (the toy wheels are no TensorFlow,
    so each fails its import check, recorded as such: not as a build)."""
    from tfbuild.build.estimate import estimate
    from tfbuild.machine.detect import detect

    empty = tmp_path / "empty"
    toy = REPO / "tests" / "fixtures" / "toy-recipe" / "matrix.yaml"
    quick = ["run", "--quick", "--runtime", "local", "--matrix", str(toy)]
    proc = run_tfbuild(*quick, "--store", str(empty), "--results", str(tmp_path / "r1"))
    assert proc.returncode == 8, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert "a run builds only when asked (--build)" in said
    assert "`tfbuild build --variant avx2-fma" in said
    # one recipe on one machine: one estimate, said once for both builds
    assert "avx2-fma, avx512: each about " in said and said.count("no cache of this recipe") == 1
    assert not list(empty.glob("*/build.log")), "a build started"

    # the same store, avx2-fma asked for without FMA: its wheel there is another recipe's
    store = tmp_path / "wheels"
    shutil.copytree(toy_store, store, ignore=shutil.ignore_patterns("logs"))
    changed = tmp_path / "matrix.yaml"
    changed.write_text(
        toy.read_text().replace("cpu_flags: [avx2, fma]", "cpu_flags: [avx2]"), encoding="utf-8"
    )
    other = ["run", "--quick", "--runtime", "local", "--matrix", str(changed)]
    proc = run_tfbuild(*other, "--store", str(store), "--results", str(tmp_path / "r2"))
    said = " ".join(proc.stderr.split())
    manifest = json.loads(next(store.glob("*-avx2-fma/manifest.json")).read_text())
    expected = estimate("avx2-fma", detect(), Manifest.from_json(manifest))
    assert expected.basis == "previous build"
    assert f"avx2-fma: {expected.describe()}" in said, said
    built_on = manifest["builder_host"]["topology"]["logical_cpus"]
    assert expected.seconds == pytest.approx(manifest["build_seconds"] * built_on / expected.jobs)

    proc = run_tfbuild(*quick, "--store", str(store), "--results", str(tmp_path / "r3"))
    assert "Left out" not in proc.stderr and "a run builds only" not in proc.stderr
    (results,) = (tmp_path / "r3").glob("*.json")
    failures = {f["variant"]: f for f in json.loads(results.read_text())["failures"]}
    assert "avx2-fma" in failures and failures["avx2-fma"]["stage"] not in ("build", "fetch")
    assert not list(store.glob("*/.build-*")), "a build started"
