"""A stand-in for GitHub's hosted Ubuntu 24.04 runner: a container whose PATH holds only the
commands the runner image's published list holds (tests/fixtures/runner-images/ubuntu-24.04.txt,
taken from actions/runner-images), where a replayed job's `run:` steps execute. A command that
is neither on that list nor installed by an earlier step is not found, and its step fails.

What cannot be had here is stood in for: the container is the Debian base image (Debian 12,
Python 3.11; the runner is Ubuntu 24.04 with Python 3.12) with git added, a listed command is
linked onto PATH only when this Debian has it (none that the workflow calls is missing),
`docker` is this machine's client talking to this machine's engine through its socket (the
runner has Docker 28 with an engine of its own), `sudo` is a shim (the container runs as root),
and
actions/setup-python is a venv made in the image with tfbuild's dependencies and its build
backend from wheels of the versions the nightly's lock pins, so each job's hash-checked install
of the lock finds them there, and its `pip install --no-deps --no-build-isolation .` installs
tfbuild itself, offline. The
replay's folders are mounted at the same paths as on this machine, so the bind mounts tfbuild
asks the engine for (the bazel cache) name folders the engine sees.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from support.env import FIXTURES

LISTED = FIXTURES / "runner-images" / "ubuntu-24.04.txt"
PYTHON_BIN = Path("/runner/python/bin")
"""actions/setup-python's interpreter in the runner container."""
SYSTEM_PATH = "/runner/bin"
"""The runner image's commands: the only folder on PATH besides what steps and actions add."""
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
DOCKERFILE = """\
FROM {base}
# hadolint ignore=DL3008
RUN apt-get update && apt-get install -y --no-install-recommends git \\
 && rm -rf /var/lib/apt/lists/*
COPY docker /usr/local/bin/docker
COPY wheels /tmp/wheels
RUN python3 -m venv /runner/python \\
 && /runner/python/bin/pip install --quiet --no-index --find-links /tmp/wheels /tmp/wheels/*.whl \\
 && rm -rf /tmp/wheels
COPY listed.txt /runner/listed.txt
RUN mkdir -p /runner/bin && while read -r name; do \\
      found=$(command -v "$name" || true); \\
      case "$found" in /*) ln -s "$found" "/runner/bin/$name" ;; esac; \\
    done < /runner/listed.txt
"""


def listed() -> dict[str, str]:
    """command -> the line of the runner image's list it comes from."""
    out = {}
    for line in LISTED.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, source = line.partition("  # ")
            out[name.strip()] = source.strip()
    return out


def runner_image(base_image: str, wheelhouse: Path, work: Path) -> str:
    """The runner stand-in's image, built on the engine (cached by its content)."""
    context = work / "runner-context"
    wheels = context / "wheels"
    wheels.mkdir(parents=True)
    for wheel in wheelhouse.glob("*.whl"):  # the lock's: tfbuild's dependencies, hatchling
        if not wheel.name.startswith("tfbuild_bench-"):
            shutil.copy2(wheel, wheels / wheel.name)
    client = shutil.which("docker")
    assert client is not None, "the docker client is on this machine"
    shutil.copy2(client, context / "docker")
    (context / "listed.txt").write_text("\n".join(listed()) + "\n")
    (context / "Dockerfile").write_text(DOCKERFILE.format(base=base_image))
    tag = "tfbuild-test/runner-ubuntu-24.04:standin"
    subprocess.run(["docker", "build", "--quiet", "-t", tag, str(context)], check=True,
                   capture_output=True, timeout=1200)  # fmt: skip
    return tag


@contextlib.contextmanager
def runner(image: str, mounts: Sequence[Path]) -> Iterator[str]:
    """A runner container while the block runs (its id): `mounts` at the same paths, the
    engine's socket, and this machine's CA bundle (the only way out to the package index)."""
    volumes = [f"-v={p}:{p}" for p in mounts]
    started = subprocess.run(
        ["docker", "run", "-d", "--rm", "--label", "tfbuild-test=runner", *volumes,
         "-v=/var/run/docker.sock:/var/run/docker.sock", f"-v={HOST_CA}:{HOST_CA}:ro",
         image, "sleep", "infinity"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    container = started.stdout.strip()
    try:
        yield container
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)


def environment() -> dict[str, str]:
    """What a step's environment carries besides GitHub's variables: pip's CA bundle (this
    machine's network needs it) and pip settings that keep `pip install .` offline."""
    return {
        "PIP_CERT": str(HOST_CA),
        "SSL_CERT_FILE": str(HOST_CA),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        # `pip install .` builds with the image's hatchling (a build environment would fetch
        # it from the index for each of the ~20 jobs).
        "PIP_NO_BUILD_ISOLATION": "0",
        "LANG": "C.UTF-8",
    }
