"""The engine module on a real Docker engine: a ContainerSpec becomes the container the engine
reports (name, labels, mounts, limits, network, user, confinement), removed when its work ends
or, with --keep-containers, left stopped and named."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from support.cli import run_tfbuild

from tfbuild import engine

pytestmark = pytest.mark.docker


@pytest.fixture
def volume() -> Iterator[str]:
    name = f"tfbuild-engine-test-{uuid.uuid4().hex[:12]}"
    yield name
    with contextlib.suppress(docker.errors.NotFound):
        docker.from_env().volumes.get(name).remove(force=True)


def test_a_container_is_what_its_spec_says_and_is_removed_after(
    base_image: str, volume: str, tmp_path: Path
) -> None:
    spec = engine.ContainerSpec(
        base_image,
        ("sh", "-c", "echo made"),
        "test",
        environment={"TFBUILD_TEST": "1"},
        mounts=(
            engine.Mount("/io", read_only=False),
            engine.Mount("/w", engine.ensure_volume(volume)),
            engine.Mount("/host", str(tmp_path)),
        ),
        labels={"org.tfbuild.case": "spec"},
        confined=True,
        cpuset="0",
        nano_cpus=500_000_000,
        memory="256m",
    )
    with engine.container(spec) as made:
        assert made.name.startswith("tfbuild-test-") and len(made.name) == len("tfbuild-test-") + 8
        attrs = docker.from_env().containers.get(made.name).attrs
        config, host = attrs["Config"], attrs["HostConfig"]
        ours = {"org.tfbuild": "test", "org.tfbuild.case": "spec"}  # beside the image's own
        assert {k: config["Labels"].get(k) for k in ours} == ours
        assert "TFBUILD_TEST=1" in config["Env"] and config["User"] == engine.BENCH_USER
        assert config["Cmd"] == ["sh", "-c", "echo made"]
        assert host["CpusetCpus"] == "0" and host["NanoCpus"] == 500_000_000
        assert host["Memory"] == 256 * 1024 * 1024 and host["NetworkMode"] == "none"
        assert host["ReadonlyRootfs"] is True and host["CapDrop"] == ["ALL"]
        assert host["Init"] is True and "/tmp" in host["Tmpfs"]
        mounts = {m["Target"]: m for m in host["Mounts"]}
        assert mounts["/io"]["Type"] == "volume" and not mounts["/io"].get("Source")
        assert not mounts["/io"].get("ReadOnly")
        assert mounts["/w"]["Type"] == "volume" and mounts["/w"]["Source"] == volume
        assert mounts["/w"]["ReadOnly"] is True
        assert mounts["/host"]["Type"] == "bind" and mounts["/host"]["Source"] == str(tmp_path)
        code, _ = engine.run_to_end(made, None, timeout=60)
        assert code == 0 and engine.output_of(made) == "made\n"
    with pytest.raises(docker.errors.NotFound):
        docker.from_env().containers.get(made.name)
    assert made.name not in engine.kept


def test_a_kept_container_is_left_stopped(base_image: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(engine.KEEP_ENV, "1")
    spec = engine.ContainerSpec(base_image, ("sh", "-c", "echo kept; sleep 60"), "test")
    try:
        with engine.container(spec) as made:
            made.handle.start()
        found = docker.from_env().containers.get(made.name)
        assert found.status == "exited" and found.logs() == b"kept\n"
        assert engine.kept[-1] == made.name
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            docker.from_env().containers.get(made.name).remove(force=True)


def test_keep_containers_leaves_them_and_names_them_at_the_end(
    base_image: str, tmp_path: Path
) -> None:
    """`tfbuild --keep-containers matrix` asks the runtime image for its Pythons in a container
    (tfbuild-pythons-...), leaves it, and names it last on stderr; without the option, no
    container is left. (The runtime image is the base image under a name of this test's own,
    which the containers record, so that other tests' containers are not counted.)"""
    client = docker.from_env()
    image = f"tfbuild-test/keep:{uuid.uuid4().hex[:12]}"
    client.images.get(base_image).tag(image)
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        f"defaults: {{base_images: {{runtime: {image}}}}}\n"
        "variants:\n  - {name: py312, source: bazel, tensorflow: 2.21.0, python: '3.12'}\n"
    )

    def left() -> list[str]:
        found = client.containers.list(all=True, filters={"label": "org.tfbuild=pythons"})
        return [c.name for c in found if c.attrs["Config"]["Image"] == image]

    try:
        plain = run_tfbuild("matrix", "--matrix", str(matrix))
        assert plain.returncode == 0, plain.stderr
        assert left() == [] and "kept" not in plain.stderr
        proc = run_tfbuild("--keep-containers", "matrix", "--matrix", str(matrix))
        assert proc.returncode == 0, proc.stderr
        (name,) = left()
        assert name.startswith("tfbuild-pythons-")
        assert proc.stderr.strip().splitlines()[-1] == (
            f"tfbuild: kept 1 container(s) ({engine.KEEP_ENV}): {name}; "
            f"remove them with `docker rm -f {name}`"
        )
        found = client.containers.get(name)
        assert found.status == "exited" and found.labels["org.tfbuild"] == "pythons"
    finally:
        for name in left():
            client.containers.get(name).remove(force=True)
        client.images.remove(image)


@pytest.mark.parametrize("moment", ["after", "in-flight"])
def test_an_interrupted_creation_leaves_no_container(
    base_image: str, moment: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C (or a CI step's time limit) landing while the engine creates the container: the
    engine makes it all the same, `after` the request returned (the interrupt hits before the
    handle is kept) or while it is still `in-flight` (here made 0.5 s later, as a loaded
    engine does). Either way no container is left. The interrupt is injected at that moment
    (a signal cannot be timed to land there); the engine and its containers are real."""
    from docker.models.containers import ContainerCollection

    real = ContainerCollection.create
    made: list[threading.Thread] = []

    def create(self: ContainerCollection, *args: object, **kwargs: object) -> object:
        if moment == "after":
            real(self, *args, **kwargs)
        else:
            late = threading.Timer(0.5, real, (self, *args), kwargs)
            late.start()
            made.append(late)
        raise KeyboardInterrupt

    monkeypatch.setattr(ContainerCollection, "create", create)
    case = uuid.uuid4().hex[:12]
    spec = engine.ContainerSpec(base_image, ("true",), "test", labels={"org.tfbuild.case": case})
    with pytest.raises(KeyboardInterrupt), engine.container(spec):
        pass
    for late in made:
        late.join()
    ours = {"label": f"org.tfbuild.case={case}"}
    left = docker.from_env().containers.list(all=True, filters=ours)
    assert [c.name for c in left] == []
