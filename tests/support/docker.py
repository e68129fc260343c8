"""The Docker engine as tests see it: containers by label, `docker inspect` while a command runs,
and the address containers reach this machine at."""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

from support.cli import run_tfbuild
from support.env import REPO, require
from tfbuild.build.base import LABEL
from tfbuild.errors import ToolMissing


def containers(label: str, *, stopped: bool = False) -> list[str]:
    """IDs of the Docker containers carrying `label`: running ones, or all with `stopped`."""
    listing = ["docker", "ps", "-aq" if stopped else "-q", "--filter", f"label={label}"]
    return subprocess.run(listing, capture_output=True, text=True, check=True).stdout.split()


@contextlib.contextmanager
def inspected(label: str) -> Iterator[dict[str, dict[str, Any]]]:
    """While the block runs, `docker inspect` of every container carrying `label`, by id, as
    the engine reports it (polled; the containers are gone when the block ends)."""
    import docker.errors

    from tfbuild import engine

    seen: dict[str, dict[str, Any]] = {}
    done = threading.Event()

    def poll() -> None:
        client = engine.client()
        while not done.is_set():
            for listed in client.api.containers(all=True, filters={"label": label}):
                if listed["Id"] not in seen:
                    with contextlib.suppress(docker.errors.NotFound):  # removed meanwhile
                        seen[listed["Id"]] = client.api.inspect_container(listed["Id"])
            done.wait(0.2)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join()


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


def image_attrs(tag: str) -> dict[str, Any] | None:
    """`docker image inspect` of `tag`, or None when the engine does not have it."""
    proc = subprocess.run(
        ["docker", "image", "inspect", tag], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return None
    attrs: dict[str, Any] = json.loads(proc.stdout)[0]
    return attrs


def ensure_base_image(tag: str, env: dict[str, str] | None = None) -> None:
    """`tag` on the engine, made when missing by `tfbuild base-image` as a user runs it: the
    default matrix pins a Docker Hub image, no registry answers here, so debootstrap makes it.
    What the made image must show is checked here, where it is made: its label and history
    say how (suite, mirror, packages), and the command's one line of output says the same,
    with its id, while the script's traces go to stderr. Without debootstrap the tests that
    need the image skip on a developer machine and fail in CI, with the command's reason;
    any other failure to make it fails them everywhere."""
    if image_attrs(tag) is not None:
        return
    made = run_tfbuild(
        "base-image", tag, "--matrix", str(REPO / "matrix.yaml"), env=env, timeout=1200
    )
    reason = made.stderr.strip().splitlines()[-1:] or [f"exit {made.returncode}"]
    missing = made.returncode == ToolMissing.exit_code
    require(not missing, f"the base image {tag} cannot be made here: {reason[0]}")
    assert made.returncode == 0, f"tfbuild base-image {tag} failed:\n{made.stdout}{made.stderr}"
    image = image_attrs(tag)
    assert image is not None, f"tfbuild base-image said it made {tag}, and the engine lacks it"
    how = (image["Config"]["Labels"] or {}).get(LABEL, "")
    assert how.startswith("debootstrap bookworm minbase (http") and how.endswith(
        "+ python3,python3-venv,python3-pip,ca-certificates"
    ), how
    history = subprocess.run(
        ["docker", "history", "--no-trunc", "--format", "{{.Comment}}", tag],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert history == [how], history
    assert made.stdout.splitlines() == [
        f"{tag}: debootstrap, {how.removeprefix('debootstrap ')} (id {image['Id'][:19]})"
    ], made.stdout
    assert "no registry answers for docker.io/library/debian:" in made.stderr
    assert "+ debootstrap --variant=minbase" in made.stderr
    assert f"+ docker import - {tag}" in made.stderr
