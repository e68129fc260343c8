"""Making a runtime of a kind: a {kind: factory} table over the local venv and the container."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tfbuild.config.model import PipSettings
from tfbuild.runtime.base import RuntimeEnv
from tfbuild.runtime.container import DockerRuntime
from tfbuild.runtime.venv import LocalVenv
from tfbuild.store import Artifact


@dataclass(frozen=True, kw_only=True)
class RuntimeSettings:
    """How runtimes are made: where venvs are cached, which image containers start from, the
    session whose label benchmark containers carry."""

    cache_dir: Path
    pip: PipSettings
    base_image: str
    template_dirs: tuple[Path, ...]
    cpuset: str | None = None
    nano_cpus: int | None = None
    memory: str | None = None
    session: str | None = None
    beside: tuple[str, ...] = ()
    """Requirements installed with each wheel (the interpreter of a model form measured)."""


def _local(artifact: Artifact, settings: RuntimeSettings) -> RuntimeEnv:
    return LocalVenv(artifact, settings.cache_dir, settings.pip, beside=settings.beside)


def _docker(artifact: Artifact, settings: RuntimeSettings) -> RuntimeEnv:
    return DockerRuntime(
        artifact,
        settings=settings.pip,
        base_image=settings.base_image,
        template_dirs=list(settings.template_dirs),
        log_dir=settings.cache_dir / "logs",
        cpuset=settings.cpuset,
        nano_cpus=settings.nano_cpus,
        memory=settings.memory,
        session=settings.session,
        beside=settings.beside,
    )


FACTORIES: dict[str, Callable[[Artifact, RuntimeSettings], RuntimeEnv]] = {
    "local": _local,
    "docker": _docker,
}


def make_runtime(kind: str, artifact: Artifact, settings: RuntimeSettings) -> RuntimeEnv:
    """A runtime of `kind` (local or docker) for the wheel."""
    return FACTORIES[kind](artifact, settings)
