"""The cached local venvs: made in place without pip of their own (this process's pip installs
into them), found broken when their interpreter is gone, and made again."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from support.cext import build_wheel, pure_wheel, tagged_wheel
from support.env import require

from tfbuild import pip
from tfbuild.build.render import render_runtime, template_dirs
from tfbuild.config.load import load_matrix
from tfbuild.config.model import PipSettings
from tfbuild.errors import InstallError
from tfbuild.fetch import _artifact
from tfbuild.machine.pythons import RUNNING_PYTHON, find_python
from tfbuild.runtime.base import traces_name
from tfbuild.runtime.records import PayloadConfig, RuntimeRecord
from tfbuild.runtime.venv import LocalVenv
from tfbuild.store import Artifact, Manifest


@pytest.mark.slow  # real venvs and pip
def test_a_venv_works_where_it_stands_and_a_broken_one_is_redone(tmp_path: Path) -> None:
    wheel = pure_wheel(tmp_path, "tfbuild_venv_probe", "1.0", [])
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    artifact = Artifact("probe", wheel, digest, (), None)
    venv = LocalVenv(artifact, tmp_path / "cache", PipSettings("inherit", "inherit", "inherit", ()))
    assert venv.prepare() is True
    # No pip of its own: this process's pip (pip --python) installed into it, without the
    # seconds ensurepip takes; its interpreter runs from where it stands.
    assert not (venv.path / "bin" / "pip").exists()
    assert list((venv.path / "lib").glob("python3.*/site-packages/pip")) == []
    prefix = subprocess.run(
        [str(venv.interpreter), "-c", "import sys; print(sys.prefix)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert prefix.stdout.strip() == str(venv.path)
    assert venv.prepare() is False  # ready: reused
    # An interpreter link whose target is gone (the Python it was made from removed) makes it
    # not ready: made again.
    python = venv.path / "bin" / "python"
    python.unlink()
    python.symlink_to(tmp_path / "gone" / "python3")
    assert venv.prepare() is True
    assert python.resolve().exists()

    probe = subprocess.run(
        [str(venv.interpreter), "-c", "import tfbuild_venv_probe as p; print(p.VERSION)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "1.0"


def test_a_venv_under_a_relative_cache_folder_is_found_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--cache-dir given as a relative path (or one through ..): the venv made there is ready
    the next time, not made again (its interpreter reports an absolute, resolved prefix)."""
    monkeypatch.chdir(tmp_path)
    wheel = pure_wheel(tmp_path, "tfbuild_venv_probe", "1.0", [])
    artifact = Artifact("probe", wheel, hashlib.sha256(wheel.read_bytes()).hexdigest(), (), None)
    (tmp_path / "sub").mkdir()
    for cache in (Path("cache"), Path("sub") / ".." / "cache"):
        venv = LocalVenv(artifact, cache, PipSettings("inherit", "inherit", "inherit", ()))
        assert venv.prepare() is (cache == Path("cache")), cache


def test_only_a_venv_of_tfbuilds_own_python_is_served_by_its_pip(tmp_path: Path) -> None:
    """pip --python runs tfbuild's pip inside the venv's interpreter, which must be a Python
    that pip supports: only venvs of the interpreter running tfbuild (links followed) go
    without pip of their own."""
    link = tmp_path / "python-link"
    link.symlink_to(os.path.realpath(sys.executable))
    assert pip._shares_pip(link) and pip._shares_pip(sys.executable)
    assert not pip._shares_pip(tmp_path / "python3.6")


INHERIT = PipSettings("inherit", "inherit", "inherit", ())


@pytest.mark.slow  # real venvs and pip
def test_local_venv_is_cached_and_rebuilt_when_broken(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, package="tinypkg", version="1.0", cflags=[])
    artifact = Artifact("tiny", wheel, "0" * 64, (), None)
    venv = LocalVenv(artifact, tmp_path / "cache", INHERIT)
    assert venv.prepare() is True
    assert venv.prepare() is False  # reused
    again = LocalVenv(artifact, tmp_path / "cache", INHERIT)
    assert again.path == venv.path and again.prepare() is False
    (venv.path / "bin" / "python").unlink()  # broken
    assert venv.prepare() is True
    check = venv.interpreter
    assert check.exists()
    constrained = LocalVenv(
        Artifact("tiny", wheel, "0" * 64, ("numpy<2",), None), tmp_path / "cache", INHERIT
    )
    assert constrained.path != venv.path  # constraints are part of the key


SETTINGS = PipSettings("inherit", "inherit", "inherit", ())


OTHER = "3.12" if RUNNING_PYTHON != "3.12" else "3.11"


def artifact(path: Path, extras: tuple[str, ...] = ()) -> Artifact:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    return Artifact("probe", path, digest, (), None, extras)


@pytest.mark.slow  # real venvs and pip
def test_a_local_venv_is_made_from_the_wheels_python(tmp_path: Path) -> None:
    """A cp3XY wheel gets a venv of CPython 3.XY (another version than tfbuild's own), and a
    wheel for a Python this machine lacks is refused by name."""
    found = find_python(OTHER)
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


@pytest.mark.slow  # real venvs and pip
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
    stored = Manifest(variant={}, source="bazel", sha256=digest)
    gpu = _artifact(matrix.variant("gpu"), main, stored)
    assert gpu.extras == ("and-cuda",) and gpu.wants_gpu
    assert _artifact(matrix.variant("cpu"), main, stored).extras == ()
    stock = _artifact(matrix.variant("stock-gpu"), main, replace(stored, source="pypi"))
    assert stock.extras == ("and-cuda",)  # a requirement's extras survive the store
    script = render_runtime(
        template_dirs(None),
        {"wheel": main.name, "install_target": gpu.install_target, "pythons": [],
         "sha256": digest, "uid": 1000, "report": pip.REPORT},
    )  # fmt: skip
    assert f"'./wheel/{main.name}[and-cuda]'" in script
    assert f"--report /opt/tf/{pip.REPORT} " in script
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0

    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    venv = LocalVenv(gpu, tmp_path / "cache", SETTINGS)
    assert venv.prepare() is True
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv.interpreter), "list", "--format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = {p["name"].replace("-", "_") for p in json.loads(listed.stdout)}
    assert {"tfbuild_cuda_probe", "tfbuild_cudalib_probe"} <= names
    # what pip installed is recorded, each file by its sha256, as pip list sees the versions
    versions = {p["name"].replace("-", "_"): p["version"] for p in json.loads(listed.stdout)}
    files = {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in [main, *links.iterdir()]}
    recorded = venv.describe().packages
    assert {(p.name.replace("-", "_"), p.version) for p in recorded} == {
        (n, versions[n]) for n in ("tfbuild_cuda_probe", "tfbuild_cudalib_probe")
    }
    assert all(p.sha256 == files[p.file] for p in recorded), recorded
    assert RuntimeRecord.from_json(json.loads(json.dumps(venv.describe().to_json()))).packages == (
        recorded
    )

    # The same wheel without the extra is another venv, without the CUDA libraries; a results
    # file keeps the extra for --resume.
    cpu = _artifact(matrix.variant("cpu"), main, stored)
    plain = LocalVenv(cpu, tmp_path / "cache", SETTINGS)
    assert plain.path != venv.path and plain.prepare() is True
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(plain.interpreter), "list", "--format=json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    names = {p["name"].replace("-", "_") for p in json.loads(listed.stdout)}
    assert "tfbuild_cuda_probe" in names and "tfbuild_cudalib_probe" not in names
    assert Artifact.from_json(json.loads(json.dumps(gpu.to_json())), gpu.manifest) == gpu


def test_a_local_runtime_sends_the_payload_its_config_and_describes_itself_as_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CONFIG.json a benchmark process gets is the configuration pinned to its CPUs, byte
    for byte as it has always been, with the folder of the build's training steps (saved for
    its XLA mode by the runtime's interpreter, once) when it trains a model; the runtime is
    described as results have recorded it."""
    wheel = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl"
    venv = LocalVenv(Artifact("tf", wheel, "2b" * 32, (), None), tmp_path / "cache", SETTINGS)
    venv.interpreter.parent.mkdir(parents=True)
    venv.interpreter.write_text(
        '#!/bin/sh\nif [ "$2" = --save-traces ]; then mkdir "$3"; echo "$4" >> "$3/../asked"; '
        'exit 0; fi\ncp "$2" "$TFBUILD_TEST_CONFIG"\n'
    )
    venv.interpreter.chmod(0o755)
    sent = tmp_path / "sent.json"
    monkeypatch.setenv("TFBUILD_TEST_CONFIG", str(sent))
    config = PayloadConfig(benchmarks=("gru-keras",), intra_op=2, inter_op=1, xla="jit")
    outcome = venv.run(config, {}, [0, 1], timeout=60)
    assert outcome.returncode == 0 and outcome.result is None
    traces = venv.path / "tfbuild-traces" / traces_name(True)
    assert sent.read_text() == (
        '{"benchmarks": ["gru-keras"], "intra_op": 2, "inter_op": 1, "xla": "jit", "cpus": [0, 1], '
        f'"traces": "{traces}"}}'
    )
    assert traces.is_dir() and traces.name.endswith("-jit")
    venv.run(config, {}, [0, 1], timeout=60)
    assert (traces.parent / "asked").read_text() == "jit\n"  # saved once
    venv.run(PayloadConfig(smoke_test=True), {}, None, timeout=60)
    assert sent.read_text() == (
        '{"benchmarks": [], "intra_op": null, "inter_op": null, "cpus": null}'
    )
    described = venv.describe()
    assert list(described.to_json().items()) == [
        ("kind", "local"),
        ("path", str(venv.path)),
        ("python", sys.version.split()[0]),
        ("wheel", wheel.name),
        ("sha256", "2b" * 32),
    ]
    assert RuntimeRecord.from_json(json.loads(json.dumps(described.to_json()))) == described
