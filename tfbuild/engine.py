"""The Docker engine: the only module that talks to it (through the docker SDK).

Whatever DOCKER_HOST points to is used, so a remote engine works the same as the local one.
The rest of tfbuild says what it wants in its own words (a ContainerSpec: image, command,
mounts, limits, devices, network, labels) and gets a Container back, which it acts on through
these functions; only this module speaks the docker SDK's. Every container tfbuild starts is
named `tfbuild-<role>-<random>` and removed when its work ends, also on errors and Ctrl-C,
unless TFBUILD_KEEP_CONTAINERS is set (`tfbuild --keep-containers`): then it is left, stopped,
for `docker logs` and `docker cp`, and named when tfbuild ends.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import secrets
import shutil
import tarfile
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from tfbuild.errors import BuildFailed, EngineUnavailable
from tfbuild.files import extract_tree, tar_of
from tfbuild.wording import first_line

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
MAKE_BASE_IMAGE = (
    "make it with `tfbuild base-image` (pulled by the matrix's digest, or debootstrap where no "
    "registry answers)"
)

BENCH_UID = 10001
BENCH_USER = f"{BENCH_UID}:{BENCH_UID}"
# How confined containers (benchmarks, the probe) run: no network, no capabilities, no
# privilege gain, a read-only root with a tmpfs /tmp, a bounded number of tasks (TensorFlow's
# thread pools grow with the CPU count, so the bound is generous).
_CONFINED: dict[str, Any] = {
    "network_mode": "none",
    "user": BENCH_USER,
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "read_only": True,
    "tmpfs": {"/tmp": "rw,nosuid,nodev,size=1g,mode=1777"},
    "pids_limit": 4096,
    "init": True,
}
KEEP_ENV = "TFBUILD_KEEP_CONTAINERS"
"""Set (to anything but 0 or empty): containers are left, stopped, instead of removed."""
Log = Callable[[str], None]


@dataclass(frozen=True)
class Mount:
    """A volume in a container at `target`: a named volume, a folder of the engine's machine
    (an absolute path) or, with no source, an anonymous volume removed with the container."""

    target: str
    source: str | None = None
    read_only: bool = True


@dataclass(frozen=True)
class ContainerSpec:
    """A container tfbuild starts, in tfbuild's words."""

    image: str
    command: tuple[str, ...]
    role: str
    """What it is for (build, runtime, bench, probe, fill, pythons): the start of its name and
    its org.tfbuild label."""
    environment: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    network: str | None = None
    """An engine network by name ("none": no network); None: the engine's default."""
    user: str | None = None
    confined: bool = False
    """Run as a benchmark runs: no network, BENCH_USER, no capabilities, read-only root."""
    cpuset: str | None = None
    """The CPUs it may run on (docker run --cpuset-cpus)."""
    nano_cpus: int | None = None
    """Its CPU quota in billionths of a CPU (docker run --cpus)."""
    memory: str | None = None
    """Its memory limit, as docker run --memory takes it ("4g")."""
    gpus: bool = False
    """Every GPU of the engine's machine (docker run --gpus all)."""


@dataclass
class Container:
    """A container tfbuild created: its name, and the engine's handle to it."""

    name: str
    handle: Any = field(repr=False)


# Containers this process has running, so that Ctrl-C can stop them from the main thread while
# worker threads wait on them.
_running: dict[str, Any] = {}
"""name -> the engine's handle."""
kept: list[str] = []
"""Containers left for debugging (KEEP_ENV), in the order they were made."""
_lock = threading.Lock()
_cancelled = threading.Event()


class Cancelled(Exception):
    """The user interrupted tfbuild while this container ran."""


def cancel() -> None:
    """Kill every container this process started and make waiting workers give up."""
    _cancelled.set()
    with _lock:
        running = list(_running.values())
    for handle in running:
        with contextlib.suppress(Exception):
            handle.kill()


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
    mount = Mount("/fill", ensure_volume(name, labels), read_only=False)
    spec = ContainerSpec(image, ("true",), "fill", mounts=(mount,), network="none")
    with container(spec) as created:
        if read_file(created, f"/fill/{FILLED}") is not None:
            return False
        put_archive(created, "/fill", data)
        put_archive(created, "/fill", tar_of({}, {FILLED: b""}))
    return True


def _sdk_options(spec: ContainerSpec) -> dict[str, Any]:
    """The docker SDK's keyword arguments for a spec."""
    from docker.types import DeviceRequest
    from docker.types import Mount as SdkMount

    def mount(m: Mount) -> Any:
        kind = "bind" if m.source and m.source.startswith("/") else "volume"
        return SdkMount(target=m.target, source=m.source, type=kind, read_only=m.read_only)

    options: dict[str, Any] = {
        "environment": dict(spec.environment),
        "mounts": [mount(m) for m in spec.mounts],
        "labels": {"org.tfbuild": spec.role, **spec.labels},
    }
    if spec.confined:
        options |= _CONFINED
    if spec.network is not None:
        options["network_mode"] = spec.network
    if spec.user is not None:
        options["user"] = spec.user
    if spec.cpuset:
        options["cpuset_cpus"] = spec.cpuset
    if spec.nano_cpus:
        options["nano_cpus"] = spec.nano_cpus
    if spec.memory:
        options["mem_limit"] = spec.memory
    if spec.gpus:
        options["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return options


def keeping() -> bool:
    """Whether containers are left for debugging (KEEP_ENV)."""
    return os.environ.get(KEEP_ENV, "") not in ("", "0")


@contextlib.contextmanager
def container(spec: ContainerSpec) -> Iterator[Container]:
    """A created (not started) container, removed at the end, also on Ctrl-C (left, stopped,
    when keeping())."""
    if _cancelled.is_set():
        raise Cancelled("interrupted")
    name = f"tfbuild-{spec.role}-{secrets.token_hex(4)}"
    try:
        handle = client().containers.create(
            spec.image, list(spec.command), name=name, **_sdk_options(spec)
        )
    except BaseException as exc:
        from docker.errors import APIError

        if not isinstance(exc, APIError):  # refused by the engine: nothing was made
            _remove_made(name)
        raise
    with _lock:
        _running[name] = handle
    try:
        yield Container(name, handle)
    finally:
        with _lock:
            del _running[name]
        if keeping():
            with contextlib.suppress(Exception):
                handle.stop(timeout=1)
            kept.append(name)
        else:
            with contextlib.suppress(Exception):
                handle.remove(force=True, v=True)  # with its anonymous volumes


def _remove_made(name: str, wait_s: float = 5.0) -> None:
    """Remove a container whose creation was interrupted (Ctrl-C, SIGTERM, a lost connection):
    the engine may have made it after the request left, or be making it still, so its name is
    looked for until `wait_s` has passed."""
    from docker.errors import APIError, NotFound

    deadline = time.monotonic() + wait_s
    while True:
        try:
            client().api.remove_container(name, force=True, v=True)
            return
        except NotFound:
            if time.monotonic() > deadline:
                return
            time.sleep(0.2)
        except (APIError, OSError):  # the engine is gone or busy with it: nothing more to do
            return


def run_to_end(made: Container, log: Log | None, timeout: float | None) -> tuple[int, bool]:
    """Start a container, stream its output to `log`, wait. Returns (exit code, timed out)."""
    created = made.handle
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
def archive_of(made: Container, path: str) -> Iterator[tarfile.TarFile]:
    """A path of a (stopped) container as a tar archive, through the engine's API (the engine
    may be another machine); docker.errors.NotFound when it does not exist."""
    stream, _ = made.handle.get_archive(path)
    with tempfile.TemporaryFile() as raw:
        for chunk in stream:
            raw.write(chunk)
        raw.seek(0)
        with tarfile.open(fileobj=raw) as archive:
            yield archive


def copy_out(created: Container, path: str, dest: Path) -> list[Path]:
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
    spec: ContainerSpec, folder: str, dest: Path, timeout: float
) -> tuple[int, str]:
    """Run a short-lived container, then copy `folder` out of it into `dest`, keeping its tree.
    Returns the exit code and the container's output."""
    with container(spec) as created:
        code, timed_out = run_to_end(created, None, timeout)
        output = output_of(created)
        if timed_out:
            return code, output + f"\n(killed after {timeout:.0f} s)"
        from docker.errors import NotFound

        try:
            with archive_of(created, folder) as archive:
                extract_tree(archive, dest)
        except NotFound:
            pass  # the command failed before writing anything: its output says why
    return code, output


def signal_status(code: int) -> int:
    """Container exit codes 128+N mean 'killed by signal N' (docker-init reports it so)."""
    return -(code - 128) if 128 < code < 160 else code


def read_file(created: Container, path: str) -> bytes | None:
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
    spec = ContainerSpec(image, ("sh", "-c", _PYTHONS_SCRIPT), "pythons", {"WANTED": wanted})
    with container(spec) as made:
        run_to_end(made, None, timeout=600)
        out = output_of(made, stderr=False)
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


def remove_image(reference: str) -> None:
    client().images.remove(reference, force=True)


def put_archive(
    created: Container, path: str, data: bytes | IO[bytes], start: bool = False
) -> None:
    """Copy a tar archive into a (created) container's folder, through the API; with `start`,
    then start it and leave it running (its command serves until it is removed)."""
    created.handle.put_archive(path, data)
    if start:
        created.handle.start()


def commit(created: Container, tag: str, message: str, changes: Sequence[str]) -> None:
    """Make an image of a (stopped) container."""
    repository, _, version = tag.partition(":")
    created.handle.commit(
        repository=repository, tag=version, message=message, changes=list(changes)
    )


def output_of(created: Container, *, stdout: bool = True, stderr: bool = True) -> str:
    """What a container has printed so far."""
    return bytes(created.handle.logs(stdout=stdout, stderr=stderr)).decode("utf-8", "replace")


class NotRunning(Exception):
    """The container has stopped: `status` is how its command ended (negative: a signal)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"stopped (exit status {status})")
        self.status = status


def exec_in(created: Container, command: Sequence[str]) -> tuple[int, str]:
    """Run a command in a running container as its user; its exit code and standard output."""
    from docker.errors import APIError

    try:
        result = created.handle.exec_run(list(command), stdout=True, stderr=False)
    except APIError as exc:
        created.handle.reload()
        raise NotRunning(signal_status(created.handle.attrs["State"]["ExitCode"])) from exc
    return int(result.exit_code), bytes(result.output).decode("utf-8", "replace")
