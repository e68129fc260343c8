"""The bazel caches of a source build, for real: the toy recipe runs Debian's bazel 4.2.3 in the
build container with the recipe's own --disk_cache and --remote_cache, against an HTTP cache
(nginx with WebDAV PUT) listening on this machine's loopback.

Bazel's own summary line says where each action came from. Bazel 4.2.3 counts a hit in the
--disk_cache as a "remote cache hit" too, so the cache's access log tells the two apart.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import TOY

pytestmark = [pytest.mark.docker, pytest.mark.slow]

CACHE_IMAGE = "tfbuild-test/remote-cache:nginx"
CACHE_DOCKERFILE = """\
FROM {base}
RUN apt-get update \\
 && apt-get install -y --no-install-recommends nginx-light \\
 && rm -rf /var/lib/apt/lists/*
"""
# Bazel's HTTP cache protocol: GET and PUT of /ac/<sha256> (action results) and /cas/<sha256>
# (outputs); a missing entry is a 404. https://bazel.build/remote/caching, "HTTP caching
# protocol".
NGINX_CONF = """\
user root;
worker_processes 1;
pid /tmp/nginx.pid;
error_log stderr warn;
events {{ worker_connections 64; }}
http {{
  log_format cache '$request_method $uri $status';
  access_log /dev/stdout cache;
  client_body_temp_path /tmp/nginx-body;
  server {{
    listen 127.0.0.1:{port};
    root /var/cache/tfbuild-remote;
    client_max_body_size 0;
    location / {{
      dav_methods PUT;
      create_full_put_path on;
    }}
  }}
}}
"""
SUMMARY = re.compile(r"^INFO: \d+ process(?:es)?: (.+)\.$", re.MULTILINE)
CACHED = ("internal", "remote cache hit")


@dataclass(frozen=True)
class RemoteCache:
    url: str
    container: str

    def requests(self) -> list[tuple[str, str, int]]:
        """(method, path, status) of every request so far, from the access log."""
        out = subprocess.run(
            ["docker", "logs", self.container], capture_output=True, text=True, check=True
        ).stdout
        return [
            (method, path, int(status))
            for method, path, status in (line.split() for line in out.splitlines())
        ]


@dataclass(frozen=True)
class Build:
    summary: str
    """Bazel's own line, e.g. "INFO: 2 processes: 1 remote cache hit, 1 internal."."""
    processes: dict[str, int]
    command: str
    """The bazel command line, as the manifest records it."""
    container: str
    """How the build container was started, as the build log shows it."""
    library: bytes
    requests: list[tuple[str, str, int]]
    """What the remote cache was asked during this build."""

    @property
    def executed(self) -> int:
        return sum(n for kind, n in self.processes.items() if kind not in CACHED)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def remote_cache(
    base_image: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RemoteCache]:
    """nginx in a container on the host's network, listening on a loopback port; removed at
    the end."""
    subprocess.run(
        ["docker", "build", "-q", "-t", CACHE_IMAGE, "-"],
        input=CACHE_DOCKERFILE.format(base=base_image),
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip
    port = free_port()
    conf = tmp_path_factory.mktemp("remote-cache") / "nginx.conf"
    conf.write_text(NGINX_CONF.format(port=port))
    name = f"tfbuild-test-remote-cache-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        ["docker", "run", "-d", "--name", name, "--label", "org.tfbuild=test",
         "--network", "host", "-v", f"{conf}:/etc/nginx/tfbuild-cache.conf:ro", CACHE_IMAGE,
         "nginx", "-c", "/etc/nginx/tfbuild-cache.conf", "-g", "daemon off;"],
        capture_output=True, check=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/ac/ready", timeout=2)
            except urllib.error.HTTPError as answer:
                assert answer.code == 404
                break
            except OSError:
                assert time.monotonic() < deadline, "the remote cache never answered"
                time.sleep(0.5)
        yield RemoteCache(url, name)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True, check=False)


@pytest.fixture(scope="module")
def volumes() -> Iterator[list[str]]:
    """Fresh bazel cache volumes, each made by the first build that names it; removed at the end."""
    made: list[str] = []
    yield made
    for volume in made:
        subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)


def build_toy(root: Path, cache: RemoteCache, volume: str, bazel: str) -> Build:
    """Build the toy avx2-fma variant with `bazel` as its defaults.bazel settings."""
    recipe = root / uuid.uuid4().hex[:8]
    shutil.copytree(TOY, recipe)
    matrix = recipe / "matrix.yaml"
    text = matrix.read_text()
    assert "bazel: {cache: tfbuild-test-cache}" in text
    matrix.write_text(text.replace("{cache: tfbuild-test-cache}", f"{{cache: {volume}, {bazel}}}"))
    store = recipe / "wheels"
    seen = len(cache.requests())
    proc = run_tfbuild(
        "build", "--matrix", str(matrix), "--tf-source", str(recipe / "src"),
        "--store", str(store), "--variant", "avx2-fma", "--force", timeout=900,
    )  # fmt: skip
    folder = store / "tf2.17-py3.11-avx2-fma"
    log = (folder / "build.log").read_text() if (folder / "build.log").exists() else ""
    assert proc.returncode == 0, proc.stderr + log[-3000:]
    *_, last = SUMMARY.finditer(log)
    parts = (part.split(" ", 1) for part in last.group(1).split(", "))
    processes = {kind: int(n) for n, kind in parts}
    print(f"{volume} {bazel}: {last.group(0)}")
    (wheel,) = folder.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        (name,) = (n for n in archive.namelist() if n.endswith(".so"))
        library = archive.read(name)
    command = json.loads((folder / "manifest.json").read_text())["bazel_command"]
    (container,) = (line for line in log.splitlines() if line.startswith("+ docker run "))
    return Build(last.group(0), processes, command, container, library, cache.requests()[seen:])


@pytest.fixture(scope="module")
def builds(
    remote_cache: RemoteCache, volumes: list[str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Build]:
    """first: a fresh cache volume and the remote cache; remote: a rebuild with another fresh
    volume (an empty disk cache) and the remote cache; disk: a rebuild with the first volume's
    disk cache and no remote cache."""
    root = tmp_path_factory.mktemp("bazel-cache")
    first, empty = (f"tfbuild-test-bazel-{uuid.uuid4().hex[:8]}" for _ in range(2))
    volumes += [first, empty]
    remote = f"remote_cache: {remote_cache.url}, network: host"
    return {
        "first": build_toy(root, remote_cache, first, remote),
        "remote": build_toy(root, remote_cache, empty, remote),
        "disk": build_toy(root, remote_cache, first, "disk_cache: true"),
    }


def test_first_build_executes_its_actions_and_fills_the_remote_cache(
    builds: dict[str, Build], remote_cache: RemoteCache
) -> None:
    first = builds["first"]
    assert first.executed >= 1 and "remote cache hit" not in first.processes, first.summary
    assert f"--remote_cache={remote_cache.url}" in first.command
    assert "--disk_cache=/cache/disk" in first.command
    assert first.container.startswith("+ docker run --network host -v ")
    stored = {path for method, path, status in first.requests if method == "PUT" and status < 300}
    assert any(p.startswith("/ac/") for p in stored) and any(p.startswith("/cas/") for p in stored)


def test_rebuild_with_an_empty_disk_cache_is_served_by_the_remote_cache(
    builds: dict[str, Build],
) -> None:
    first, rebuild = builds["first"], builds["remote"]
    assert rebuild.processes.get("remote cache hit", 0) >= 1, rebuild.summary
    assert rebuild.executed == 0, rebuild.summary
    uploaded = {path for method, path, _ in first.requests if method == "PUT"}
    served = {
        path for method, path, status in rebuild.requests if method == "GET" and status == 200
    }
    assert any(p.startswith("/ac/") for p in served) and served <= uploaded
    assert rebuild.library == first.library


def test_rebuild_with_the_disk_cache_needs_no_remote_cache(builds: dict[str, Build]) -> None:
    first, rebuild = builds["first"], builds["disk"]
    # Bazel 4.2.3 reports disk cache hits as "remote cache hit"; the remote cache was not asked.
    assert rebuild.processes.get("remote cache hit", 0) >= 1, rebuild.summary
    assert rebuild.executed == 0, rebuild.summary
    assert "--remote_cache" not in rebuild.command and rebuild.requests == []
    assert "--network" not in rebuild.container
    assert rebuild.library == first.library
