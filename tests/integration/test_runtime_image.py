"""Runtime images on a real Docker engine: a private index's credentials are used to install
and leave no trace in the image, its history or the install log."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.cext import pure_wheel, tagged_wheel
from support.cli import run_tfbuild
from support.docker import bridge_gateway

from tfbuild import engine
from tfbuild.build.render import template_dirs
from tfbuild.config.model import PipSettings
from tfbuild.errors import InstallError
from tfbuild.machine.pythons import RUNNING_PYTHON, find_python
from tfbuild.runtime.container import DockerRuntime
from tfbuild.runtime.records import PayloadConfig
from tfbuild.store import Artifact

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TOKEN = "tfb-s3cr3t-9d2c41e7"
USER = "ci-reader"


class PrivateIndex(http.server.BaseHTTPRequestHandler):
    """A PEP 503 index with one project, answering only requests that carry the credentials."""

    wheel: Path
    authorised: list[str]

    def do_GET(self) -> None:
        expected = "Basic " + base64.b64encode(f"{USER}:{TOKEN}".encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private"')
            self.end_headers()
            return
        self.authorised.append(self.path)
        if self.path.rstrip("/") == "/simple/tfbuild-private-dep":
            body = f'<a href="/files/{self.wheel.name}">{self.wheel.name}</a>'.encode()
            kind = "text/html"
        elif self.path == f"/files/{self.wheel.name}":
            body, kind = self.wheel.read_bytes(), "application/octet-stream"
        else:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


def in_image(image: str, code: str) -> str:
    """What the runtime's Python prints for `code`, in a container without network."""
    out = engine.client().containers.run(
        image, ["/opt/tf/bin/python", "-c", code], remove=True, network_mode="none"
    )
    return bytes(out).decode().strip()


def docker_runtime(path: Path, base_image: str, log_dir: Path) -> DockerRuntime:
    """The Docker runtime of a local wheel, with this machine's index settings."""
    sha256 = hashlib.sha256(path.read_bytes()).hexdigest()
    return DockerRuntime(
        Artifact(path.stem, path, sha256, (), None),
        settings=PipSettings("inherit", "inherit", "inherit", ()),
        base_image=base_image,
        template_dirs=template_dirs(None),
        log_dir=log_dir,
    )


@pytest.fixture
def private_index(tmp_path: Path, base_image: str) -> Iterator[tuple[str, list[str]]]:
    """(index URL with credentials as containers reach it, requests that were authorised)."""
    (tmp_path / "index").mkdir()
    dep = pure_wheel(tmp_path / "index", "tfbuild_private_dep", "1.0", [])

    class Handler(PrivateIndex):
        wheel = dep
        authorised: list[str] = []  # noqa: RUF012 - one server, one list

    server = http.server.ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    bridge = bridge_gateway(base_image)
    try:
        yield f"http://{USER}:{TOKEN}@{bridge}:{server.server_port}/simple", Handler.authorised
    finally:
        server.shutdown()


def test_index_credentials_never_reach_the_runtime_image(
    private_index: tuple[str, list[str]], base_image: str, tmp_path: Path
) -> None:
    url, authorised = private_index
    host = url.split("@")[1].split("/")[0]
    wheel = pure_wheel(tmp_path, "tfbuild_needs_private", "1.0", ["tfbuild-private-dep"])
    sha256 = hashlib.sha256(wheel.read_bytes()).hexdigest()
    runtime = DockerRuntime(
        Artifact("private", wheel, sha256, (), None),
        settings=PipSettings(url, (), "none", (host,)),
        base_image=base_image,
        template_dirs=template_dirs(None),
        log_dir=tmp_path / "logs",
    )
    assert runtime.prepare() is True and runtime.image is not None
    try:
        # The credentials were used: the dependency came from the private index.
        assert "/simple/tfbuild-private-dep/" in authorised
        client = engine.client()
        assert in_image(runtime.image, "import tfbuild_private_dep as d; print(d.VERSION)") == "1.0"
        # ...and they are nowhere: not in the config, the history, any layer or the log.
        image = client.images.get(runtime.image)
        assert image.labels["org.tfbuild.wheel-sha256"] == sha256
        assert image.attrs["Config"]["User"] == engine.BENCH_USER
        history = client.api.history(runtime.image)
        assert any("pip install" in (entry.get("CreatedBy") or "") for entry in history)
        saved = io.BytesIO()
        for chunk in image.save():
            saved.write(chunk)
        places = {
            "image config": repr(image.attrs).encode(),
            "history": repr(history).encode(),
            "layers": saved.getvalue(),
            "install log": b"".join(p.read_bytes() for p in (tmp_path / "logs").glob("*.log")),
        }
        assert b"tfbuild_private_dep" in places["layers"]  # the search reads real layers
        assert b"Looking in indexes" in places["install log"]
        for place, data in places.items():
            assert TOKEN.encode() not in data, f"the token is in the {place}"
        # Reused for the same wheel; a different label would force a rebuild.
        assert runtime.prepare() is False
    finally:
        engine.client().images.remove(runtime.image, force=True)


def test_the_runtime_image_uses_the_wheels_python(base_image: str, tmp_path: Path) -> None:
    """The install script makes the venv from the wheel's CPython: a cp311 wheel installs on the
    Debian bookworm base (Python 3.11); a cp312 one is refused with the versions named. Two
    sessions asking for the same image at once install it once."""
    ok_wheel = tagged_wheel(tmp_path, "tfbuild_py311_probe", "cp311-none-any")
    bad_wheel = tagged_wheel(tmp_path, "tfbuild_py312_probe", "cp312-none-any")

    # Two sessions making the same image at once: one installs, the other waits and uses it.
    both = [docker_runtime(ok_wheel, base_image, tmp_path / "logs") for _ in range(2)]
    start = threading.Barrier(2)
    made: list[bool] = []

    def prepare(runtime: DockerRuntime) -> None:
        start.wait()
        made.append(runtime.prepare())

    threads = [threading.Thread(target=prepare, args=(r,)) for r in both]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    good = both[0]
    assert sorted(made) == [False, True] and good.image is not None and good.image == both[1].image
    try:
        assert both[0].packages == both[1].packages
        assert in_image(good.image, "import tfbuild_py311_probe as p; print(p.PYTHON)") == "3.11"
    finally:
        engine.client().images.remove(good.image, force=True)
    with pytest.raises(
        InstallError,
        match=(
            r"the wheel needs Python 3\.12; the runtime base image has Python 3\.11\.\d+ and its "
            r"apt sources have no python3\.12"
        ),
    ):
        docker_runtime(bad_wheel, base_image, tmp_path / "logs").prepare()


def test_a_cuda_build_asks_the_engine_for_every_gpu(base_image: str, tmp_path: Path) -> None:
    """A CUDA artifact's benchmark containers request all GPUs (docker run --gpus all). This
    engine has no GPU runtime, so it refuses the request by name: the request reached it. A
    CPU artifact's container makes no request: it starts (and its payload fails, the base
    image having no TensorFlow). The runtime image is the base image: nothing is installed."""
    probe = pure_wheel(tmp_path, "tfbuild_gpu_probe", "1.0", [])
    digest = hashlib.sha256(probe.read_bytes()).hexdigest()
    import docker.errors

    def runtime(artifact: Artifact) -> DockerRuntime:
        made = DockerRuntime(
            artifact, settings=PipSettings("inherit", "inherit", "inherit", ()),
            base_image=base_image, template_dirs=template_dirs(None), log_dir=tmp_path,
        )  # fmt: skip
        made.image = base_image
        return made

    config = PayloadConfig(benchmarks=("matmul-pinned",))
    cpu = runtime(Artifact("cpu", probe, digest, (), None)).run(config, {}, None, timeout=60)
    assert cpu.returncode != 0 and cpu.result is None, cpu
    gpu = runtime(Artifact("gpu", probe, digest, (), None, ("and-cuda",)))
    with pytest.raises(docker.errors.APIError, match="could not select device driver"):
        gpu.run(config, {}, None, timeout=60)


def test_the_plan_asks_the_runtime_image_for_the_variants_python(
    base_image: str, tmp_path: Path
) -> None:
    """`tfbuild matrix` (and `run`, before building) asks the runtime image which Pythons it
    has: a source variant for Python 3.12 would run in a container of the bookworm image
    (Python 3.11, no python3.12 in its apt sources), so the plan says it cannot run here; a 3.11
    one can. A variant on a local runtime is judged by this machine's interpreters instead."""
    assert engine.image_pythons(base_image, "3.12") == (("3.11",), False)
    (tmp_path / "m.yaml").write_text(
        f"defaults: {{base_images: {{runtime: {base_image}}}}}\n"
        "variants:\n"
        "  - {name: py312, source: bazel, tensorflow: 2.21.0, python: '3.12'}\n"
        "  - {name: py311, source: bazel, tensorflow: 2.21.0, python: '3.11'}\n"
        "  - {name: local312, source: bazel, tensorflow: 2.21.0, python: '3.12', runtime: local}\n"
    )
    proc = run_tfbuild("matrix", "--matrix", str(tmp_path / "m.yaml"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    variants = {v["name"]: v for v in json.loads(proc.stdout)["variants"]}
    assert variants["py312"]["runs_here"] is False
    assert (
        f"needs Python 3.12; the runtime image {base_image} has Python 3.11 and its apt sources "
        "have no python3.12; use a base image of a distribution release that has it, or "
        "--runtime local"
    ) in variants["py312"]["reasons"]
    assert not any("Python" in r for r in variants["py311"]["reasons"])
    local = [r for r in variants["local312"]["reasons"] if "Python" in r]
    if find_python("3.12") is None:
        assert local == [
            f"needs Python 3.12; tfbuild runs on Python {RUNNING_PYTHON} and there is no "
            "python3.12 on PATH or in pyenv for a local runtime"
        ]
    else:
        assert local == []

    # `tfbuild run` neither builds nor benchmarks it, and records why.
    results = tmp_path / "results"
    proc = run_tfbuild(
        "run", "--matrix", str(tmp_path / "m.yaml"), "--only", "py312",
        "--store", str(tmp_path / "wheels"), "--results", str(results),
    )  # fmt: skip
    assert proc.returncode == 11, proc.stdout + proc.stderr
    said = " ".join(proc.stderr.split())
    assert "not building py312: it cannot run here (needs Python 3.12; the runtime image" in said
    assert not (tmp_path / "wheels").exists() or not any((tmp_path / "wheels").iterdir())
    (session,) = results.glob("*.json")
    document = json.loads(session.read_text())
    assert document["variants"]["py312"]["status"] == "failed"
    assert document["session"]["stop"]["reason"] == "nothing_runs" and document["order"] == []


def test_the_runtime_installs_the_wheels_python_from_apt(base_image: str, tmp_path: Path) -> None:
    """A base image without the wheel's Python gets it from its own apt sources: the bookworm
    image with Python 3.11 removed is told apart from one whose sources lack the version, and
    the runtime made from it installs python3.11 and runs the wheel with it."""
    from tfbuild.config.load import load_matrix
    from tfbuild.plan.runtimes import Runtimes

    client = engine.client()
    stripped = "tfbuild-test/no-python:bookworm"
    remover = client.containers.run(
        base_image,
        [
            "sh",
            "-c",
            "apt-get remove -y -qq python3.11-minimal >/dev/null && ! command -v python3.11",
        ],
        detach=True,
    )
    try:
        assert remover.wait()["StatusCode"] == 0, remover.logs().decode()
        remover.commit(repository="tfbuild-test/no-python", tag="bookworm")
    finally:
        remover.remove(force=True)
    try:
        assert engine.image_pythons(stripped, "3.11") == ((), True)
        (tmp_path / "m.yaml").write_text(
            "variants:\n  - {name: v, source: bazel, tensorflow: 2.21.0, python: '3.11'}\n"
        )
        variant = load_matrix(tmp_path / "m.yaml").variant("v")
        in_stripped = Runtimes("docker", True, stripped, engine.image_pythons)
        assert in_stripped.python_refusal(variant) is None
        path = tagged_wheel(tmp_path, "tfbuild_apt_probe", "cp311-none-any")
        runtime = docker_runtime(path, stripped, tmp_path / "logs")
        assert runtime.prepare() is True and runtime.image is not None
        try:
            log = b"".join(p.read_bytes() for p in (tmp_path / "logs").glob("*.log"))
            assert b"installing python3.11 from the image's apt sources" in log
            code = "import tfbuild_apt_probe as p; print(p.PYTHON)"
            assert in_image(runtime.image, code) == "3.11"
        finally:
            client.images.remove(runtime.image, force=True)
    finally:
        client.images.remove(stripped, force=True)
