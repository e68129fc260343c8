"""The nightly CI's pieces a user meets on the command line: what the jobs may install, builds
for a runner's saved profile, the TensorFlow release override, and the per-class reference
results the gate compares with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import FIXTURES, REPO, run_tfbuild
from synthetic import session, write

from tfbuild.ci import check_install
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
    assert "tensorflow/tools/pip_package:wheel" in proc.stdout  # the 2.17 era's target
    assert "git_ref v2.17.1" in proc.stdout or "v2.17.1" in proc.stdout
    proc = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.99.0", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 64
    assert "--tensorflow '2.99.0': no build recipe for this release" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_keep_replaces_only_the_same_machine_class(tmp_path: Path) -> None:
    reference = tmp_path / "previous"
    write(reference / "haswell-old.json", session({}, seed=1, session_id="h-old"))
    write(reference / "zen4-old.json", session({}, seed=2, cpuinfo=ZEN4, session_id="z-old"))
    new = write(tmp_path / "new" / "haswell-new.json", session({}, seed=3, session_id="h-new"))
    proc = run_tfbuild("ci", "keep", str(new.parent), "--into", str(reference))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in reference.iterdir()) == ["haswell-new.json", "zen4-old.json"]
    kept = json.loads((reference / "haswell-new.json").read_text())
    assert kept["session"]["id"] == "h-new"
    proc = run_tfbuild("ci", "keep", str(tmp_path / "none"), "--into", str(reference))
    assert proc.returncode == 64 and "RESULTS" in proc.stderr


def test_host_key_overrides_the_machine_class(tmp_path: Path) -> None:
    """Two machines of different CPUs compare when both sessions say they are one class."""
    old = session({"v:default": 1.0}, seed=1, session_id="o")
    new = session({"v:default": 0.8}, seed=2, cpuinfo=ZEN4, session_id="n")
    for doc in (old, new):
        doc["session"]["host_key"] = "ci-pool-large"
    proc = run_tfbuild("compare", str(write(tmp_path / "n.json", new)), "--against",
                       str(write(tmp_path / "o.json", old)))  # fmt: skip
    assert proc.returncode == 10 and "[ci-pool-large]" in proc.stderr
