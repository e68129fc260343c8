"""The Docker engine: the only module that talks to it (through the docker SDK).

Whatever DOCKER_HOST points to is used, so a remote engine works the same as the local one.
"""

from __future__ import annotations

import os

from tfbuild.host import DockerInfo

_DEFAULT_HOST = "unix:///var/run/docker.sock"


def status(timeout: float = 3.0) -> DockerInfo:
    """Whether an engine answers, and its version. Never raises."""
    host = os.environ.get("DOCKER_HOST", _DEFAULT_HOST)
    try:
        import docker
        from docker.errors import DockerException
    except ImportError as exc:  # pragma: no cover - docker is a dependency
        return DockerInfo(reachable=False, host=host, error=f"docker SDK missing: {exc}")
    try:
        client = docker.from_env(timeout=timeout)
        try:
            version = client.version()
        finally:
            client.close()
    except DockerException as exc:
        return DockerInfo(reachable=False, host=host, error=_first_line(exc))
    except OSError as exc:
        return DockerInfo(reachable=False, host=host, error=_first_line(exc))
    return DockerInfo(
        reachable=True,
        host=host,
        version=str(version.get("Version")),
        api_version=str(version.get("ApiVersion")),
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
