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

import pytest
import yaml
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.ci.workflow import BUILD_TIMEOUT_MIN, check_install
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


def test_bazel_cache_keys_change_with_the_release_and_the_recipe() -> None:
    """actions/cache entries are never updated: the key names the TensorFlow release the plan
    job chose and hashes what the recipe is made of, so a new release or template saves anew."""
    text = (REPO / ".github" / "workflows" / "tfbuild-nightly.yml").read_text()
    (cache,) = [
        s for s in yaml.safe_load(text)["jobs"]["build"]["steps"]
        if s.get("uses", "").startswith("actions/cache@")
    ]  # fmt: skip
    key = " ".join(cache["with"]["key"].split())
    assert key.startswith("bazel-${{ matrix.variant }}-${{ matrix.for }}-")
    assert "tf${{ needs.plan.outputs.tensorflow }}-" in key
    assert "hashFiles('matrix.yaml', 'templates/**', 'tfbuild/data/tensorflow.yaml')" in key
    first = cache["with"]["restore-keys"].splitlines()[0]
    assert (
        first
        == "bazel-${{ matrix.variant }}-${{ matrix.for }}-tf${{ needs.plan.outputs.tensorflow }}-"
    )


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


def test_builds_on_a_standard_hosted_runner_are_warned_about(tmp_path: Path) -> None:
    """Source builds on ubuntu-latest get a warning (in the output and the file's header) that
    a TensorFlow wheel does not build there in the job's time; a named build runner does not,
    and a matrix with a remote executor says where bazel executes instead."""
    out = tmp_path / ".github" / "workflows" / "n.yml"
    standard = _generate(tmp_path, ".github/workflows/n.yml")
    assert standard.returncode == 0, standard.stderr
    warning = "warning: ubuntu-latest is a standard hosted runner (4 vCPUs, 16 GB of RAM"
    assert warning in standard.stdout
    header = " ".join(line.lstrip("# ") for line in out.read_text().splitlines()[:20])
    assert "Build: 3 job(s) on ubuntu-latest, up to 360 min each." in header
    assert "Warning: ubuntu-latest is a standard hosted runner" in header
    assert "does not build in 360 min: pass --build-runner a larger or self-hosted runner" in header
    common = ("ci", "github", "--install", "pip install .", "--out", ".github/workflows/n.yml")
    larger = run_tfbuild(*common, "--build-runner", "linux-64-core", cwd=tmp_path)
    assert larger.returncode == 0, larger.stderr
    assert "build: 3 job(s) on linux-64-core" in larger.stdout
    assert "standard hosted" not in larger.stdout + out.read_text()
    matrix = tmp_path / "matrix.yaml"
    text = matrix.read_text()
    assert "    remote_executor: null " in text
    matrix.write_text(
        text.replace("    remote_executor: null ", "    remote_executor: grpcs://rbe.example.com ")
    )
    remote = run_tfbuild(*common, cwd=tmp_path)
    assert remote.returncode == 0, remote.stderr
    assert "bazel executes remotely at grpcs://rbe.example.com" in remote.stdout
    assert "# Bazel executes remotely at grpcs://rbe.example.com." in out.read_text()
    assert "standard hosted" not in remote.stdout
