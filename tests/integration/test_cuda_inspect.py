"""`tfbuild inspect` of real CUDA device code: the GPU-enabled tensorflow 2.21.0 wheel, with
cuobjdump installed on demand from the package index (none on PATH), checked against
cuobjdump run here by hand."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import REPO

from tfbuild import pip
from tfbuild.audit import cuobjdump
from tfbuild.config.model import INHERIT_PIP

pytestmark = [pytest.mark.slow]

TENSORFLOW = "tensorflow==2.21.0"
CHECKED_OBJECT = "tensorflow/libtensorflow_framework.so.2"


def path_without_cuobjdump() -> str:
    return os.pathsep.join(
        d
        for d in os.environ.get("PATH", "").split(os.pathsep)
        if d and not (Path(d) / "cuobjdump").exists()
    )


@pytest.fixture(autouse=True)
def _no_cuobjdump(monkeypatch: pytest.MonkeyPatch) -> None:
    """tfbuild must install its own: a CUDA toolkit on this machine's PATH is hidden."""
    monkeypatch.setenv("PATH", path_without_cuobjdump())


def test_the_on_demand_install_lands_in_the_cache_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    tool = cuobjdump.DeviceCode(cache, INHERIT_PIP).tool
    assert isinstance(tool, cuobjdump.Cuobjdump), tool
    folder = cache / "tools" / f"cuobjdump-{tool.version}"
    assert tool.path == folder / "bin" / "cuobjdump"
    assert tool.source == f"nvidia-cuda-cuobjdump {tool.version}"
    assert cuobjdump.tool_version(tool.path) == tool.version
    origin = json.loads((folder / "origin.json").read_text())
    assert origin["distribution"] == "nvidia-cuda-cuobjdump" and origin["version"] == tool.version
    assert [p.name for p in (cache / "tools").iterdir() if p.name != ".cuobjdump.lock"] == [
        folder.name
    ]  # no temporary folder left behind

    def no_index(*args: object, **kwargs: object) -> None:
        raise AssertionError("the package index was asked again")

    monkeypatch.setattr(pip, "resolve", no_index)
    again = cuobjdump.DeviceCode(cache, INHERIT_PIP).tool
    assert again == tool


@pytest.fixture(scope="module")
def gpu_wheel(tf_workspace: Path) -> Path:
    """The GPU-enabled Linux wheel of tensorflow 2.21.0, fetched into the shared store once."""
    matrix = tf_workspace / "gpu-matrix.yaml"
    matrix.write_text(f"variants:\n  - {{name: gpu, source: pypi, requirement: {TENSORFLOW}}}\n")
    store = tf_workspace / "wheels"
    fetched = run_tfbuild("fetch", "--matrix", str(matrix), "--store", str(store), timeout=1800)
    assert fetched.returncode == 0, fetched.stdout + fetched.stderr
    wheels = sorted(store.glob("*-gpu/tensorflow-2.21.0-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def own_listing(wheel: Path, tmp_path: Path) -> dict[str, list[str]]:
    """cuobjdump run by hand on one object of the wheel: NVIDIA's wheel of it downloaded with
    pip, the object unpacked with zipfile, the listing read with a regex of this test's own."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
         "--dest", str(tmp_path / "dl"), "nvidia-cuda-cuobjdump"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    (tool_wheel,) = (tmp_path / "dl").glob("*.whl")
    with zipfile.ZipFile(tool_wheel) as archive:
        (member,) = [n for n in archive.namelist() if n.endswith("bin/cuobjdump")]
        tool = Path(archive.extract(member, tmp_path / "tool"))
    tool.chmod(0o755)
    with zipfile.ZipFile(wheel) as archive:
        library = Path(archive.extract(CHECKED_OBJECT, tmp_path / "wheel"))
    out = subprocess.run(
        [str(tool), "--list-elf", "--list-ptx", str(library)],
        check=True, capture_output=True, text=True, timeout=600,
    ).stdout  # fmt: skip
    images = re.findall(r"^(ELF|PTX) file\s+\d+: \S+\.(sm_\w+)\.(?:cubin|ptx)$", out, re.M)
    assert len(images) > 100, out[:2000]  # hundreds of kernels, each a set of images
    return {
        "sass": sorted({arch for kind, arch in images if kind == "ELF"}),
        "ptx": sorted({arch.replace("sm_", "compute_") for kind, arch in images if kind == "PTX"}),
    }


@pytest.mark.tf
def test_tensorflow_gpu_wheel_lists_its_architectures_and_judges_gpus(
    gpu_wheel: Path, tf_workspace: Path, tmp_path: Path
) -> None:
    """`--gpu sm_90`: runs (exit 0), with the SASS and PTX of every object with device code
    as cuobjdump lists them; `--gpu sm_50`: exit 6, naming the SASS and PTX missing."""
    cache = tf_workspace / "cache"
    args = ("inspect", str(gpu_wheel), "--cache-dir", str(cache))
    proc = run_tfbuild(*args, "--gpu", "sm_90", "--format", "json", timeout=3600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    cuda = report["cuda"]
    assert cuda["checked"] is True, cuda
    assert Path(cuda["tool"]["path"]).is_relative_to(cache / "tools")
    listed = {o["path"]: o["cuda"] for o in report["objects"] if o["cuda"]}
    assert CHECKED_OBJECT in listed and len(listed) == cuda["objects"]

    own = own_listing(gpu_wheel, tmp_path)
    assert own["sass"] and own["ptx"]
    ours = listed[CHECKED_OBJECT]
    assert sorted(ours["sass"]) == own["sass"] and sorted(ours["ptx"]) == own["ptx"]
    assert set(own["sass"]) <= set(cuda["sass"]) and set(own["ptx"]) <= set(cuda["ptx"])
    assert set(cuda["sass"]) == {a for c in listed.values() for a in c["sass"]}
    assert report["verdict"]["runs"] is True
    assert report["verdict"]["cuda"].startswith("runs on sm_90 (SASS sm_90)")

    proc = run_tfbuild(*args, "--gpu", "sm_50", timeout=600)
    assert proc.returncode == 6, proc.stdout + proc.stderr
    assert "CUDA device code (cuobjdump)" in proc.stdout
    for arch in own["sass"] + own["ptx"]:
        assert arch in proc.stdout
    assert (
        f"{gpu_wheel.name}: CUDA no code for sm_50: no SASS for sm_50 and no PTX at or below "
        "compute_50; the wheel has SASS " + ", ".join(cuda["sass"])
    ) in proc.stderr

    # The reference's example is this wheel's real listing and verdict.
    readme = (REPO / "docs" / "reference.md").read_text()
    example = readme.split(f"$ tfbuild inspect {gpu_wheel.name} --gpu sm_50", 1)[1]
    example = example.split("```", 1)[0]
    assert f"│ {', '.join(cuda['sass'])} │ {', '.join(cuda['ptx'])} │" in example
    said = " ".join(example.split("CUDA   ", 1)[1].split())
    assert said in " ".join(proc.stderr.split())
