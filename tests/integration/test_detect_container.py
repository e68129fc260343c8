"""`tfbuild detect` inside real containers: CPU limits set by the engine must show up."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from support.env import REPO

pytestmark = [pytest.mark.docker, pytest.mark.slow]

# The distribution that provides `import tfbuild`: the index's `tfbuild` is another project.
DISTRIBUTION = re.findall(r'^name = "(.+)"$', (REPO / "pyproject.toml").read_text(), re.M)[0]


def docker_run(image: str, *args: str, volumes: dict[Path, str], command: str) -> str:
    mounts = [arg for host, spec in volumes.items() for arg in ("-v", f"{host}:{spec}")]
    proc = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", *mounts, *args, image, "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


@pytest.fixture(scope="module")
def venv_in_image(
    base_image: str, wheelhouse: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """tfbuild installed offline from the wheelhouse into a venv that later containers mount."""
    venv = tmp_path_factory.mktemp("container-venv")
    docker_run(
        base_image,
        volumes={wheelhouse: "/wh:ro", venv: "/v"},
        command=f"python3 -m venv /v && /v/bin/pip install -q --no-index --find-links /wh "
        f"{DISTRIBUTION}",
    )
    return venv


def detect_in(base_image: str, venv: Path, *limits: str) -> dict[str, object]:
    out = docker_run(
        base_image, *limits, volumes={venv: "/v:ro"}, command="/v/bin/tfbuild detect --format json"
    )
    document: dict[str, object] = json.loads(out)
    return document


def test_cpus_1_shows_one_usable_cpu(base_image: str, venv_in_image: Path) -> None:
    """The seed-001 trap: `docker run --cpus=1` on a multi-core host must plan for one CPU."""
    doc = detect_in(base_image, venv_in_image, "--cpus=1")
    topology = doc["topology"]
    assert isinstance(topology, dict)
    assert topology["cgroup"]["quota_cpus"] == 1.0
    assert topology["usable_cpus"] == 1
    assert topology["usable_physical_cores"] == 1
    threads = doc["recommendations"]["threads"]  # type: ignore[index]
    assert threads["intra_op"] == 1 and threads["omp_num_threads"] == 1


def test_cpuset_shows_in_affinity(base_image: str, venv_in_image: Path) -> None:
    doc = detect_in(base_image, venv_in_image, "--cpuset-cpus=0")
    topology = doc["topology"]
    assert isinstance(topology, dict)
    assert topology["affinity"] == [0]
    assert topology["usable_cpus"] == 1
    assert topology["cgroup"]["quota_cpus"] is None


def test_unlimited_container_sees_the_host(base_image: str, venv_in_image: Path) -> None:
    import os

    doc = detect_in(base_image, venv_in_image)
    topology = doc["topology"]
    assert isinstance(topology, dict)
    assert topology["usable_cpus"] == len(os.sched_getaffinity(0))
    assert doc["system"]["os"].startswith("Debian")  # type: ignore[index]
