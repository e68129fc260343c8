"""A variant's Python and CUDA reach its runtime: the plan refuses a Python no runtime here
has, a local venv is made from an interpreter of the wheel's CPython version, a CUDA build is
installed with its and-cuda extra (real pip, offline), and a CUDA build that sees no GPU at
its smoke test is a failure."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cext import tagged_wheel
from conftest import require, run_tfbuild

from tfbuild import host, pip, wheelfile
from tfbuild.bench.runner import gpu_fallback
from tfbuild.errors import BadWheel, InstallError
from tfbuild.fetch import Artifact, _artifact
from tfbuild.matrix import PipSettings, load_matrix
from tfbuild.render import render_runtime, template_dirs
from tfbuild.runtime import LocalVenv

SETTINGS = PipSettings("inherit", "inherit", "inherit", ())
OTHER = "3.12" if host.RUNNING_PYTHON != "3.12" else "3.11"


def artifact(path: Path, extras: tuple[str, ...] = ()) -> Artifact:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Artifact("probe", path, digest, (), {}, extras)


def test_plan_refuses_a_python_no_runtime_here_has(tmp_path: Path) -> None:
    """A source build for Python 3.9 (TensorFlow 2.15 has 3.9 wheels) on a local runtime where
    no python3.9 runs: "cannot run here" in the plan, before anything is built or fetched. With
    an interpreter on PATH the same variant runs. (A container runtime asks its image instead:
    tests/integration/test_runtime_image.py.)"""
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n"
        "  - {name: py39, source: bazel, tensorflow: 2.15.1, python: '3.9', runtime: local}\n"
        f"  - {{name: here, source: bazel, tensorflow: 2.15.1, python: '{host.RUNNING_PYTHON}', "
        "runtime: local}\n"
    )
    bare_path = f"{Path(sys.executable).parent}:/usr/bin:/bin"
    proc = run_tfbuild(
        "matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--json",
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
    proc = run_tfbuild("matrix", "--matrix", str(tmp_path / "wheels.yaml"), "--json")
    assert proc.returncode == 0, proc.stderr
    wheels = {v["name"]: v for v in json.loads(proc.stdout)["variants"]}
    assert not any("needs Python" in r for r in wheels["pure"]["reasons"])
    assert any(
        r.startswith("needs Python 3.99; tfbuild runs on Python")
        for r in wheels["later"]["reasons"]
    )

    found = host.find_python("3.9")
    require(found is not None, "no Python 3.9 interpreter on this machine")
    assert found is not None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python3.9").symlink_to(found)
    with_it = run_tfbuild(
        "matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--json",
        env={"PATH": f"{tmp_path / 'bin'}:{bare_path}", "PYENV_ROOT": str(tmp_path / "none")},
    )  # fmt: skip
    variants = {v["name"]: v for v in json.loads(with_it.stdout)["variants"]}
    assert not any("Python" in r for r in variants["py39"]["reasons"])


def test_matrix_refuses_a_python_tensorflow_has_no_wheels_for(tmp_path: Path) -> None:
    """TensorFlow 2.21 dropped Python 3.9: no runtime can exist, the matrix is refused with
    the line and the accepted range."""
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "variants:\n  - {name: old, source: bazel, tensorflow: 2.21.0, python: '3.9'}\n"
    )
    proc = run_tfbuild("matrix", "--matrix", str(path))
    assert proc.returncode == 2
    assert "matrix.yaml:2" in proc.stderr
    assert "does not build for this Python (got '3.9'; expected 3.10 to 3.13)" in proc.stderr


def test_a_local_venv_is_made_from_the_wheels_python(tmp_path: Path) -> None:
    """A cp3XY wheel gets a venv of CPython 3.XY (another version than tfbuild's own), and a
    wheel for a Python this machine lacks is refused by name."""
    found = host.find_python(OTHER)
    require(found is not None, f"no Python {OTHER} interpreter on this machine")
    tag = f"cp{OTHER.replace('.', '')}-none-any"
    venv = LocalVenv(
        artifact(tagged_wheel(tmp_path, "tfbuild_pyprobe", tag)), tmp_path / "c", SETTINGS
    )
    assert venv.python == found
    assert venv.prepare() is True
    probe = subprocess.run(
        [str(venv.interpreter), "-c", "import tfbuild_pyprobe as p; print(p.PYTHON)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == OTHER
    with pytest.raises(InstallError, match=r"needs Python 3\.99; tfbuild runs on Python"):
        LocalVenv(
            artifact(tagged_wheel(tmp_path, "later", "cp399-none-any")), tmp_path / "c", SETTINGS
        )


def test_a_cuda_build_is_installed_with_its_and_cuda_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """TensorFlow's CUDA wheels carry no CUDA libraries (--config=cuda_wheel); its and-cuda
    extra names them. A CUDA source build's artifact asks for that extra, and real pip
    installs what the extra names (offline, from a local folder of wheels)."""
    links = tmp_path / "links"
    links.mkdir()
    tagged_wheel(links, "tfbuild_cudalib_probe", "py3-none-any")
    main = tagged_wheel(
        tmp_path, "tfbuild_cuda_probe", "py3-none-any",
        "Provides-Extra: and-cuda\nRequires-Dist: tfbuild_cudalib_probe; extra == 'and-cuda'\n",
    )  # fmt: skip
    (tmp_path / "m.yaml").write_text(
        "variants:\n  - name: gpu\n    source: bazel\n    tensorflow: 2.21.0\n"
        "    cuda: {version: '12.8.1', cudnn: '9.8.0', compute_capabilities: [sm_90]}\n"
        "  - {name: cpu, source: bazel, tensorflow: 2.21.0}\n"
        "  - {name: stock-gpu, source: pypi, requirement: 'tensorflow[and-cuda]==2.21.0'}\n"
    )
    matrix = load_matrix(tmp_path / "m.yaml")
    digest = hashlib.sha256(main.read_bytes()).hexdigest()
    gpu = _artifact(matrix.variant("gpu"), main, {"sha256": digest})
    assert gpu.extras == ("and-cuda",) and gpu.wants_gpu
    assert _artifact(matrix.variant("cpu"), main, {"sha256": digest}).extras == ()
    stock = _artifact(matrix.variant("stock-gpu"), main, {"sha256": digest})
    assert stock.extras == ("and-cuda",)  # a requirement's extras survive the store
    script = render_runtime(
        template_dirs(None),
        {"wheel": main.name, "install_target": gpu.install_target, "pythons": [],
         "sha256": digest, "uid": 1000},
    )  # fmt: skip
    assert f"'./wheel/{main.name}[and-cuda]'" in script
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    venv = LocalVenv(gpu, tmp_path / "cache", SETTINGS)
    assert venv.prepare() is True
    listed = subprocess.run(
        [str(venv.interpreter), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = {p["name"].replace("-", "_") for p in json.loads(listed.stdout)}
    assert {"tfbuild_cuda_probe", "tfbuild_cudalib_probe"} <= names

    # The same wheel without the extra is another venv, without the CUDA libraries; a results
    # file keeps the extra for --resume.
    cpu = _artifact(matrix.variant("cpu"), main, {"sha256": digest})
    plain = LocalVenv(cpu, tmp_path / "cache", SETTINGS)
    assert plain.path != venv.path and plain.prepare() is True
    listed = subprocess.run(
        [str(plain.interpreter), "-m", "pip", "list", "--format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = {p["name"].replace("-", "_") for p in json.loads(listed.stdout)}
    assert "tfbuild_cuda_probe" in names and "tfbuild_cudalib_probe" not in names
    assert Artifact.from_json(json.loads(json.dumps(gpu.to_json())), gpu.manifest) == gpu


def test_a_cuda_build_that_sees_no_gpu_is_a_failure() -> None:
    """The smoke test's record decides (no GPU here, so the records are written out: a CPU
    build, a CUDA build without a device, a CUDA build that sees one)."""
    cpu_only = gpu_fallback({"cuda_build": False, "gpus": []})
    assert cpu_only is not None and "not a CUDA build" in cpu_only
    no_device = gpu_fallback({"cuda_build": True, "gpus": []})
    assert no_device is not None and "sees no GPU" in no_device
    assert gpu_fallback({"cuda_build": True, "gpus": ["/physical_device:GPU:0"]}) is None


def test_a_wheels_pythons_come_from_its_cpython_tags() -> None:
    """cp39.cp310 means 3.9 or 3.10 (ordered by number, not text); a py3 or abi3 wheel needs no
    particular Python; an interpreter tag that is not cp3XY is refused by name, since the
    versions reach the runtime's install script."""
    assert wheelfile.cpython_versions("x-1.0-cp310.cp39-cp310.cp39-linux_x86_64.whl") == [
        "3.9",
        "3.10",
    ]
    assert wheelfile.cpython_versions("x-1.0-py3-none-any.whl") == []
    assert wheelfile.cpython_versions("x-1.0-cp311-abi3-linux_x86_64.whl") == []
    for tag in ("cp3$(id)", "cp3", "cp2x"):
        with pytest.raises(BadWheel, match=re.escape(f"{tag!r} is not a CPython 3 tag")):
            wheelfile.cpython_versions(f"x-1.0-{tag}-none-any.whl")


def test_an_unexpected_pip_report_is_an_install_error(tmp_path: Path) -> None:
    """pip's --report is parsed as pip documents it; a pip that exits 0 with another answer
    (no wheel for the requirement, or not JSON) is an InstallError naming the requirement,
    not a traceback."""
    for answer in ('{"version": "1", "install": []}', "Looking in indexes: ..."):
        fake = tmp_path / "python"
        fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{answer}\nEOF\n")
        fake.chmod(0o755)
        with pytest.raises(InstallError, match="resolving nvidia-cuda-cuobjdump: pip's --report"):
            pip.resolve("nvidia-cuda-cuobjdump", SETTINGS, fake)
