"""Where each variant runs, and whether its runtime has the Python its wheel needs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cext import tagged_wheel
from support.cli import run_tfbuild
from support.env import REPO, require

from tfbuild.config.load import load_matrix
from tfbuild.errors import EngineUnavailable
from tfbuild.machine.pythons import RUNNING_PYTHON, find_python
from tfbuild.plan.runtimes import runtime_kind


def test_runtime_choice() -> None:
    m = load_matrix(REPO / "matrix.yaml")
    stock, built = m.variant("stock"), m.variant("mkl-avx2")
    assert runtime_kind(stock, "auto", engine_reachable=True) == "local"
    assert runtime_kind(built, "auto", engine_reachable=True) == "docker"
    assert runtime_kind(built, "auto", engine_reachable=False) == "local"
    assert runtime_kind(built, "local", engine_reachable=True) == "local"
    with pytest.raises(EngineUnavailable, match="no engine is reachable"):
        runtime_kind(stock, "docker", engine_reachable=False)


def test_plan_refuses_a_python_no_runtime_here_has(tmp_path: Path) -> None:
    """A source build for Python 3.9 (TensorFlow 2.15 has 3.9 wheels) on a local runtime where
    no python3.9 runs: "cannot run here" in the plan, before anything is built or fetched. With
    an interpreter on PATH the same variant runs. (A container runtime asks its image instead:
    tests/integration/test_runtime_image.py.)"""
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n"
        "  - {name: py39, source: bazel, tensorflow: 2.15.1, python: '3.9', runtime: local}\n"
        f"  - {{name: here, source: bazel, tensorflow: 2.15.1, python: '{RUNNING_PYTHON}', "
        "runtime: local}\n"
    )
    bare_path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    proc = run_tfbuild(
        "matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--format", "json",
        env={"PATH": bare_path, "PYENV_ROOT": str(tmp_path / "no-pyenv")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    variants = {v["name"]: v for v in json.loads(proc.stdout)["variants"]}
    assert variants["py39"]["runs_here"] is False
    assert any(
        r.startswith("needs Python 3.9; tfbuild runs on Python")
        for r in variants["py39"]["reasons"]
    )
    assert not any("Python" in r for r in variants["here"]["reasons"])

    # A local wheel is judged by its tags: a pure py3 wheel needs no particular Python.
    pure = tagged_wheel(tmp_path, "tfbuild_any_probe", "py3-none-any")
    later = tagged_wheel(tmp_path, "tfbuild_later_probe", "cp399-cp399-linux_x86_64")
    (tmp_path / "wheels.yaml").write_text(
        f"variants:\n  - {{name: pure, source: wheel, path: {pure}}}\n"
        f"  - {{name: later, source: wheel, path: {later}}}\n"
    )
    proc = run_tfbuild("matrix", "--matrix", str(tmp_path / "wheels.yaml"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    wheels = {v["name"]: v for v in json.loads(proc.stdout)["variants"]}
    assert not any("needs Python" in r for r in wheels["pure"]["reasons"])
    assert any(
        r.startswith("needs Python 3.99; tfbuild runs on Python")
        for r in wheels["later"]["reasons"]
    )

    found = find_python("3.9")
    require(found is not None, "no Python 3.9 interpreter on this machine")
    assert found is not None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3.9").symlink_to(found)
    with_it = run_tfbuild(
        "matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--format", "json",
        env={"PATH": f"{tmp_path / 'bin'}:{bare_path}", "PYENV_ROOT": str(tmp_path / "none")},
    )  # fmt: skip
    variants = {v["name"]: v for v in json.loads(with_it.stdout)["variants"]}
    assert not any("Python" in r for r in variants["py39"]["reasons"])
