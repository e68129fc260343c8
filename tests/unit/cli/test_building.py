"""`tfbuild build` as a user meets it: builds for a saved profile, a TensorFlow release override."""

from __future__ import annotations

from pathlib import Path

from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

SKYLAKE = FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo"


def test_build_for_a_saved_profile(tmp_path: Path) -> None:
    """`march: host` resolves to the saved machine's -march; build tools stay at TF's
    defaults (they run on the build machine); `march: native` cannot be built for another
    machine and says so."""
    profile = tmp_path / "runner.json"
    assert (
        run_tfbuild("detect", "--cpuinfo", str(SKYLAKE), "--output", str(profile)).returncode == 0
    )
    proc = run_tfbuild("build", "--variant", "native", "--host", str(profile), "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.split("bazel command =====\n", 1)[1].splitlines()[0]
    assert "--copt=-march=skylake-avx512" in command
    assert "--host_copt=-m" not in command  # build tools keep TensorFlow's flags only
    assert "the wheel is built for another machine (Intel(R) Xeon(R) Gold 6132" in proc.stdout
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("variants:\n  - {name: mine, source: bazel, march: native}\n")
    proc = run_tfbuild("build", "--matrix", str(matrix), "--variant", "mine", "--host",
                       str(profile), "--dry-run")  # fmt: skip
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "march: native builds for the CPU of the build machine" in proc.stderr


def test_tensorflow_release_override(tmp_path: Path) -> None:
    proc = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.17.1", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    as_json = run_tfbuild("build", "--variant", "avx2-fma", "--dry-run", "--format", "json",
                          cwd=REPO)  # fmt: skip
    assert as_json.returncode == 64 and as_json.stdout == ""
    assert "--dry-run prints the recipes, not a JSON document" in as_json.stderr
    assert "tensorflow/tools/pip_package:wheel" in proc.stdout  # the 2.17 era's target
    assert "git_ref v2.17.1" in proc.stdout or "v2.17.1" in proc.stdout
    proc = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.99.0", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 64
    assert "--tensorflow '2.99.0': no build recipe for this release" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_new_release_builds_mkl_from_the_last_release_that_has_it() -> None:
    """The nightly's build step for a new release without --config=mkl (2.22.0): the default
    matrix's mkl-avx2 renders TensorFlow 2.21.0 with --config=mkl, said on stderr, instead of
    being refused; avx2-fma renders the new release."""
    proc = run_tfbuild("build", "--variant", "mkl-avx2", "--tensorflow", "2.22.0", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "TensorFlow 2.21.0, hermetic_cc era" in proc.stdout
    command = proc.stdout.split("bazel command =====\n", 1)[1].splitlines()[0]
    assert "--config=mkl " in command
    assert (
        "note: variant 'mkl-avx2': TensorFlow 2.22.0 (--tensorflow) has no --config=mkl (its "
        ".bazelrc defines it up to 2.21): it builds 2.21.0, the matrix's defaults.tensorflow"
    ) in proc.stderr
    other = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.22.0", "--dry-run",
                        cwd=REPO)  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "TensorFlow 2.22.0, hermetic_cc era" in other.stdout and "note:" not in other.stderr
