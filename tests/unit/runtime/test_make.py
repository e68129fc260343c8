"""Making a runtime of a kind: `local` gives a cached venv under the cache folder, made from an
interpreter of the wheel's Python; `docker` a container runtime that starts from the base
image with the session's CPU, memory and label settings. Each is made and described here,
before anything is installed: no engine and no install is needed for that."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.env import REPO

from tfbuild.config.model import INHERIT_PIP, PipSettings
from tfbuild.errors import InstallError
from tfbuild.machine.pythons import find_python
from tfbuild.runtime.container import DockerRuntime
from tfbuild.runtime.make import RuntimeSettings, make_runtime
from tfbuild.runtime.venv import LocalVenv
from tfbuild.store import Artifact

CP = f"cp{sys.version_info.major}{sys.version_info.minor}"
SHA = "0123456789abcdef" * 4


def artifact(tmp_path: Path, tag: str = CP) -> Artifact:
    wheel = tmp_path / "store" / f"tensorflow_cpu-2.21.0-{tag}-{tag}-manylinux_2_27_x86_64.whl"
    return Artifact("stock", wheel, SHA, ("numpy<2",), None)


def settings(tmp_path: Path, **changed: object) -> RuntimeSettings:
    given: dict[str, object] = {
        "cache_dir": tmp_path / "cache",
        "pip": INHERIT_PIP,
        "base_image": "tfbuild/base:bookworm",
        "template_dirs": (REPO / "templates",),
        "cpuset": "2-5",
        "nano_cpus": 4_000_000_000,
        "memory": "8g",
        "session": "20260101-0300-abcd",
        "beside": ("ai-edge-litert==1.4.0",),
        **changed,
    }
    return RuntimeSettings(**given)  # type: ignore[arg-type]


def test_a_local_runtime_is_a_venv_in_the_cache_made_from_the_wheels_python(
    tmp_path: Path,
) -> None:
    """A wheel for the running Python: the venv is made from this interpreter."""
    runtime = make_runtime("local", artifact(tmp_path), settings(tmp_path))
    assert isinstance(runtime, LocalVenv)
    assert runtime.python == sys.executable
    said = runtime.describe()
    assert (said.kind, said.wheel, said.sha256) == ("local", artifact(tmp_path).wheel.name, SHA)
    assert said.venv is not None and said.container is None
    assert Path(said.venv.path).parent == tmp_path / "cache" / "venvs"
    assert runtime.interpreter == Path(said.venv.path) / "bin" / "python"


def test_a_docker_runtime_carries_the_sessions_container_settings(tmp_path: Path) -> None:
    runtime = make_runtime("docker", artifact(tmp_path), settings(tmp_path))
    assert isinstance(runtime, DockerRuntime)
    said = runtime.describe()
    assert said.kind == "docker" and said.venv is None and said.container is not None
    assert said.container.base_image == "tfbuild/base:bookworm"
    assert (said.container.cpuset, said.container.network) == ("2-5", "none")
    assert said.container.image is None  # nothing is installed until prepare()
    assert (runtime.nano_cpus, runtime.memory) == (4_000_000_000, "8g")
    assert runtime.session == "20260101-0300-abcd"
    assert runtime.log_dir == tmp_path / "cache" / "logs"
    assert runtime.template_dirs == [REPO / "templates"]
    assert runtime.beside == ("ai-edge-litert==1.4.0",)


def test_what_is_installed_beside_and_the_index_make_another_local_venv(tmp_path: Path) -> None:
    """A venv is cached per wheel and per what goes in with it: the packages installed beside
    it (a model form's interpreter), the index pip reads; the CPU settings change nothing."""

    def venv(**changed: object) -> str:
        said = make_runtime("local", artifact(tmp_path), settings(tmp_path, **changed)).describe()
        assert said.venv is not None
        return said.venv.path

    mirror = PipSettings("https://mirror.example.org/simple", (), "inherit", ())
    assert venv() == venv(cpuset="0-1", nano_cpus=None, memory=None, session=None)
    assert len({venv(), venv(beside=()), venv(pip=mirror)}) == 3


@pytest.fixture
def no_other_pythons(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A PATH and a pyenv root without any interpreter."""
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "empty"))
    find_python.cache_clear()
    yield
    find_python.cache_clear()


def test_a_wheel_for_a_python_this_machine_lacks_gets_only_a_container(
    tmp_path: Path, no_other_pythons: None
) -> None:
    """CPython 3.6 is on neither PATH nor pyenv here: no local venv can be made for its wheel,
    while a container brings the Python of its image."""
    old = artifact(tmp_path, "cp36")
    with pytest.raises(InstallError, match=r"needs Python 3\.6; tfbuild runs on Python 3\."):
        make_runtime("local", old, settings(tmp_path))
    assert make_runtime("docker", old, settings(tmp_path)).describe().kind == "docker"


def test_there_is_no_runtime_of_another_kind(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="podman"):
        make_runtime("podman", artifact(tmp_path), settings(tmp_path))
