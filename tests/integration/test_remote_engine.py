"""Docker runtimes through an engine that does not share this machine's files.

The remote engine is a second dockerd in a container on the local engine, reached over TCP on a
loopback port (DOCKER_HOST=tcp://127.0.0.1:PORT): nothing tfbuild bind-mounts from this machine
exists there, and its host name differs, so the bench session must copy the payload in and the
result out through the API, and plan with the facts a probe container reports. The sessions
there run the stand-in TensorFlow (support/standin_tf.py): what is tested is the engine's way
to a runtime (the wheel copied in, numpy installed from the index, the payload run), not
TensorFlow.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import secrets
import socket
import tarfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import plans_made, run_tfbuild
from support.env import FIXTURES

from tfbuild.config.load import load_matrix
from tfbuild.engine import DockerInfo, docker_status
from tfbuild.errors import UsageError
from tfbuild.machine import remote
from tfbuild.machine.detect import detect, profile_from_cpuinfo
from tfbuild.plan.make import make_plan

ENGINE_PORT = 2375

# Debian's docker.io, installed from the Debian archive (no registry is reachable).
DIND_DOCKERFILE = """\
FROM {base}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
      docker.io iptables ca-certificates >/dev/null \\
 && rm -rf /var/lib/apt/lists/*
COPY start-engine /usr/local/bin/start-engine
ENTRYPOINT ["sh", "/usr/local/bin/start-engine"]
"""

# The outer engine mounts the cgroup hierarchies read-only in a container that is not
# --privileged; the nested engine needs them writable (as docker's own dind script arranges).
START_ENGINE = f"""\
set -e
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then
  mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
  mkdir -p /sys/fs/cgroup/init
  xargs -rn1 < /sys/fs/cgroup/cgroup.procs > /sys/fs/cgroup/init/cgroup.procs || :
  sed -e 's/ / +/g' -e 's/^/+/' < /sys/fs/cgroup/cgroup.controllers \\
    > /sys/fs/cgroup/cgroup.subtree_control
else
  mount -t tmpfs -o mode=755 tfbuild-cgroup /sys/fs/cgroup
  while IFS=: read -r _ controllers _; do
    [ -n "$controllers" ] || continue
    dir=${{controllers#name=}}
    case $controllers in name=*) options=none,$controllers ;; *) options=$controllers ;; esac
    mkdir -p "/sys/fs/cgroup/$dir"
    mount -t cgroup -o "$options" cgroup "/sys/fs/cgroup/$dir"
  done < /proc/self/cgroup
fi
exec dockerd --host tcp://0.0.0.0:{ENGINE_PORT} --tls=false
"""


def _context(files: dict[str, str]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def dind_image(local: Any, base_image: str) -> str:
    files = {"Dockerfile": DIND_DOCKERFILE.format(base=base_image), "start-engine": START_ENGINE}
    key = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:12]
    tag = f"tfbuild-test/dind:{key}"
    if not local.images.list(name=tag):
        local.images.build(fileobj=_context(files), custom_context=True, tag=tag, rm=True,
                           forcerm=True)  # fmt: skip
    return tag


@pytest.fixture(scope="module")
def remote_engine(base_image: str) -> Iterator[tuple[str, Any]]:
    """A dockerd in a container, its API published on a loopback port only, holding a copy of
    the base image. Yields its DOCKER_HOST and a client; the container and its storage volume
    are removed at the end."""
    import docker
    from docker.types import Mount

    local = docker.from_env(timeout=600)
    image = dind_image(local, base_image)
    # Not --privileged: an engine whose bounding set lacks a capability (CAP_SYS_RESOURCE on
    # some VMs) cannot start privileged containers. Every other capability does for dockerd.
    host_config = local.api.create_host_config(
        cgroupns="private",
        cap_add=["ALL"],
        cap_drop=["SYS_RESOURCE"],
        security_opt=["seccomp=unconfined", "apparmor=unconfined"],
        device_cgroup_rules=["a *:* rwm"],
        port_bindings={ENGINE_PORT: ("127.0.0.1", None)},
        # overlay2 does not nest on overlay2: the nested engine's storage is a volume
        mounts=[Mount("/var/lib/docker", None, type="volume")],
    )
    # --security-opt systempaths=unconfined: dockerd writes /proc/sys (docker-py lacks it)
    host_config |= {"MaskedPaths": [], "ReadonlyPaths": []}
    created = local.api.create_container(
        image,
        name=f"tfbuild-test-engine-{secrets.token_hex(3)}",
        ports=[ENGINE_PORT],
        host_config=host_config,
        labels={"org.tfbuild.test": "remote-engine"},
    )
    outer = local.containers.get(created["Id"])
    try:
        outer.start()
        remote = None
        deadline = time.monotonic() + 90
        while remote is None and time.monotonic() < deadline:
            outer.reload()
            assert outer.status in ("created", "running"), outer.logs()[-3000:].decode()
            bound = (outer.attrs["NetworkSettings"]["Ports"] or {}).get(f"{ENGINE_PORT}/tcp")
            if bound:
                url = f"tcp://127.0.0.1:{bound[0]['HostPort']}"
                with contextlib.suppress(docker.errors.DockerException):
                    candidate = docker.DockerClient(base_url=url, timeout=600)
                    candidate.ping()
                    remote = candidate
            if remote is None:
                time.sleep(0.5)
        assert remote is not None and bound, outer.logs()[-3000:].decode()
        assert bound[0]["HostIp"] == "127.0.0.1"
        # By its name: while another test has the image tagged for a registry too, the
        # first tag may be that one.
        remote.images.load(local.images.get(base_image).save(named=base_image))
        yield url, remote
    finally:
        outer.remove(force=True, v=True)
        local.close()


def in_containers(matrix: Path, workspace: Path, results: Path, seed: int) -> list[str]:
    """`bench`/`run` arguments for a session in containers, with the stand-in's store and cache;
    its processes fresh, a container each (the forked path in containers: test_bench)."""
    return ["--matrix", str(matrix), "--store", str(workspace / "wheels"),
            "--cache-dir", str(workspace / "cache"), "--results", str(results),
            "--runtime", "docker", "--seed", str(seed), "--processes", "fresh"]  # fmt: skip


class Inspected:
    """Every container tfbuild creates on an engine, inspected as it is created."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.found: dict[str, dict[str, Any] | None] = {}
        self.events = client.events(
            decode=True, filters={"type": "container", "event": "create", "label": "org.tfbuild"}
        )
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        from docker.errors import NotFound

        with contextlib.suppress(Exception):  # the stream ends when closed
            for event in self.events:
                try:
                    self.found[event["id"]] = self.client.api.inspect_container(event["id"])
                except NotFound:  # already removed: its create event is still counted
                    self.found[event["id"]] = None

    def close(self) -> None:
        self.events.close()
        self.thread.join(timeout=10)


@pytest.mark.docker
@pytest.mark.slow
def test_bench_through_an_engine_without_this_machines_files(
    remote_engine: tuple[str, Any], base_image: str, standin: tuple[Path, Path], tmp_path: Path
) -> None:
    url, remote = remote_engine
    wheel, workspace = standin
    folder = tmp_path / "remote"
    folder.mkdir()
    matrix = folder / "matrix.yaml"
    matrix.write_text(
        f"""\
defaults:
  base_images: {{build: "{base_image}", runtime: "{base_image}"}}
variants:
  - {{name: tf, source: wheel, path: {wheel}}}
suite: {{benchmarks: [matmul-pinned], rounds: 2}}
"""
    )
    watch = Inspected(remote)
    try:
        proc = run_tfbuild(
            "bench", *in_containers(matrix, workspace, folder / "results", seed=7),
            env={"DOCKER_HOST": url}, timeout=1200,
        )  # fmt: skip
        time.sleep(1)  # the last create event reaches the watcher
    finally:
        watch.close()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (path,) = (folder / "results").glob("*.json")
    doc = json.loads(path.read_text())

    session = doc["session"]
    assert session["complete"] is True and session["stop"]["reason"] == "fixed"
    assert doc["failures"] == []
    keys = {c["key"] for c in doc["configs"]}
    assert keys == {"tf:default", "tf:default~aa"}
    assert sorted((r["round"], r["config"]) for r in doc["runs"]) == sorted(
        (r, k) for r in range(2) for k in keys
    )
    for run in doc["runs"]:
        assert run["status"] == "ok", run["failure"]
        samples = run["benchmarks"]["matmul-pinned"]["samples"]
        assert samples and all(s["throughput"] > 0 for s in samples)
    runtime = doc["variants"]["tf"]["runtime"]
    assert runtime["kind"] == "docker" and runtime["network"] == "none"

    # The machine facts are the engine's, from its probe container, not this process's.
    info = remote.info()
    recorded = doc["host"]
    assert recorded["source"] == {"kind": "engine", "path": f"probe container on {url}"}
    assert recorded["hostname"] == info["Name"] != socket.gethostname()
    assert recorded["system"]["kernel"] == info["KernelVersion"]
    assert recorded["system"]["python_executable"] == "/opt/tf/bin/python"
    assert recorded["topology"]["logical_cpus"] == info["NCPU"]
    assert recorded["memory"]["total_bytes"] == info["MemTotal"]
    peak = next(c["peak"] for c in doc["configs"] if c["key"] == "tf:default")
    assert peak["cores"] == recorded["topology"]["usable_physical_cores"]
    assert f"engine {url} ({info['Name']}) is another machine" in proc.stderr

    # Nothing was bind-mounted into any container tfbuild made there, and none is left.
    made = {i: c for i, c in watch.found.items() if c is not None}
    roles = [c["Config"]["Labels"]["org.tfbuild"] for c in made.values()]
    assert roles.count("bench") >= 5, roles  # smoke test + 2 rounds of 2 configs
    for created in made.values():
        # Only the engine's own anonymous volumes (a benchmark's /io), nothing of this machine.
        assert not created["HostConfig"]["Binds"], created["HostConfig"]["Binds"]
        assert all(m["Type"] == "volume" for m in created["Mounts"]), created["Mounts"]
    assert remote.containers.list(all=True, filters={"label": "org.tfbuild"}) == []
    assert remote.volumes.list(filters={"dangling": True}) == []  # removed with the containers


@pytest.mark.docker
@pytest.mark.slow
def test_run_plans_once_for_the_engines_machine(
    remote_engine: tuple[str, Any], base_image: str, standin: tuple[Path, Path], tmp_path: Path
) -> None:
    """`tfbuild run` through a remote engine chooses the engine's machine first and makes one
    plan for it, a `march: host` source variant included (its -march is the engine machine's);
    the build of that variant (whose build image the engine lacks) and the benchmarks work from
    that plan; the failed build is recorded as one."""
    url, remote = remote_engine
    wheel, workspace = standin
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        f"""\
defaults:
  base_images: {{build: "tfbuild-test/absent:none", runtime: "{base_image}"}}
variants:
  - {{name: tf, source: wheel, path: {wheel}}}
  - {{name: tuned, source: bazel, march: host}}
suite: {{benchmarks: [matmul-pinned], rounds: 2}}
"""
    )
    proc, plans = plans_made(
        tmp_path / "plans.jsonl",
        "run", "--build", *in_containers(matrix, workspace, tmp_path / "results", seed=8),
        env={"DOCKER_HOST": url}, timeout=1200,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    (plan,) = plans
    assert plan["source"] == "engine" and plan["hostname"] == remote.info()["Name"]
    assert plan["hostname"] != socket.gethostname()
    assert plan["variants"]["tuned"]["march"] == plan["march"] is not None
    assert "base image tfbuild-test/absent:none is not on the engine" in proc.stderr
    (path,) = (tmp_path / "results").glob("*.json")
    doc = json.loads(path.read_text())
    assert doc["host"]["hostname"] == plan["hostname"]
    (failure,) = doc["failures"]
    # the build failed (no build image on the engine): said as such, not as a missing wheel
    assert failure["variant"] == "tuned" and failure["stage"] == "build"
    assert failure["reason"].startswith("its build failed: base image tfbuild-test/absent:none "
                                        "is not on the engine"), failure["reason"]  # fmt: skip
    assert "tfbuild build --variant" not in failure["reason"]
    assert {r["config"] for r in doc["runs"]} == {"tf:default", "tf:default~aa"}
    for run in doc["runs"]:  # each measured: a sample of every benchmark, no error
        assert all("error" not in e and e["samples"] for e in run["benchmarks"].values()), run


@pytest.mark.docker
@pytest.mark.slow
def test_probe_sees_the_benchmark_containers_limits(base_image: str) -> None:
    """A probe with the limits of --container-cpus 1 --memory 1g reports one usable CPU and
    the memory limit; without limits, on this engine, it agrees with this machine."""
    status = docker_status()
    limited, facts = remote.probe(base_image, status, nano_cpus=1_000_000_000, memory="1g")
    topology = limited.topology
    assert limited.source == "engine" and limited.source_path == f"probe container on {status.host}"
    assert topology.cgroup is not None and topology.cgroup.quota_cpus == 1.0
    assert topology.cgroup.path.startswith("/sys/fs/cgroup")
    assert topology.usable_cpus == 1 and limited.thread_count("physical") == 1
    assert limited.memory is not None and limited.memory.cgroup_limit_bytes == 2**30
    assert limited.system is not None and limited.system.glibc
    here = detect()
    free, facts = remote.probe(base_image, status)
    assert remote.same_machine(here, free, facts)
    assert free.cpu.flags == here.cpu.flags and free.topology.logical_cpus == facts["NCPU"]
    elsewhere = {**facts, "Name": "another-machine"}
    assert not remote.same_machine(here, free, elsewhere)


def test_plan_for_another_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No engine: a probe that reports another machine makes it the machine a session plans
    for (thread counts, the peak's host), a session split between machines is refused, and
    --cpus is checked against it."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        """\
variants:
  - {name: a, source: pypi, requirement: "tensorflow-cpu==2.21.0"}
  - {name: b, source: pypi, requirement: "tensorflow-cpu==2.20.0"}
tunings:
  - {name: physical-cores, intra_op: physical, env: {OMP_NUM_THREADS: physical}}
"""
    )
    loaded = load_matrix(matrix)
    here = detect()
    zen4 = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "zen4-epyc-9654.cpuinfo")
    zen4 = dataclasses.replace(
        zen4, topology=dataclasses.replace(zen4.topology, affinity=(0, 1, 2, 3))
    )
    monkeypatch.setattr(remote, "probe", lambda *args, **kwargs: (zen4, {"Name": "elsewhere"}))
    engine_at = DockerInfo(reachable=True, host="tcp://192.0.2.1:2375")
    notes: list[str] = []

    def machine(kinds: dict[str, str], cpus: tuple[int, ...] | None = None) -> Any:
        return remote.engine_machine(here, kinds, engine_at, "tfbuild/base:bookworm", cpus=cpus,
                                     nano_cpus=None, memory=None, note=notes.append)  # fmt: skip

    planned_here = make_plan(loaded, here)
    there = make_plan(loaded, machine({"a": "docker", "b": "docker"}))
    assert there.host is zen4
    assert [c.key for c in there.configs] == [c.key for c in planned_here.configs]
    (tuning,) = there.tunings
    assert tuning.intra_op == zen4.thread_count("physical") != planned_here.tunings[0].intra_op
    assert dict(tuning.env) == {"OMP_NUM_THREADS": str(tuning.intra_op)}
    assert "is another machine" in notes[-1]
    with pytest.raises(UsageError, match="variants b would run on this one"):
        machine({"a": "docker", "b": "local"})
    with pytest.raises(UsageError, match=r"--cpus 7: .* may use CPUs \[0, 1, 2, 3\] only"):
        machine({"a": "docker", "b": "docker"}, cpus=(7,))
    assert machine({"a": "local", "b": "local"}) is here  # nothing runs on the engine
    local_socket = DockerInfo(reachable=True, host="unix:///var/run/docker.sock")
    same = remote.engine_machine(
        here,
        {"a": "docker"},
        local_socket,
        "tfbuild/base:bookworm",
        cpus=None,
        nano_cpus=None,
        memory=None,
        note=notes.append,
    )
    assert same is here
