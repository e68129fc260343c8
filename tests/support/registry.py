"""A real image registry on this machine (Distribution's `docker-registry`, Debian's package):
the stand-in for Docker Hub, which is not reachable here. It serves on a loopback port, which
the engine pulls from without TLS, and holds the debootstrapped Debian image pushed to it."""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from support.env import require


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def registry(root: Path) -> Iterator[str]:
    """A registry serving from `root` while the block runs; its address (127.0.0.1:PORT)."""
    binary = shutil.which("docker-registry")
    require(
        binary is not None, "docker-registry is not installed (apt-get install docker-registry)"
    )
    port = _free_port()
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\n"
        f"storage:\n  filesystem:\n    rootdirectory: {root / 'data'}\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )
    log = (root / "registry.log").open("w")
    proc = subprocess.Popen([str(binary), "serve", str(config)], stdout=log, stderr=log)
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            time.sleep(0.1)
        else:
            raise AssertionError(
                f"docker-registry did not listen: {(root / 'registry.log').read_text()}"
            )
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


def push(image: str, address: str, name: str) -> str:
    """Push a local image to the registry as `name`; its reference pinned by the digest the
    registry answered (ADDRESS/NAME@sha256:...)."""
    target = f"{address}/{name}"
    subprocess.run(["docker", "tag", image, target], check=True)
    subprocess.run(["docker", "push", target], check=True, capture_output=True, timeout=300)
    inspected = subprocess.run(
        ["docker", "image", "inspect", target], check=True, capture_output=True, text=True
    )
    repo = target.rsplit(":", 1)[0]
    digests = json.loads(inspected.stdout)[0]["RepoDigests"]
    (pinned,) = [d for d in digests if d.startswith(repo + "@")]
    subprocess.run(["docker", "rmi", target], check=True, capture_output=True)
    return str(pinned)
