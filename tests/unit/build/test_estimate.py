"""A source build's estimate before it starts, bazel's progress while it runs, and failures that
share a cause said once."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from support.env import FIXTURES, REPO

from tfbuild.build.estimate import (
    OBSERVED_ACTIONS,
    OBSERVED_CORES,
    OBSERVED_MINUTES,
    TF_ACTIONS,
    BazelProgress,
    estimate,
    plain,
)
from tfbuild.errors import BuildFailed
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.machine.profile import HostProfile, Memory
from tfbuild.store import Manifest

GIB = 2**30


def host(cpus: int, memory_gib: float | None) -> HostProfile:
    """The Haswell Xeon's saved profile with `cpus` and `memory_gib`."""
    saved = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo")
    topology = replace(saved.topology, logical_cpus=cpus, physical_cores=cpus, affinity=None)
    memory = None if memory_gib is None else Memory(int(memory_gib * GIB), None, None)
    return replace(saved, topology=topology, memory=memory)


def test_the_model_is_the_build_the_readme_quotes() -> None:
    """The README's figures (a TensorFlow build on a 2-vCPU runner timed out after 5 h 56 min
    with 11,286 of 33,563 targets compiled) are the model's; so on such a runner (16 GB) the
    estimate is past the hosted runner's 6-hour limit, as the README says."""
    readme = " ".join((REPO / "README.md").read_text().split())
    found = re.search(r"after (\d+) h (\d+) min with ([\d,]+) of ([\d,]+) targets", readme)
    assert found, "the README no longer quotes the build"
    hours, minutes, done, total = found.groups()
    assert int(hours) * 60 + int(minutes) == OBSERVED_MINUTES
    assert (int(done.replace(",", "")), int(total.replace(",", ""))) == (
        OBSERVED_ACTIONS,
        TF_ACTIONS,
    )
    runner = estimate("avx2-fma", host(OBSERVED_CORES, 16))
    assert runner.basis == "model" and runner.enough_memory
    assert runner.seconds / 60 == pytest.approx(TF_ACTIONS / OBSERVED_ACTIONS * OBSERVED_MINUTES)
    assert runner.seconds > 360 * 60
    assert "about 18 h (2 cores, no cache of this recipe)" in runner.describe()
    big = estimate("avx2-fma", host(64, 256))
    assert big.seconds == pytest.approx(runner.seconds * OBSERVED_CORES / 64)


def test_memory_for_bazels_jobs_is_checked() -> None:
    """Two GiB a job and two for bazel's server: 16 cores need 34 GiB; on 16 GiB the estimate
    says the build would be killed and how many jobs fit."""
    tight = estimate("mkl-avx2", host(16, 16))
    assert tight.memory_gib == 34 and tight.enough_memory is False
    assert "this machine has 16 GiB" in tight.describe()
    assert "at most 7 (--jobs=7 in the matrix's bazel flags)" in tight.describe()
    unknown = estimate("mkl-avx2", host(2, None))
    assert unknown.enough_memory is None and "of the" not in unknown.describe()


def test_a_previous_build_is_scaled_by_cores_and_cuda_is_a_floor() -> None:
    previous = Manifest.from_json(
        {
            "variant": {"name": "tuned"},
            "source": "bazel",
            "build_seconds": 3600.0,
            "builder_host": {"topology": {"logical_cpus": 8}},
        }
    )
    again = estimate("tuned", host(4, 64), previous)
    assert again.basis == "previous build" and again.seconds == 7200.0
    assert again.describe().startswith("about 2 h (its previous build, scaled to these cores)")
    cuda = estimate("cuda-sm90", host(4, 64), cuda=True)
    assert "or more (CUDA)" in cuda.describe()
    cached = estimate("avx2-fma", host(8, 64), remote_cache=True)
    assert "less as far as the remote cache holds this recipe's outputs" in cached.describe()
    remote = estimate("avx2-fma", host(2, 8), remote_executor=True)
    assert remote.basis == "remote executor" and remote.seconds < 60 * 60


BAZEL_LINES = [
    "INFO: Analyzed target //tensorflow/tools/pip_package:wheel (612 packages loaded).",
    "[0 / 1] [Prepa] BazelWorkspaceStatusAction stable-status.txt",
    "\x1b[32m[1,000 / 30,000]\x1b[0m Compiling tensorflow/core/kernels/cwise_op_add.cc; 12s",
    "[3,000 / 33,563] Compiling tensorflow/core/kernels/matmul_op.cc; 40s processwrapper",
]


def test_bazels_progress_becomes_a_line_with_an_eta() -> None:
    progress = BazelProgress()
    said = [progress.update(line, t) for line, t in zip(BAZEL_LINES, (0, 10, 20, 620), strict=True)]
    assert said[0] is None
    assert said[1] == "bazel 0 of 1 actions (0%)"
    assert said[2] == "bazel 1,000 of 30,000 actions (3%), about 4.8 min left"
    # 3,000 actions in 610 s since the first line: 30,563 more take about 1 h 40 min
    assert said[3] == "bazel 3,000 of 33,563 actions (9%), about 1 h 40 min left"
    # every action known done: nothing left to time (bazel still links or checks its outputs)
    assert (
        progress.update("[33,563 / 33,563] Linking", 700) == "bazel 33,563 of 33,563 actions (100%)"
    )


def test_terminal_escapes_are_taken_out_of_every_line() -> None:
    assert plain("\x1b[91mCloning into '/src'...\r\x1b[0m") == "Cloning into '/src'..."
    assert plain("\x1b[1A\x1b[K[12 / 40] Linking") == "[12 / 40] Linking"


def failure(variant: str, container: str, copts: str) -> BuildFailed:
    return BuildFailed(
        f"{variant}: the build script exited with code 1",
        tail=[
            f"[4 / 6] Compiling probe.c; 0s processwrapper-sandbox ({container})",
            f"ERROR: /src/BUILD:3:10: Compiling probe.c failed: (Exit 1): gcc failed: error "
            f"executing command /usr/bin/gcc -O2 {copts} -c probe.c",
            "probe.c:9:1: error: expected ';' before '}' token",
            "Target //:probe failed to build",
            f"INFO: Elapsed time: {len(copts) / 7:.3f}s, Critical Path: 0.61s",
            "FAILED: Build did NOT complete successfully",
        ],
    )


def test_failures_of_one_cause_are_told_apart_from_others() -> None:
    """Two variants failing on the same compiler error (their flags, containers and timings
    differ) share a cause; another error, or another message, does not."""
    first = failure("avx2-fma", "3f2a9c1d0b7e", "-mavx2 -mfma")
    second = failure("avx512", "9e8d7c6b5a41", "-mavx512f")
    assert first.cause("avx2-fma") == second.cause("avx512")
    assert "expected ';' before '}' token" in first.cause("avx2-fma")
    other = BuildFailed(
        "avx512: the build script exited with code 1",
        tail=["fatal: unable to access 'https://github.com/tensorflow/tensorflow.git/'"],
    )
    assert other.cause("avx512") != first.cause("avx2-fma")
    assert first.full().endswith("FAILED: Build did NOT complete successfully")
