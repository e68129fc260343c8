"""The Docker engine: the only module that talks to it (through the docker SDK).

Whatever DOCKER_HOST points to is used, so a remote engine works the same as the local one.
Every container tfbuild starts is removed when its work ends, also on errors and Ctrl-C. The
rest of tfbuild holds containers as opaque handles and acts on them through these functions.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from tfbuild.errors import BuildFailed, EngineUnavailable
from tfbuild.text import first_line

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
MAKE_BASE_IMAGE = (
    "make it with `tfbuild base-image` (pulled by the matrix's digest, or debootstrap where no "
    "registry answers)"
)

BENCH_UID = 10001
BENCH_USER = f"{BENCH_UID}:{BENCH_UID}"
# How benchmark containers are confined: no network, no capabilities, no privilege gain, a
# read-only root with a tmpfs /tmp, a bounded number of tasks (TensorFlow's thread pools grow
# with the CPU count, so the bound is generous).
ISOLATION: dict[str, Any] = {
    "network_mode": "none",
    "user": BENCH_USER,
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "read_only": True,
    "tmpfs": {"/tmp": "rw,nosuid,nodev,size=1g,mode=1777"},
    "pids_limit": 4096,
    "init": True,
}
Log = Callable[[str], None]

# Containers this process has running, so that Ctrl-C can stop them from the main thread while
# worker threads wait on them.
_running: set[Any] = set()
_lock = threading.Lock()
_cancelled = threading.Event()


class Cancelled(Exception):
    """The user interrupted tfbuild while this container ran."""


def cancel() -> None:
    """Kill every container this process started and make waiting workers give up."""
    _cancelled.set()
    with _lock:
        running = list(_running)
    for created in running:
        with contextlib.suppress(Exception):
            created.kill()


@functools.cache
def client() -> Any:
    import docker
    from docker.errors import DockerException

    try:
        return docker.from_env(timeout=600)
    except DockerException as exc:
        raise EngineUnavailable(
            f"no Docker engine at {os.environ.get('DOCKER_HOST', DEFAULT_DOCKER_HOST)} "
            f"({first_line(exc)}); start dockerd or set DOCKER_HOST"
        ) from exc


def image_info(reference: str) -> dict[str, Any] | None:
    """Id and registry digests of a local image, or None when the engine does not have it."""
    from docker.errors import ImageNotFound

    try:
        image = client().images.get(reference)
    except ImageNotFound:
        return None
    return {
        "id": image.id,
        "digests": list(image.attrs.get("RepoDigests") or []),
        "labels": dict(image.labels or {}),
    }


class PullRefused(Exception):
    """The registry answered a pull and refused it (no such image or digest, no access); the
    message is the engine's answer."""


class RegistryUnreachable(Exception):
    """The engine got no answer from the registry (no route, no name, connection refused); the
    message is the engine's answer."""


def pull(reference: str) -> str:
    """Pull an image by its reference (a digest pins it) through the engine; the image id.
    Raises PullRefused when the registry answers no, RegistryUnreachable when the engine gets
    no answer from it, each with the engine's own words."""
    from docker.errors import APIError

    try:
        image = client().images.pull(reference)
    except APIError as exc:
        answer = str(exc.explanation or exc)
        if exc.status_code in (401, 403, 404) or "manifest unknown" in answer:
            raise PullRefused(answer) from exc
        raise RegistryUnreachable(answer) from exc
    return str(image.id)


class Context:
    """A build context assembled in memory-friendly form: a tar on disk, streamed to the engine."""

    def __init__(self) -> None:
        self.file: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self.tar = tarfile.open(fileobj=self.file, mode="w")  # noqa: SIM115

    def add_text(self, name: str, text: str, mode: int = 0o644) -> None:
        self.add_bytes(name, text.encode("utf-8"), mode)

    def add_bytes(self, name: str, data: bytes, mode: int = 0o644) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), mode, 0
        self.tar.addfile(info, io.BytesIO(data))

    def add_path(self, name: str, path: Path) -> None:
        self.tar.add(str(path), arcname=name, filter=_normalise)

    def finish(self) -> IO[bytes]:
        self.tar.close()
        self.file.seek(0)
        return self.file

    def close(self) -> None:
        self.file.close()


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build_image(
    context: Context,
    tag: str,
    log: Log,
    target: str | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """Build an image from a context; every output line goes to `log`. Returns the image id."""
    from docker.errors import APIError, BuildError

    stream = context.finish()
    image_id = None
    try:
        for chunk in client().api.build(
            fileobj=stream,
            custom_context=True,
            tag=tag,
            target=target,
            rm=True,
            forcerm=True,
            decode=True,
            labels=dict(labels or {}),
        ):
            if "stream" in chunk:
                for line in chunk["stream"].rstrip("\n").splitlines():
                    log(line)
            if "aux" in chunk and "ID" in chunk["aux"]:
                image_id = chunk["aux"]["ID"]
            if "error" in chunk:
                log(chunk["error"].rstrip())
                raise BuildFailed(f"docker build of {tag} failed: {chunk['error'].strip()}")
    except (APIError, BuildError) as exc:
        log(str(exc))
        raise BuildFailed(f"docker build of {tag} failed: {first_line(exc)}") from exc
    finally:
        context.close()
    info = image_info(tag)
    if info is None:
        raise BuildFailed(f"docker build of {tag} reported success but the image is missing")
    return str(image_id or info["id"])


def ensure_volume(name: str, labels: Mapping[str, str] | None = None) -> str:
    """A named volume (created with `labels` if missing), or an absolute host path used as
    is."""
    if name.startswith("/"):
        Path(name).mkdir(parents=True, exist_ok=True)
        return name
    from docker.errors import NotFound

    try:
        client().volumes.get(name)
    except NotFound:
        client().volumes.create(name, labels=dict(labels or {"org.tfbuild": "bazel-cache"}))
    return name


FILLED = ".tfbuild-filled"
"""Written into a filled volume last: a volume without it was left half-filled."""


def filled_volume(name: str, image: str, data: bytes, labels: Mapping[str, str]) -> bool:
    """A named volume holding the tar `data`, filled once through a container of `image` that
    never starts (so the engine may be another machine); True when it was filled now. Name it
    by its contents: a volume of that name already filled is taken as it is, one whose fill
    was cut short (no FILLED marker) is filled again."""
    mount = volume_at(ensure_volume(name, labels), "/fill", read_only=False)
    with container(image, ["true"], mounts=[mount], network_mode="none") as created:
        if read_file(created, f"/fill/{FILLED}") is not None:
            return False
        put_archive(created, "/fill", data)
        put_archive(created, "/fill", tar_of({}, {FILLED: b""}))
    return True


def volume_at(name: str, target: str, read_only: bool = True) -> Any:
    """A named volume mounted at `target` (read-only unless told)."""
    from docker.types import Mount

    return Mount(target=target, source=name, type="volume", read_only=read_only)


@contextlib.contextmanager
def container(image: str, command: Sequence[str], **options: Any) -> Iterator[Any]:
    """A created (not started) container, always removed at the end, also on Ctrl-C."""
    if _cancelled.is_set():
        raise Cancelled("interrupted")
    created = client().containers.create(image, list(command), **options)
    with _lock:
        _running.add(created)
    try:
        yield created
    finally:
        with _lock:
            _running.discard(created)
        with contextlib.suppress(Exception):
            created.remove(force=True, v=True)  # with its anonymous volumes


def anonymous_volume(target: str) -> Any:
    """An anonymous volume at `target`, removed with its container."""
    from docker.types import Mount

    return Mount(target=target, source=None, type="volume")


def run_to_end(created: Any, log: Log | None, timeout: float | None) -> tuple[int, bool]:
    """Start a container, stream its output to `log`, wait. Returns (exit code, timed out)."""
    created.start()
    deadline = time.monotonic() + timeout if timeout else None
    if log is not None:
        buffer = ""
        for chunk in created.logs(stream=True, follow=True):
            buffer += chunk.decode("utf-8", errors="replace")
            *lines, buffer = buffer.split("\n")
            for line in lines:
                log(line.rstrip("\r"))
            if deadline and time.monotonic() > deadline:
                break
        if buffer:
            log(buffer)
    from requests.exceptions import ConnectionError as RequestsConnectionError
    from requests.exceptions import ReadTimeout

    remaining = max(1.0, deadline - time.monotonic()) if deadline else None
    try:
        result = created.wait(timeout=remaining)
    except (ReadTimeout, RequestsConnectionError):
        created.kill()
        return -9, True
    if _cancelled.is_set():
        raise Cancelled("interrupted")
    return int(result.get("StatusCode", -1)), False


@contextlib.contextmanager
def archive_of(created: Any, path: str) -> Iterator[tarfile.TarFile]:
    """A path of a (stopped) container as a tar archive, through the engine's API (the engine
    may be another machine); docker.errors.NotFound when it does not exist."""
    stream, _ = created.get_archive(path)
    with tempfile.TemporaryFile() as raw:
        for chunk in stream:
            raw.write(chunk)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as archive:
            yield archive


def copy_out(created: Any, path: str, dest: Path) -> list[Path]:
    """Copy a folder out of a (stopped) container into `dest`; returns the files copied."""
    with archive_of(created, path) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        files = []
        for member in members:
            name = Path(member.name).name  # flatten: the export holds plain files
            source = archive.extractfile(member)
            assert source is not None
            target = dest / name
            with target.open("wb") as out:
                shutil.copyfileobj(source, out)
            files.append(target)
    return files


def engine_facts() -> dict[str, Any]:
    """What the engine says about the machine it runs on (`docker info`)."""
    info = client().info()
    keys = ("Name", "NCPU", "MemTotal", "KernelVersion", "OperatingSystem", "Architecture")
    return {key: info.get(key) for key in keys}


def run_and_collect(
    image: str, command: Sequence[str], folder: str, dest: Path, timeout: float, **options: Any
) -> tuple[int, str]:
    """Run a short-lived container, then copy `folder` out of it into `dest`, keeping its tree.
    Returns the exit code and the container's output."""
    with container(image, command, **options) as created:
        code, timed_out = run_to_end(created, None, timeout)
        output = created.logs().decode("utf-8", "replace")
        if timed_out:
            return code, output + f"\n(killed after {timeout:.0f} s)"
        from docker.errors import NotFound

        try:
            with archive_of(created, folder) as archive:
                _extract_tree(archive, dest)
        except NotFound:
            pass  # the command failed before writing anything: its output says why
    return code, output


def _extract_tree(archive: tarfile.TarFile, dest: Path) -> None:
    """Plain files and folders only, never outside `dest` (tarfile's "data" filter needs
    Python >= 3.10.12)."""
    for member in archive.getmembers():
        relative = Path(member.name)
        if relative.is_absolute() or ".." in relative.parts:
            continue
        target = dest / relative
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile() and (source := archive.extractfile(member)) is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("wb") as out:
                shutil.copyfileobj(source, out)


def signal_status(code: int) -> int:
    """Container exit codes 128+N mean 'killed by signal N' (docker-init reports it so)."""
    return -(code - 128) if 128 < code < 160 else code


def tar_of(
    files: Mapping[str, tuple[bytes, int]], read_only: Mapping[str, bytes] | None = None
) -> bytes:
    """A tar of `files` (name -> (data, owner uid = gid)), and of `read_only` ones (name ->
    data): owned by root, 0444, in folders of root's at 0555, so nobody else can change them."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, (data, owner) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.uid, info.gid = len(data), 0o644, owner, owner
            tar.addfile(info, io.BytesIO(data))
        read_only = read_only or {}
        folders = sorted({str(p) for n in read_only for p in PurePosixPath(n).parents} - {"."})
        for folder in folders:
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o555
            tar.addfile(info)
        for name, data in read_only.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o444
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def read_file(created: Any, path: str) -> bytes | None:
    """One file's bytes from a (stopped) container, or None when it does not exist."""
    from docker.errors import NotFound

    try:
        with archive_of(created, path) as archive:
            member = next((m for m in archive.getmembers() if m.isfile()), None)
            source = archive.extractfile(member) if member is not None else None
            return source.read() if source is not None else None
    except NotFound:
        return None


# What runtime-install.sh.j2 will find: pythonX.Y on PATH, else in the image's apt sources.
_PYTHONS_SCRIPT = """\
for p in /usr/bin/python3.* /usr/local/bin/python3.*; do [ -x "$p" ] && echo "have $p"; done
if found=$(command -v "python$WANTED"); then
  echo "have $found"
elif command -v apt-get >/dev/null 2>&1; then
  if ! apt-get update -qq >/dev/null 2>&1; then
    echo apt-unreadable
  elif apt-cache show --no-all-versions "python$WANTED" "python$WANTED-venv" >/dev/null 2>&1; then
    echo apt
  fi
fi
true
"""


def image_pythons(image: str, wanted: str) -> tuple[tuple[str, ...], bool] | None:
    """The CPython X.Y versions an image has as pythonX.Y executables, and whether its apt
    sources offer `wanted` (asked only when the image lacks it). None when it cannot be told:
    the image is not on the engine, or its apt sources cannot be read (the runtime install
    then says what is wrong)."""
    if image_info(image) is None:
        return None
    out = (
        client()
        .containers.run(
            image, ["sh", "-c", _PYTHONS_SCRIPT], environment={"WANTED": wanted}, remove=True
        )
        .decode()
    )
    if "apt-unreadable" in out.split():
        return None
    names = {Path(line.split()[1]).name for line in out.splitlines() if line.startswith("have ")}
    have = sorted(
        (n.removeprefix("python") for n in names if re.fullmatch(r"python3\.\d+", n)),
        key=lambda v: int(v.split(".")[1]),
    )
    return tuple(have), "apt" in out.split()


@dataclass(frozen=True)
class DockerInfo:
    """Whether a Docker engine answers at DOCKER_HOST (part of a host profile)."""

    reachable: bool
    host: str
    version: str | None = None
    api_version: str | None = None
    error: str | None = None


def docker_status(timeout: float = 3.0) -> DockerInfo:
    """Whether a Docker engine answers at DOCKER_HOST, and its version. Never raises."""
    host = os.environ.get("DOCKER_HOST", DEFAULT_DOCKER_HOST)
    import docker
    from docker.errors import DockerException

    try:
        client = docker.from_env(timeout=timeout)
        try:
            version = client.version()
        finally:
            client.close()
    except (DockerException, OSError) as exc:
        return DockerInfo(reachable=False, host=host, error=first_line(exc))
    return DockerInfo(
        reachable=True,
        host=host,
        version=str(version.get("Version")),
        api_version=str(version.get("ApiVersion")),
    )


def all_gpus() -> list[Any]:
    """The device request for every GPU of the engine's machine (docker run --gpus all)."""
    from docker.types import DeviceRequest

    return [DeviceRequest(count=-1, capabilities=[["gpu"]])]


def remove_image(reference: str) -> None:
    client().images.remove(reference, force=True)


def put_archive(created: Any, path: str, data: bytes | IO[bytes]) -> None:
    """Copy a tar archive into a (created) container's folder, through the API."""
    created.put_archive(path, data)


def commit(created: Any, tag: str, message: str, changes: Sequence[str]) -> None:
    """Make an image of a (stopped) container."""
    repository, _, version = tag.partition(":")
    created.commit(repository=repository, tag=version, message=message, changes=list(changes))


def output_of(created: Any, *, stdout: bool = True, stderr: bool = True) -> str:
    """What a container has printed so far."""
    return bytes(created.logs(stdout=stdout, stderr=stderr)).decode("utf-8", "replace")
