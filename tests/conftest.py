"""Shared fixtures. Tests that need a Docker engine or qemu-user skip when it is missing on a
developer machine, and fail when CI is set: in CI those tests must run. Helpers are in the
support package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

# The suite starts hundreds of Python processes (pytest's workers, tfbuild as a user runs it,
# benchmark payloads): with PYTHONDONTWRITEBYTECODE set, each compiles every module it imports
# from source, and each worker rewrites every test module's asserts again. The suite keeps
# Python's bytecode cache (__pycache__, ignored by git) for itself and what it starts.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

import pytest  # noqa: E402
from support.cli import RUN_VARIABLE, toy_build, toy_cache  # noqa: E402
from support.docker import ensure_base_image  # noqa: E402
from support.env import BASE_IMAGE, LOCK, REPO, require  # noqa: E402

from tfbuild.files import locked  # noqa: E402


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the CPUs, at least three. The suite keeps two CPUs busy
    from its first test to its last (waits on the package index and the Docker engine
    overlap with other workers' computing), so a fourth worker on two CPUs only stretched
    every test's wall time, the longest fixtures' beyond three minutes."""
    return max(3, (os.cpu_count() or 1) + 1)


ALONE = {"test_bench.py": 75, "test_looks.py": 10, "test_workload.py": 80}
"""Files whose tests are a group each, and about how long one takes (seconds)."""
SECONDS = {
    "test_run.py": 300,
    "test_build.py": 380,
    "test_nightly_workflow.py": 375,
    "test_isa_emulation.py": 255,
    "test_remote_engine.py": 60,
    "test_answer.py": 100,
    "test_cuda_inspect.py": 80,
    "test_runtime_image.py": 75,
    "test_bazel_cache.py": 70,
    "test_ranking.py": 60,
    "test_venv.py": 60,
    "test_detect_container.py": 45,
    "test_base_image.py": 40,
    "test_machines.py": 40,
    "test_errors.py": 25,
    "test_inspect.py": 20,
    "test_resources.py": 15,
}
"""About how long the slowest file groups take on a new 2-vCPU machine (seconds; the rest take
a few): only the order groups start in follows from them."""
LEADS = 3
"""How many of the longest groups start before the simulations."""
FILL = {"test_looks.py"}
"""Files whose groups need only the CPU: no network, no engine, no shared fixture."""


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`-n auto --dist loadgroup`) tests run in groups, each group on one
    worker, one test after another: a file is a group, so its module fixtures (a remote
    engine, three bazel builds, a dind image) are made once. test_bench.py's sessions are a
    group each (they share only the TensorFlow workspace, which every worker shares), and so
    are test_looks.py's simulations (hundreds of replayed sessions each, nothing shared).
    The longest groups start first (`--no-loadscope-reorder` keeps this order), so the run
    does not end waiting on one of them; but the simulations (FILL) come right after the
    first LEADS: for the first minutes those wait on downloads (TensorFlow wheels, Debian's
    packages for the base image) and on the toy build, and the simulations need nothing but
    the CPU, which they would otherwise leave idle."""
    group_of: dict[str, str] = {}
    cost: dict[str, float] = {}
    for item in items:
        name = item.path.name
        group = item.nodeid if name in ALONE else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
        group_of[item.nodeid] = group
        cost[group] = ALONE.get(name) or SECONDS.get(name) or cost.get(group, 0) + 0.1
    longest = sorted(dict.fromkeys(group_of.values()), key=lambda g: -cost[g])  # stable
    leads = [g for g in longest if g.split("::")[0].rpartition("/")[2] not in FILL][:LEADS]
    rank = {g: i for i, g in enumerate(longest)}

    def order(item: pytest.Item) -> tuple[int, int]:
        group = group_of[item.nodeid]
        first = group in leads or item.path.name in FILL
        return (0 if first else 1, rank[group])

    items.sort(key=order)


@pytest.fixture(autouse=True)
def _environment_kept() -> Iterator[None]:
    """Each test leaves the process environment as it found it: a command run in-process may
    set a variable for the processes it starts (--keep-containers sets
    TFBUILD_KEEP_CONTAINERS), which would otherwise change every later test of this worker."""
    before = dict(os.environ)
    yield
    if os.environ != before:
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    from tfbuild.engine import docker_status

    status = docker_status()
    require(status.reachable, f"no Docker engine is reachable ({status.error})")
    yield


@pytest.fixture(scope="session")
def base_image(docker_engine: None) -> str:
    """The base image, made when missing by `tfbuild base-image` as a user runs it, and
    checked as it is made (support.docker.ensure_base_image)."""
    # Made once for all workers: the first makes it, the others wait for it.
    with locked(Path(tempfile.gettempdir()) / "tfbuild-test-base-image.lock"):
        ensure_base_image(BASE_IMAGE)
    return BASE_IMAGE


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tfbuild's own wheel plus its dependencies and build backend as the nightly workflow
    installs them (.github/tfbuild-requirements.txt, every file's sha256 checked by pip), for
    offline installs in containers: made once per test run for every worker (the first makes
    it, the others wait)."""
    out = shared(tmp_path_factory, "wheelhouse")
    with locked(out.parent / "wheelhouse.lock"):
        made = out / ".made"
        if not made.exists():
            wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(out)]
            subprocess.run([*wheel, "--require-hashes", "-r", str(LOCK)], check=True, timeout=600)
            subprocess.run([*wheel, "--no-deps", str(REPO)], check=True, timeout=600)
            made.touch()
    return out


@pytest.fixture(scope="session")
def toy_store(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both toy variants (avx2-fma, avx512), built once per test run for every worker, on the
    run's own bazel cache volume. Tests read it; a test that changes a store works on a copy."""
    store = shared(tmp_path_factory, "toy-wheels")
    with locked(store.parent / "toy-wheels.lock"):
        built = store / ".built"
        if not built.exists():
            proc = toy_build(store, "--all")
            assert proc.returncode == 0, proc.stdout + proc.stderr
            built.touch()
    return store


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The stand-in TensorFlow's wheel (support/standin_tf.py), and a wheel store and runtime
    cache every test that runs it shares, on every xdist worker: its runtime is made once."""
    from support.standin_tf import standin_wheel

    workspace = shared(tmp_path_factory, "standin-workspace")
    with locked(workspace.parent / "standin-workspace.lock"):
        made = sorted((workspace / "wheel").glob("*.whl"))
        wheel = made[0] if made else standin_wheel(workspace / "wheel")
    return wheel, workspace


def shared(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder every xdist worker of this run shares (a folder of its own without xdist)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        folder = tmp_path_factory.getbasetemp().parent / name
        folder.mkdir(exist_ok=True)
        return folder
    return tmp_path_factory.mktemp(name)


def pytest_configure(config: pytest.Config) -> None:
    os.environ.setdefault(RUN_VARIABLE, uuid.uuid4().hex)  # the workers inherit it


def pytest_unconfigure(config: pytest.Config) -> None:
    main = not os.environ.get("PYTEST_XDIST_WORKER")  # after every worker has finished
    if main and shutil.which("docker"):
        volume = ["docker", "volume", "rm", "-f", toy_cache()]
        subprocess.run(volume, capture_output=True, check=False)


def prepared(tf_workspace: Path, folder: Path, variant: str) -> Path:
    """The interpreter of a local runtime of a TensorFlow wheel from the package index
    (`variant`, a matrix entry), made in the store and caches every TensorFlow test shares as
    a session makes it: fetched, audited for this machine, installed. tfbuild locks each step,
    so each is done once per test run, by whichever test asks first."""
    from tfbuild.audit.inspect import inspect_wheel
    from tfbuild.config.load import load_matrix
    from tfbuild.config.model import INHERIT_PIP
    from tfbuild.fetch import fetch
    from tfbuild.runtime.venv import LocalVenv
    from tfbuild.store import WheelStore

    (folder / "matrix.yaml").write_text(f"schema_version: 1\nvariants:\n  - {variant}\n")
    (entry,) = load_matrix(folder / "matrix.yaml").variants
    artifact, _ = fetch(entry, WheelStore(tf_workspace / "wheels"), INHERIT_PIP)
    inspect_wheel(artifact.wheel, tf_workspace / "cache", pip_settings=INHERIT_PIP)
    venv = LocalVenv(artifact, tf_workspace / "cache", INHERIT_PIP)
    venv.prepare()
    return venv.interpreter


@pytest.fixture(scope="session")
def tf_python(tf_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The stock wheel's runtime (tensorflow-cpu 2.21.0, the default matrix's baseline)."""
    variant = "{name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}"
    return prepared(tf_workspace, tmp_path_factory.mktemp("tf-python"), variant)


@pytest.fixture(scope="session")
def tf_214_python(tf_workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Stock 2.14.1's runtime, as the default matrix's intel-2023 set defines it (numpy < 2)."""
    variant = (
        "{name: stock-2.14, source: pypi, requirement: tensorflow-cpu==2.14.1, "
        'constraints: ["numpy<2"]}'
    )
    return prepared(tf_workspace, tmp_path_factory.mktemp("tf-214-python"), variant)


@pytest.fixture(scope="session")
def tf_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel store and runtime/audit cache shared by every test that installs TensorFlow,
    on every xdist worker: each TensorFlow wheel is downloaded and installed once per test run
    (tfbuild locks a variant's fetch and a runtime's install, as for sessions sharing them)."""
    return shared(tmp_path_factory, "tf-workspace")
