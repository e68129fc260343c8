"""`tfbuild base-image` against a real engine and a real registry (Distribution's
docker-registry on a loopback port, standing in for Docker Hub, which is not reachable here;
it holds the debootstrapped Debian image): pulled by digest and given Python where a registry
answers, refused when the registry has no such digest, and sent to debootstrap, or stopped with
what to install, when no registry answers. The debootstrap path itself runs when the test
session makes its base image (conftest.base_image)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.docker import ensure_base_image
from support.registry import push, registry

pytestmark = [pytest.mark.docker]

NO_SUCH = "sha256:" + "1" * 64


@pytest.fixture(scope="module")
def pinned(base_image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base image in a registry of its own, as ADDRESS/debian@sha256:DIGEST."""
    with registry(tmp_path_factory.mktemp("registry")) as address:
        yield push(base_image, address, "debian:bookworm")


@pytest.fixture
def tag() -> Iterator[str]:
    name = f"tfbuild-test/base-{uuid.uuid4().hex[:10]}:bookworm"
    yield name
    subprocess.run(["docker", "rmi", "-f", name], capture_output=True, check=False)


def _labels(tag: str) -> dict[str, str]:
    proc = subprocess.run(
        ["docker", "image", "inspect", tag], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, f"{tag} is not on the engine"
    return dict(json.loads(proc.stdout)[0]["Config"]["Labels"] or {})


def test_pulled_by_the_matrix_digest_and_given_python(
    pinned: str, tag: str, tmp_path: Path
) -> None:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        f"defaults:\n  base_images: {{build: '{tag}', runtime: '{tag}', from: '{pinned}'}}\n"
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    proc = run_tfbuild("base-image", "--matrix", str(matrix), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"{tag}: pulled, {pinned} + python3, python3-venv, python3-pip")
    assert f"+ docker pull {pinned}" in proc.stderr and "debootstrap" not in proc.stderr
    assert _labels(tag)["org.tfbuild.base.from"] == pinned
    venv = subprocess.run(
        ["docker", "run", "--rm", tag, "bash", "-c",
         "python3 -m venv /tmp/v && /tmp/v/bin/pip --version"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert venv.returncode == 0 and "pip " in venv.stdout, venv.stderr
    again = run_tfbuild("base-image", "--matrix", str(matrix))
    assert again.returncode == 0 and again.stdout.startswith(
        f"{tag}: present, already on the engine"
    )
    assert pinned in again.stdout and "docker pull" not in again.stderr


def test_a_digest_the_registry_does_not_have_is_refused(pinned: str, tag: str) -> None:
    wrong = pinned.partition("@")[0] + "@" + NO_SUCH
    proc = run_tfbuild("base-image", tag, "--from", wrong)
    assert proc.returncode == 7, proc.stderr
    assert f"tfbuild: the registry refused {wrong}: manifest for {wrong} not found" in proc.stderr
    assert "Traceback" not in proc.stderr
    absent = subprocess.run(["docker", "image", "inspect", tag], capture_output=True, check=False)
    assert absent.returncode != 0


def test_no_registry_and_no_debootstrap_says_what_to_install(tag: str) -> None:
    closed = f"127.0.0.1:9/debian@{NO_SUCH}"  # the discard port: nothing listens there
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    proc = run_tfbuild("base-image", tag, "--from", closed, env={"PATH": path})
    assert proc.returncode == 12, proc.stderr
    assert f"tfbuild: cannot make {tag}: no registry answers for {closed} (" in proc.stderr
    assert "connection refused" in proc.stderr
    assert "and debootstrap is not installed here (apt-get install debootstrap)" in proc.stderr


@pytest.mark.parametrize("ci", ["true", ""])
def test_a_base_image_that_cannot_be_made_fails_the_docker_tests_in_ci(
    ci: str, tag: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the tests that need the base image do when it cannot be made, through the fixture's
    own helper on a tag the engine lacks: without debootstrap, fail with the command's reason
    in CI, skip elsewhere; with a debootstrap that fails (a mirror that does not answer), fail
    everywhere, with the script's words."""
    monkeypatch.setenv("CI", ci)
    no_debootstrap = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    outcome = pytest.fail.Exception if ci else pytest.skip.Exception
    with pytest.raises(outcome) as stopped:
        ensure_base_image(tag, env={"PATH": no_debootstrap})
    said = str(stopped.value)
    assert said.startswith(("CI is set but " if ci else "") + f"the base image {tag} cannot be "
                           f"made here: tfbuild: cannot make {tag}: no registry answers for "
                           "docker.io/library/debian:"), said  # fmt: skip
    assert said.endswith("and debootstrap is not installed here (apt-get install debootstrap), "
                         "which makes it without a registry"), said  # fmt: skip
    with pytest.raises(AssertionError) as failed:
        ensure_base_image(tag, env={"MIRROR": "http://127.0.0.1:9/debian"})
    assert f"tfbuild base-image {tag} failed" in str(failed.value)
    assert "make-base-image: debootstrap failed; full log: " in str(failed.value)
    assert f"making the base image {tag} with debootstrap failed (exit 1)" in str(failed.value)
