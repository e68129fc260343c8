"""Shared fixtures. Tests that need a Docker engine or qemu-user skip when it is missing on a
developer machine, and fail when CI is set: in CI those tests must run."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASE_IMAGE = "tfbuild/base:bookworm"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def require(condition: bool, reason: str) -> None:
    """Skip locally, fail in CI, when something a test needs is missing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"CI is set but {reason}", pytrace=False)
    pytest.skip(reason)


def run_tfbuild(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the installed tfbuild as a user would (python -m tfbuild)."""
    return subprocess.run(
        [sys.executable, "-m", "tfbuild", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[None]:
    from tfbuild import host

    status = host.docker_status()
    require(status.reachable, f"no Docker engine is reachable ({status.error})")
    yield


@pytest.fixture(scope="session")
def base_image(docker_engine: None) -> str:
    """The debootstrapped base image, made by the repository's script when missing."""
    present = subprocess.run(
        ["docker", "image", "inspect", BASE_IMAGE], capture_output=True, check=False
    )
    if present.returncode != 0:
        require(shutil.which("debootstrap") is not None, "debootstrap is not installed")
        subprocess.run([str(REPO / "scripts/make-base-image"), BASE_IMAGE], check=True)
    return BASE_IMAGE


def bridge_gateway(image: str) -> str:
    """The address at which containers on the engine's default bridge network reach the
    engine's machine: the gateway the engine reports for the network, or, where it leaves it
    out of IPAM (docker.io 20.10 on Debian 12 reports only the subnet), the default route a
    container of `image` on that network sees."""
    from tfbuild import engine

    client = engine.client()
    for config in client.networks.get("bridge").attrs["IPAM"].get("Config") or []:
        if config.get("Gateway"):
            return str(config["Gateway"])
    table = client.containers.run(
        image, ["cat", "/proc/net/route"], remove=True, network_mode="bridge"
    )
    for line in bytes(table).decode().splitlines()[1:]:
        fields = line.split()
        if len(fields) > 2 and fields[1] == "00000000":  # the default route
            return socket.inet_ntoa(struct.pack("<I", int(fields[2], 16)))
    raise AssertionError(f"no default route in a container on the bridge network:\n{table!r}")


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tfbuild's own wheel plus every dependency wheel, for offline installs in containers."""
    out = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--wheel-dir", str(out), str(REPO)],
        check=True,
        timeout=600,
    )
    return out


TOY = FIXTURES / "toy-recipe"


def toy_build_args(store: Path, *args: str) -> list[str]:
    """`tfbuild build` arguments for the toy recipe: a C extension compiled with each
    variant's copts."""
    matrix, source = TOY / "matrix.yaml", TOY / "src"
    return ["build", "--matrix", str(matrix), "--tf-source", str(source), "--store", str(store),
            *args]  # fmt: skip


def toy_build(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tfbuild(*toy_build_args(store, *args), timeout=900)


def containers(label: str, *, stopped: bool = False) -> list[str]:
    """IDs of the Docker containers carrying `label`: running ones, or all with `stopped`."""
    listing = ["docker", "ps", "-aq" if stopped else "-q", "--filter", f"label={label}"]
    return subprocess.run(listing, capture_output=True, text=True, check=True).stdout.split()


@contextlib.contextmanager
def inspected(label: str) -> Iterator[dict[str, dict[str, Any]]]:
    """While the block runs, `docker inspect` of every container carrying `label`, by id, as
    the engine reports it (polled; the containers are gone when the block ends)."""
    from tfbuild import engine

    seen: dict[str, dict[str, Any]] = {}
    done = threading.Event()

    def poll() -> None:
        client = engine.client()
        while not done.is_set():
            for created in client.containers.list(all=True, filters={"label": label}):
                seen.setdefault(created.id, created.attrs)
            done.wait(0.2)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


@pytest.fixture(scope="session")
def toy_store(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both toy variants (avx2-fma, avx512) built once per test session."""
    store = tmp_path_factory.mktemp("toy-wheels")
    proc = toy_build(store, "--all")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return store


def toy_wheel(store: Path, variant: str) -> Path:
    return next((store / f"tf2.17-py3.11-{variant}").glob("*.whl"))


@pytest.fixture(scope="session")
def tf_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wheel store and runtime/audit cache shared by every test that installs TensorFlow:
    each TensorFlow wheel is downloaded, installed and audited once per test session."""
    return tmp_path_factory.mktemp("tf-workspace")
