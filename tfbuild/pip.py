"""The package index, pip and venv: the only module that runs them.

pip runs as a subprocess of the Python that owns the environment (``python -m pip``), with its
output in a log file whose tail is shown when something fails. pip's own configuration (pip.conf,
PIP_* variables) applies unless matrix.yaml sets index settings of its own.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from tfbuild.config.model import PipSettings
from tfbuild.errors import InstallError
from tfbuild.files import sha256_of

LOG_TAIL_LINES = 25


@dataclass(frozen=True)
class Resolved:
    """What a requirement resolves to on the package index, before anything is downloaded."""

    name: str
    version: str
    url: str
    sha256: str | None


def wheel_tags(filename: str) -> list[str]:
    _, _, _, tags = parse_wheel_filename(filename)
    return sorted(str(t) for t in tags)


def index_options(settings: PipSettings) -> list[str]:
    """pip options for matrix.yaml's pip settings; ``inherit`` adds nothing."""
    options: list[str] = []
    if settings.index_url != "inherit":
        options += ["--index-url", settings.index_url]
    if settings.extra_index_urls != "inherit":
        for url in settings.extra_index_urls:
            options += ["--extra-index-url", url]
    if settings.ca_bundle not in ("inherit", "none"):
        options += ["--cert", settings.ca_bundle]
    for host in settings.trusted_hosts:
        options += ["--trusted-host", host]
    return options


def tail(text: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _pip(
    python: str | Path, args: Sequence[str], log: Path | None, what: str, timeout: float = 3600
) -> str:
    argv = [*_runner(python), "--disable-pip-version-check", "--no-input", *args]
    # Its own session, stopped whole: pip --python runs the install in a child of its own.
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PIP_PROGRESS_BAR": "off"}, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except BaseException:  # a time limit, Ctrl-C, SIGTERM: nothing of pip's goes on writing
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    output = f"+ {' '.join(argv)}\n{stdout}\n{stderr}"
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("a", encoding="utf-8") as fh:
            fh.write(output)
    if proc.returncode != 0:
        where = f"\nfull log: {log}" if log else ""
        raise InstallError(f"{what} failed (pip exit {proc.returncode}):\n{tail(output)}{where}")
    return stdout


_NO_MATCH = re.compile(
    r"Could not find a version that satisfies the requirement [^\n]*?\(from versions: "
    r"(?P<versions>[^)]*)\)"
)


def _python(python: str | Path) -> str:
    if str(python) == sys.executable:
        return f"CPython {sys.version_info.major}.{sys.version_info.minor}"
    return str(python)


def resolve(
    requirement: str, settings: PipSettings, python: str | Path = sys.executable
) -> Resolved:
    """Ask the index which wheel `requirement` means for this Python, without installing it;
    when the index has none, say so with the versions it has for this Python."""
    try:
        out = _pip(
            python,
            [
                "install",
                "--dry-run",
                "--ignore-installed",
                "--no-deps",
                "--only-binary=:all:",
                "--quiet",
                "--report",
                "-",
                *index_options(settings),
                requirement,
            ],
            None,
            f"resolving {requirement}",
        )
    except InstallError as exc:
        found = _NO_MATCH.search(str(exc))
        if found is None:
            raise
        versions = [v for v in found.group("versions").split(", ") if v and v != "none"]
        if not versions:
            raise InstallError(
                f"{requirement}: the package index has no wheel of it for this Python "
                f"({_python(python)}), or cannot be reached (pip lists no version at all); "
                "check the index settings"
            ) from exc
        newest = ", ".join(versions[-6:]) + (" (the newest six)" if len(versions) > 6 else "")
        raise InstallError(
            f"{requirement}: no wheel on the package index for this Python ({_python(python)}); "
            f"it has {newest}: name one of those"
        ) from exc
    try:
        item = json.loads(out)["install"][0]
        info = item["download_info"]
        hashes = info.get("archive_info", {}).get("hashes", {})
        return Resolved(
            name=item["metadata"]["name"],
            version=item["metadata"]["version"],
            url=info["url"],
            sha256=hashes.get("sha256"),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise InstallError(
            f"resolving {requirement}: pip's --report is not what this pip version should "
            f"write ({type(exc).__name__}: {exc}); its output began: {out[:200]!r}"
        ) from exc


def download(
    resolved: Resolved, dest: Path, settings: PipSettings, python: str | Path = sys.executable
) -> Path:
    """Download exactly the resolved wheel into `dest`, checking its sha256."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest, prefix=".download-") as tmp:
        _pip(
            python,
            [
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--dest",
                tmp,
                *index_options(settings),
                f"{resolved.name}=={resolved.version}",
            ],
            dest / "fetch.log",
            f"downloading {resolved.name} {resolved.version}",
        )
        wheels = list(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise InstallError(f"pip download of {resolved.name} gave {len(wheels)} wheels")
        digest = sha256_of(wheels[0])
        if resolved.sha256 and digest != resolved.sha256:
            raise InstallError(
                f"{wheels[0].name}: sha256 {digest} does not match the index's {resolved.sha256}"
            )
        final = dest / wheels[0].name
        wheels[0].replace(final)
    return final


def _real(python: str | Path) -> str:
    """The file an interpreter (a path, or a name on PATH) finally is, links followed."""
    return os.path.realpath(shutil.which(str(python)) or str(python))


@functools.cache
def _this_pip_serves() -> str | None:
    """The interpreter this process's pip can install for besides its own environment (`pip
    --python`, pip 22.3 and later): the one running tfbuild, whose venvs share its Python (pip
    runs inside the target interpreter, so only a Python it supports can take it); None
    without such a pip."""
    try:
        version = importlib.metadata.version("pip")
    except importlib.metadata.PackageNotFoundError:
        return None
    if Version(version) < Version("22.3"):
        return None
    return _real(getattr(sys, "_base_executable", sys.executable))


def _shares_pip(python: str | Path) -> bool:
    """Whether a venv of `python` (or its interpreter) is installed into by this process's pip
    rather than one of its own."""
    return _this_pip_serves() is not None and _real(python) == _this_pip_serves()


def create_venv(python: str | Path, path: Path) -> Path:
    """A fresh virtual environment at `path`; returns its interpreter. Without pip of its own
    where this process's pip installs into it (ensurepip takes seconds of CPU per venv)."""
    bare = ["--without-pip"] if _shares_pip(python) else []
    argv = [str(python), "-m", "venv", "--clear", *bare, str(path)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise InstallError(f"creating a venv at {path} failed:\n{tail(proc.stderr)}")
    return path / "bin" / "python"


def _runner(python: str | Path) -> list[str]:
    """How pip is run for the environment of `python`: this process's pip pointed at it, or the
    environment's own."""
    if str(python) != sys.executable and _shares_pip(python):
        return [sys.executable, "-m", "pip", "--python", str(python)]
    return [str(python), "-m", "pip"]


REPORT = "pip-report.json"
"""What a runtime was made of: pip's install report (`pip install --report`), kept in the
runtime's environment (sys.prefix) by the runtime that made it; `installed` reads it."""


def installed(report: dict[str, object]) -> list[dict[str, str | None]]:
    """Each distribution a pip install report says was installed: its name and version, and
    the sha256 and name of the file it came from (None when pip gave no hash)."""
    found: list[dict[str, str | None]] = []
    for item in report.get("install") or ():  # type: ignore[attr-defined]
        metadata, source = item.get("metadata") or {}, item.get("download_info") or {}
        hashes = (source.get("archive_info") or {}).get("hashes") or {}
        found.append({
            "name": str(metadata["name"]),
            "version": str(metadata["version"]),
            "sha256": hashes.get("sha256"),
            "file": str(source.get("url", "")).rsplit("/", 1)[-1],
        })  # fmt: skip
    return sorted(found, key=lambda p: str(p["name"]).lower())


def install(
    python: Path,
    wheel: Path,
    constraints: Sequence[str],
    settings: PipSettings,
    log: Path,
    extras: Sequence[str] = (),
    report: Path | None = None,
    beside: Sequence[str] = (),
) -> None:
    """Install a wheel and its dependencies, honouring per-variant constraints (numpy<2...);
    `extras` are the wheel's own (and-cuda); `beside`, requirements resolved with it (a model
    form's interpreter). With `report`, pip writes there what it installed, each file with its
    hash (`installed` reads it)."""
    args = ["install", "--no-warn-script-location", *index_options(settings)]
    if report is not None:
        args += ["--report", str(report)]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as fh:
        fh.write("".join(f"{c}\n" for c in constraints))
        constraints_file = fh.name
    try:
        if constraints:
            args += ["--constraint", constraints_file]
        target = str(wheel) + (f"[{','.join(extras)}]" if extras else "")
        _pip(python, [*args, target, *beside], log, f"installing {wheel.name}")
    finally:
        Path(constraints_file).unlink(missing_ok=True)


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class ContainerPip:
    """What pip inside a container needs to reach the same index as this machine."""

    env: dict[str, str]
    """PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_TRUSTED_HOST for the install step."""
    ca_bundle: Path | None
    """A CA bundle to copy in (corporate proxies and mirrors), or None."""
    notes: tuple[str, ...] = ()


def host_pip_config(python: str | Path = sys.executable) -> dict[str, str]:
    """pip's effective settings on this machine (pip.conf files and PIP_* variables)."""
    proc = subprocess.run(
        [str(python), "-m", "pip", "config", "list"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    values: dict[str, str] = {}
    ranked: dict[str, int] = {}
    for line in proc.stdout.splitlines():
        key, sep, raw = line.partition("=")
        if not sep:
            continue
        scope, _, name = key.partition(".")
        value = raw.strip().strip("'\"")
        rank = 2 if scope == ":env:" else 1 if scope in ("install", "download") else 0
        if rank >= ranked.get(name, -1):
            values[name], ranked[name] = value, rank
    return values


def container_pip(settings: PipSettings, host: dict[str, str] | None = None) -> ContainerPip:
    """Resolve matrix.yaml's pip settings (``inherit`` = this machine's) for a container.

    file:// indexes exist only on this machine, so they are left out, with a note.
    """
    config = host if host is not None else host_pip_config()
    notes: list[str] = []

    def reachable(urls: list[str]) -> list[str]:
        kept = [u for u in urls if not u.startswith("file:")]
        if len(kept) < len(urls):
            notes.append(
                "left out index URLs that only exist on this machine: "
                + " ".join(u for u in urls if u.startswith("file:"))
            )
        return kept

    env: dict[str, str] = {}
    index = settings.index_url if settings.index_url != "inherit" else config.get("index-url")
    if index and reachable([index]):
        env["PIP_INDEX_URL"] = index
    extra = (
        config.get("extra-index-url", "").split()
        if settings.extra_index_urls == "inherit"
        else list(settings.extra_index_urls)
    )
    if kept := reachable(extra):
        env["PIP_EXTRA_INDEX_URL"] = " ".join(kept)
    trusted = list(settings.trusted_hosts) or config.get("trusted-host", "").split()
    if trusted:
        env["PIP_TRUSTED_HOST"] = " ".join(trusted)
    if config.get("timeout") or config.get("default-timeout"):
        env["PIP_DEFAULT_TIMEOUT"] = config.get("default-timeout") or config["timeout"]
    ca = settings.ca_bundle
    bundle = None
    if ca == "inherit":
        found = config.get("cert")
        bundle = Path(found) if found and Path(found).is_file() else None
    elif ca != "none":
        bundle = Path(ca)
        if not bundle.is_file():
            raise InstallError(f"defaults.pip.ca_bundle {ca}: no such file")
    return ContainerPip(env, bundle, tuple(notes))
