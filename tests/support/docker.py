"""The Docker engine as tests see it: containers by label, `docker inspect` while a command runs,
and the address containers reach this machine at."""

from __future__ import annotations

import contextlib
import socket
import struct
import subprocess
import threading
from collections.abc import Iterator
from typing import Any


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
