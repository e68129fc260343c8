"""The nightly CI's pieces a user meets on the command line: what the jobs may install, builds
for a runner's saved profile, the TensorFlow release override, and the per-class reference
results the gate compares with."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.ci.actions import PINS
from tfbuild.ci.settings import ARTIFACT_DAYS, BUILD_TIMEOUT_MIN, check_install
from tfbuild.errors import UsageError

SKYLAKE = FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo"
ZEN4 = "zen4-epyc-9654.cpuinfo"


@pytest.mark.parametrize(
    "command",
    ["pip install .", "pip install ./dist/tfbuild_bench-0.1.0-py3-none-any.whl",
     "python -m pip install tfbuild-bench==0.1.0", "pip install 'tfbuild_bench[test]'",
     "pip install git+https://example.org/tfbuild.git@v0.1.0", "pip install -e . && pytest"],
)  # fmt: skip
def test_installs_of_this_repository_are_accepted(command: str) -> None:
    assert check_install(command) == command


@pytest.mark.parametrize(
    ("command", "name", "owner"),
    [
        ("pip install tfbuild==0.1.0", "tfbuild", "an unrelated project"),
        ("pip install -U tfbuild", "tfbuild", "an unrelated project"),
        ("pip install . && pip install requests", "requests", "not this repository"),
    ],
)
def test_installs_by_a_foreign_name_are_refused(command: str, name: str, owner: str) -> None:
    with pytest.raises(UsageError, match=f"installs '{name}' by name .* belongs to {owner}"):
        check_install(command)
    proc = run_tfbuild("ci", "github", "--install", command, "--out", "/dev/null")
    assert proc.returncode == 64 and "by name from the package index" in proc.stderr


def _generate(folder: Path, out: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(REPO / "matrix.yaml", folder / "matrix.yaml")
    return run_tfbuild("ci", "github", "--install", "pip install .", "--out", out, cwd=folder)


def test_generated_anywhere_committed_anywhere_under_workflows(tmp_path: Path) -> None:
    """Generated outside .github/workflows/ it says where GitHub looks, and the text is the
    same as generated there; committed under another name, its own drift-check step (run by
    bash with the variables GitHub sets) finds it current, and finds an edit."""
    proc = _generate(tmp_path, "build/wf.yml")
    assert proc.returncode == 0, proc.stderr
    assert "warning: build/wf.yml is not under .github/workflows/" in proc.stderr
    inside = _generate(tmp_path, ".github/workflows/tfbuild-nightly.yml")
    assert inside.returncode == 0 and "warning" not in inside.stderr, inside.stderr
    text = (tmp_path / "build" / "wf.yml").read_text()
    assert text == (tmp_path / ".github" / "workflows" / "tfbuild-nightly.yml").read_text()
    committed = tmp_path / ".github" / "workflows" / "nightly.yml"
    committed.write_text(text)
    step = next(
        s for s in yaml.safe_load(text)["jobs"]["plan"]["steps"]
        if s.get("name") == "Check the workflow matches the matrix"
    )  # fmt: skip
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_REPOSITORY": "octo-org/tfbuild",
        "GITHUB_WORKFLOW_REF": "octo-org/tfbuild/.github/workflows/nightly.yml@refs/heads/main",
    }

    def check() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-eo", "pipefail", "-c", step["run"]],
            cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip

    proc = check()
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ".github/workflows/nightly.yml is current"
    committed.write_text(text.replace("avx2-fma", "avx2"))
    assert check().returncode == 13


def _built(folder: Path, *args: str) -> dict[str, Any]:
    """The workflow generated for the default matrix with a build runner (and `args`)."""
    shutil.copy(REPO / "matrix.yaml", folder / "matrix.yaml")
    proc = run_tfbuild("ci", "github", "--build-runner", "big-builder", *args,
                       "--out", ".github/workflows/n.yml", cwd=folder)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    loaded: dict[str, Any] = yaml.safe_load((folder / ".github/workflows/n.yml").read_text())
    return loaded


def test_bazel_caches_are_saved_by_every_build_job_that_ran(tmp_path: Path) -> None:
    """Restored and saved in steps of their own: the save runs always (a failed or timed-out
    build saves what bazel did), under a key of the run and attempt (an entry is never
    updated), restored from the newest of the same recipe, then release, then variant. The
    Build step stops before the job does, so the save and the upload have time to run."""
    build = _built(tmp_path)["jobs"]["build"]
    steps = {s.get("name"): s for s in build["steps"]}
    restore = steps["Restore the bazel repository and disk caches"]
    save = steps["Save the bazel caches (also when the build failed or timed out)"]
    assert restore["uses"].startswith("actions/cache/restore@")
    assert save["uses"].startswith("actions/cache/save@") and save["if"] == "always()"
    key = " ".join(save["with"]["key"].split())
    assert key == restore["with"]["key"] and save["with"]["path"] == restore["with"]["path"]
    recipe = (
        "bazel-${{ matrix.variant }}-${{ matrix.for }}-tf${{ needs.plan.outputs.tensorflow }}-"
        "${{ hashFiles('matrix.yaml', 'templates/**', 'tfbuild/data/tensorflow.yaml') }}"
    )
    assert key == recipe + "-${{ github.run_id }}-${{ github.run_attempt }}"
    assert restore["with"]["restore-keys"].splitlines() == [
        recipe + "-",
        "bazel-${{ matrix.variant }}-${{ matrix.for }}-tf${{ needs.plan.outputs.tensorflow }}-",
        "bazel-${{ matrix.variant }}-",
    ]
    assert not any(s.get("uses", "").startswith("actions/cache@") for s in build["steps"])
    assert steps["Build"]["timeout-minutes"] < build["timeout-minutes"] == BUILD_TIMEOUT_MIN
    names = list(steps)
    assert names.index("Build") < names.index(save["name"])


def test_artifacts_survive_a_rerun_and_expire(tmp_path: Path) -> None:
    """Every upload replaces the artifact of an earlier attempt (a re-run is otherwise refused
    with 409 Conflict), finds files or fails, and is kept two weeks, not 90 days; the wheel
    store's upload takes its variant folders, not the README that is always there."""
    flow = _built(tmp_path)
    uploads = [
        s["with"] for job in flow["jobs"].values() for s in job["steps"]
        if s.get("uses", "").startswith("actions/upload-artifact@")
    ]  # fmt: skip
    assert len(uploads) == 5
    for upload in uploads:
        assert upload["overwrite"] is True and upload["retention-days"] == ARTIFACT_DAYS
        assert upload["if-no-files-found"] == "error"
    assert {u["path"] for u in uploads} == {
        "wheels/*/", "results/", "report.html", "previous-results/history.html",
        "previous-results/",
    }  # fmt: skip


def test_the_job_that_may_write_installs_nothing(tmp_path: Path) -> None:
    """contents: write is the push job's alone, and it runs git on what the compare job
    uploaded: no checkout, no Python, no install, no tfbuild."""
    jobs = _built(tmp_path)["jobs"]
    writers = {n for n, j in jobs.items() if j.get("permissions", {}).get("contents") == "write"}
    assert writers == {"push"}
    push = jobs["push"]
    uses = [s["uses"].split("@")[0] for s in push["steps"] if "uses" in s]
    assert uses == ["actions/download-artifact"]
    script = "\n".join(s.get("run", "") for s in push["steps"])
    assert "git " in script and not {"pip", "python", "tfbuild"} & set(script.split())
    assert push["if"] == "always() && needs.compare.outputs.recorded == 'true'"


@pytest.mark.parametrize(
    "options",
    [
        [],
        ["--build-runner", "big-builder"],
        ["--build-runner", "big-builder", "--publish", "pages"],
    ],
    ids=["default", "builds", "builds-published"],
)
def test_actions_are_pinned_and_zizmor_finds_nothing_above_low(
    tmp_path: Path, options: list[str]
) -> None:
    """zizmor (offline, its auditor persona) on the generated workflow, without build jobs,
    with them, and publishing to GitHub Pages: nothing above low. Every action is pinned by a
    commit with its tag in a comment, and no checkout leaves its credentials on disk."""
    shutil.copy(REPO / "matrix.yaml", tmp_path / "matrix.yaml")
    proc = run_tfbuild("ci", "github", *options, "--out", ".github/workflows/n.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / ".github/workflows/n.yml"
    findings = _zizmor(path)
    assert not [f for f in findings if f["determinations"]["severity"] in ("Medium", "High")]
    text = path.read_text()
    pins = re.findall(r"uses: (\S+)@(\S+) # (v\d+\.\d+\.\d+)$", text, re.MULTILINE)
    assert len(pins) == text.count("uses: ") and pins
    for action, commit, tag in pins:
        assert re.fullmatch(r"[0-9a-f]{40}", commit), (action, commit)
        assert PINS["/".join(action.split("/")[:2])] == (commit, tag)
    checkouts = [
        s for job in yaml.safe_load(text)["jobs"].values() for s in job["steps"]
        if s.get("uses", "").startswith("actions/checkout@")
    ]  # fmt: skip
    assert checkouts and all(s["with"]["persist-credentials"] is False for s in checkouts)
    if "--publish" in options:  # only the deploy job may write to Pages
        jobs = yaml.safe_load(text)["jobs"]
        writers = {n for n, j in jobs.items() if "pages" in j.get("permissions", {})}
        assert writers == {"deploy"} and jobs["publish"]["needs"] == ["plan", "compare"]


def test_zizmor_finds_what_the_workflow_generated_before_had() -> None:
    """The check above can fail: the workflow as generated before (actions by tag, checkouts
    keeping their credentials) has zizmor's high and medium findings."""
    findings = _zizmor(FIXTURES / "workflows" / "unpinned.yml")
    found = {(f["ident"], f["determinations"]["severity"]) for f in findings}
    assert {("unpinned-uses", "High"), ("artipacked", "Medium")} <= found


def _zizmor(path: Path) -> list[dict[str, Any]]:
    zizmor = shutil.which("zizmor")
    assert zizmor, "pip install '.[test]' provides zizmor"
    proc = subprocess.run([zizmor, "--offline", "--persona", "auditor", "--format", "json",
                           str(path)], capture_output=True, text=True, check=False)  # fmt: skip
    assert proc.stdout.startswith("["), proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout)
    return findings


def test_cuda_variants_are_built_only_for_a_bench_runner_with_a_gpu(tmp_path: Path) -> None:
    """Without a bench runner whose saved profile has a GPU the CUDA variant is left out (the
    file and the command's output say why); with one it is built, and the output says on
    which runner and for how long each build may run."""
    shutil.copy(REPO / "matrix.yaml", tmp_path / "matrix.yaml")
    profile = tmp_path / "gpu-box.json"
    proc = run_tfbuild("detect", "--cpuinfo", str(SKYLAKE), "--output", str(profile))
    assert proc.returncode == 0, proc.stderr
    plain = json.loads(profile.read_text())
    with_gpu = {**plain, "gpus": {"nvidia_smi": "550.54", "error": None, "devices": [
        {"index": 0, "name": "NVIDIA H100", "compute_capability": "9.0",
         "driver_version": "550.54", "memory_mib": 81559}]}}  # fmt: skip
    (tmp_path / "gpu.json").write_text(json.dumps(with_gpu))
    common = ("ci", "github", "--install", "pip install .", "--build-runner", "big-builder",
              "--bench-runner", "gpu-box", "--out", ".github/workflows/n.yml")  # fmt: skip
    without = run_tfbuild(*common, "--bench-host", f"gpu-box={profile}", cwd=tmp_path)
    assert without.returncode == 0, without.stderr
    text = (tmp_path / ".github" / "workflows" / "n.yml").read_text()
    assert "# Not built: cuda-sm90, a CUDA build (sm_90, compute_90), and no bench runner" in text
    assert "not built: cuda-sm90" in without.stdout
    builds = yaml.safe_load(text)["jobs"]["build"]
    assert builds["runs-on"] == "big-builder"
    assert "cuda-sm90" not in {b["variant"] for b in builds["strategy"]["matrix"]["include"]}
    gpu = run_tfbuild(*common, "--bench-host", f"gpu-box={tmp_path / 'gpu.json'}", cwd=tmp_path)
    assert gpu.returncode == 0, gpu.stderr
    text = (tmp_path / ".github" / "workflows" / "n.yml").read_text()
    assert "Not built" not in text and "not built" not in gpu.stdout
    variants = {
        b["variant"] for b in yaml.safe_load(text)["jobs"]["build"]["strategy"]["matrix"]["include"]
    }
    assert "cuda-sm90" in variants
    assert "build: 5 job(s) on big-builder, up to 360 min each" in gpu.stdout


def test_readme_ci_section_states_the_runner_image_and_limits_the_code_uses() -> None:
    """The README's CI section quotes the runner image's list the replay test runs against
    (its commit, Docker, Bazel and Python versions; no debootstrap) and the build jobs' time
    limit the generator writes."""
    text = " ".join((REPO / "README.md").read_text().split("## The nightly CI", 1)[1].split())
    section = text.split("## ", 1)[0]
    runner = (FIXTURES / "runner-images" / "ubuntu-24.04.txt").read_text()
    commit = re.search(r"# Commit: ([0-9a-f]{40})", runner)
    assert commit and f"/blob/{commit.group(1)}/images/ubuntu/Ubuntu2404-Readme.md" in section
    for command, pattern in (("docker", r"Docker Client (\S+)"), ("bazel", r"Bazel (\S+)"),
                             ("python3", r"Python (\S+)")):  # fmt: skip
        line = next(x for x in runner.splitlines() if x.startswith(f"{command}  # "))
        version = re.search(pattern, line)
        assert version, line
        name = pattern.split(" ")[0]
        assert f"{name} {version.group(1)}" in section, (name, version.group(1))
    assert not any(x.startswith("debootstrap") for x in runner.splitlines())
    assert "no debootstrap" in section
    assert f"up to {BUILD_TIMEOUT_MIN} min" in section


def test_no_build_is_scheduled_where_it_cannot_finish(tmp_path: Path) -> None:
    """By default no build job: on GitHub's standard runners a TensorFlow wheel does not build
    in the job's 6 hours, so the workflow and the command say why, bench skips the source
    variants, and the rest runs. --build-runner brings the build jobs back (with a warning
    when it names a standard runner), and so does a remote executor in the matrix."""
    out = tmp_path / ".github" / "workflows" / "n.yml"
    default = _generate(tmp_path, ".github/workflows/n.yml")
    assert default.returncode == 0, default.stderr
    flow = yaml.safe_load(out.read_text())
    assert "build" not in flow["jobs"] and flow["jobs"]["bench"]["needs"] == ["plan"]
    (runner,) = flow["jobs"]["bench"]["strategy"]["matrix"]["include"]
    assert runner["skip"].split() == ["avx2-fma", "mkl-avx2", "avx512", "native"]
    said = "build: none scheduled for the 3 source build(s) (avx2-fma (for any), mkl-avx2 (for any)"
    assert said in default.stdout
    header = " ".join(line.lstrip("# ") for line in out.read_text().splitlines()[:25])
    assert "Build: none scheduled for the 3 source build(s), and bench skips them" in header
    assert "pass --build-runner a larger or self-hosted runner" in header
    common = ("ci", "github", "--install", "pip install .", "--out", ".github/workflows/n.yml")
    standard = run_tfbuild(*common, "--build-runner", "ubuntu-latest", cwd=tmp_path)
    assert standard.returncode == 0, standard.stderr
    assert "warning: ubuntu-latest is a standard hosted runner (4 vCPUs, 16 GB of RAM" in (
        standard.stdout
    )
    assert "Build: 3 job(s) on ubuntu-latest, up to 360 min each." in " ".join(
        line.lstrip("# ") for line in out.read_text().splitlines()[:25]
    )
    larger = run_tfbuild(*common, "--build-runner", "linux-64-core", cwd=tmp_path)
    assert larger.returncode == 0, larger.stderr
    assert "build: 3 job(s) on linux-64-core" in larger.stdout
    assert "standard hosted" not in larger.stdout + out.read_text()
    assert yaml.safe_load(out.read_text())["jobs"]["build"]["runs-on"] == "linux-64-core"
    matrix = tmp_path / "matrix.yaml"
    text = matrix.read_text()
    assert "    remote_executor: null " in text
    matrix.write_text(
        text.replace("    remote_executor: null ", "    remote_executor: grpcs://rbe.example.com ")
    )
    remote = run_tfbuild(*common, cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert "build: 3 job(s) on ubuntu-latest" in remote.stdout
    assert "bazel executes remotely at grpcs://rbe.example.com" in remote.stdout
    assert "# Bazel executes remotely at grpcs://rbe.example.com." in out.read_text()
    assert "standard hosted" not in remote.stdout


def test_the_committed_workflow_has_no_zizmor_finding_above_low() -> None:
    findings = _zizmor(REPO / ".github" / "workflows" / "tfbuild-nightly.yml")
    assert not [f for f in findings if f["determinations"]["severity"] in ("Medium", "High")]


def test_the_nightly_bench_carries_a_workload_in_the_matrixs_forms(tmp_path: Path) -> None:
    """`ci github --workload PATH` with a matrix of model forms: every bench job measures the
    model (its Benchmark step, run by bash, hands bench `--workload PATH` with the release and
    the variants to skip), the drift check regenerates it with the same --workload and finds it
    current. Model forms without a --workload, or a path outside the checkout or that is no
    model, are refused (exit 64; 15, the workload's code, for what is no model) and nothing is
    written."""
    matrix = (REPO / "matrix.yaml").read_text() + "forms: [as-given, litert]\n"
    (tmp_path / "matrix.yaml").write_text(matrix)
    model = tmp_path / "models" / "my model"
    model.mkdir(parents=True)
    (model / "saved_model.pb").write_bytes(b"")
    out = ".github/workflows/tfbuild-nightly.yml"
    common = ("ci", "github", "--install", "pip install .", "--out", out)
    for given, code, said in (
        ((), 64, "matrix.yaml: forms: litert: a model form is made from a SavedModel's signature"),
        (("--workload", str(model)), 64, "give its path relative to the repository's root"),
        (("--workload", "models/none"), 15, "models/none: no such file"),
        (("--workload", "../models/my model"), 64, "relative to the repository's root"),
    ):
        proc = run_tfbuild(*common, *given, cwd=tmp_path)
        assert proc.returncode == code, (given, proc.stderr)
        assert said in proc.stderr and "Traceback" not in proc.stderr, (given, proc.stderr)
        assert not (tmp_path / out).exists()
    proc = run_tfbuild(*common, "--workload", "models/my model", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "bench measures models/my model (not the fixed suite), in the forms as-given, " \
        "litert" in proc.stdout  # fmt: skip
    jobs = yaml.safe_load((tmp_path / out).read_text())["jobs"]
    (step,) = [s for s in jobs["bench"]["steps"] if s.get("name") == "Benchmark"]
    shim = 'tfbuild() { printf "%s\\n" "$@"; }\n'
    env = {**os.environ, "TENSORFLOW": "2.21.0", "SKIP_VARIANTS": "mkl-avx2 cuda-sm90"}
    ran = subprocess.run(["bash", "-eo", "pipefail", "-c", shim + step["run"]], cwd=tmp_path,
                         env=env, capture_output=True, text=True, check=True)  # fmt: skip
    assert ran.stdout.splitlines() == [
        "bench", "--matrix", "matrix.yaml", "--results", "results", "--tensorflow", "2.21.0",
        "--skip", "mkl-avx2", "--skip", "cuda-sm90", "--workload", "models/my model",
    ]  # fmt: skip
    (drift,) = [
        s for s in jobs["plan"]["steps"] if s.get("name") == "Check the workflow matches the matrix"
    ]
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_REPOSITORY": "octo-org/tfbuild",
        "GITHUB_WORKFLOW_REF": f"octo-org/tfbuild/{out}@refs/heads/main",
    }
    checked = subprocess.run(["bash", "-eo", "pipefail", "-c", drift["run"]], cwd=tmp_path,
                             env=env, capture_output=True, text=True, check=False)  # fmt: skip
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip() == f"{out} is current"
