"""cuobjdump, NVIDIA's fat-binary lister: the only module that runs it.

It names the GPU architectures an ELF object carries CUDA code for: SASS (``sm_XY``, machine
code for GPUs of major X and minor Y or higher) and PTX (``compute_XY``, which the driver
compiles on first use for any GPU of compute capability X.Y or higher).

The cuobjdump on PATH is used when there is one. Otherwise NVIDIA's own wheel of it
(``nvidia-cuda-cuobjdump``: the binary alone, no CUDA toolkit or driver needed) is installed
once from the package index, with the index settings pip uses for every other download, into
``<cache>/tools/cuobjdump-<version>/bin/cuobjdump``: unpacked in a temporary folder beside it
and renamed into place under a lock, so a half-done install is never used.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tfbuild import pip
from tfbuild.audit.model import CudaListing, CudaTool
from tfbuild.config.model import PipSettings
from tfbuild.errors import InstallError
from tfbuild.files import atomic_write_text, locked

DISTRIBUTION = "nvidia-cuda-cuobjdump"
LIST_TIMEOUT = 600
FAILED_MEMO = "cuobjdump.failed"
"""Why the last install failed; within RETRY_AFTER_S of it, no install is tried (each try
against an unreachable index costs pip's retries, for every wheel with device code)."""
RETRY_AFTER_S = 3600

_SASS = re.compile(r"\.(sm_\d+[a-z]?)\.cubin\b")
_PTX = re.compile(r"\.(sm_\d+[a-z]?)\.ptx\b")


@dataclass(frozen=True)
class Cuobjdump:
    path: Path
    version: str | None
    source: str
    """Where it came from: ``PATH``, or the distribution and version from the package index."""

    def to_json(self) -> dict[str, Any]:
        return {"path": str(self.path), "version": self.version, "source": self.source}


def tool_version(path: Path) -> str | None:
    """The release cuobjdump reports (``V13.5.37`` -> 13.5.37); None when it does not run."""
    try:
        proc = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.search(r"\bV(\d+(?:\.\d+)+)", proc.stdout)
    return found.group(1) if proc.returncode == 0 and found else None


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def installed(cache_dir: Path) -> Cuobjdump | None:
    """The newest cuobjdump a previous run installed into the cache."""
    folders = [
        f
        for f in (cache_dir / "tools").glob("cuobjdump-*")
        if (f / "bin" / "cuobjdump").is_file() and os.access(f / "bin" / "cuobjdump", os.X_OK)
    ]
    if not folders:
        return None
    folder = max(folders, key=lambda f: _version_key(f.name))
    version = folder.name.removeprefix("cuobjdump-")
    return Cuobjdump(folder / "bin" / "cuobjdump", version, f"{DISTRIBUTION} {version}")


def install(cache_dir: Path, settings: PipSettings) -> Cuobjdump:
    """Install the package index's cuobjdump into the cache (once; a concurrent run waits)."""
    tools = cache_dir / "tools"
    tools.mkdir(parents=True, exist_ok=True)
    with locked(tools / ".cuobjdump.lock"):
        found = installed(cache_dir)
        if found is not None:
            return found
        resolved = pip.resolve(DISTRIBUTION, settings)
        final = tools / f"cuobjdump-{resolved.version}"
        with tempfile.TemporaryDirectory(dir=tools, prefix=".cuobjdump-") as tmp:
            wheel = pip.download(resolved, Path(tmp) / "download", settings)
            staged = Path(tmp) / "tool"
            binary = staged / "bin" / "cuobjdump"
            _unpack(wheel, binary)
            if tool_version(binary) is None:
                raise InstallError(f"{wheel.name}: its cuobjdump does not run on this machine")
            origin = {"distribution": DISTRIBUTION, "version": resolved.version,
                      "url": resolved.url, "sha256": resolved.sha256}  # fmt: skip
            (staged / "origin.json").write_text(json.dumps(origin, indent=2) + "\n")
            shutil.rmtree(final, ignore_errors=True)  # only a folder without its binary
            staged.rename(final)
    version = resolved.version
    return Cuobjdump(final / "bin" / "cuobjdump", version, f"{DISTRIBUTION} {version}")


def _unpack(wheel: Path, binary: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        members = [n for n in archive.namelist() if n.endswith("/bin/cuobjdump")]
        if len(members) != 1:
            raise InstallError(f"{wheel.name} holds no single bin/cuobjdump ({members or 'none'})")
        binary.parent.mkdir(parents=True)
        with archive.open(members[0]) as source, binary.open("wb") as out:
            shutil.copyfileobj(source, out)
    binary.chmod(0o755)


def _why(error: Exception) -> str:
    """What went wrong, from pip's last ERROR line. pip says "No matching distribution" both
    when the index has no such wheel and when it cannot be reached (the connection warnings
    are not in its quiet output), so both are named."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    why = (errors or lines or [type(error).__name__])[-1]
    if why.startswith("No matching distribution"):
        why += " (the package index cannot be reached, or has no such wheel for this machine)"
    return why


def _recent_failure(memo: Path) -> str | None:
    """Why the install failed, when it failed less than RETRY_AFTER_S ago."""
    try:
        at = memo.stat().st_mtime
        if not 0 <= time.time() - at < RETRY_AFTER_S:
            return None
        why = memo.read_text(encoding="utf-8")
    except OSError:
        return None
    when = time.strftime("%H:%M UTC", time.gmtime(at))
    return f"{why} (at {when}; tried again an hour later, or by inspect --refresh)"


class DeviceCode:
    """Lists the device code of the objects of one audit, with a cuobjdump found (or installed)
    on the first object that has any: a wheel without device code never installs it."""

    def __init__(self, cache_dir: Path | None, settings: PipSettings, retry: bool = False) -> None:
        self.cache_dir = cache_dir
        self.settings = settings
        self.retry = retry
        """Try to install even when the last try failed less than RETRY_AFTER_S ago."""

    @functools.cached_property
    def tool(self) -> Cuobjdump | str:
        """The cuobjdump to use, or why there is none."""
        on_path = shutil.which("cuobjdump")
        if on_path is not None:
            return Cuobjdump(Path(on_path), tool_version(Path(on_path)), "PATH")
        if self.cache_dir is None:
            return "cuobjdump is not on PATH"
        found = installed(self.cache_dir)
        if found is not None:
            return found
        failed = self.cache_dir / "tools" / FAILED_MEMO
        recent = None if self.retry else _recent_failure(failed)
        if recent is not None:
            return recent
        try:
            tool = install(self.cache_dir, self.settings)
            failed.unlink(missing_ok=True)
            return tool
        except (InstallError, OSError, subprocess.SubprocessError) as exc:
            why = (
                f"cuobjdump is not on PATH and {DISTRIBUTION} could not be installed from the "
                f"package index: {_why(exc)}"
            )
            with contextlib.suppress(OSError):
                atomic_write_text(failed, why)
            return why

    def describe(self) -> CudaTool | None:
        """The tool used, for the report; None when none was needed or none could be had."""
        tool = self.__dict__.get("tool")
        if not isinstance(tool, Cuobjdump):
            return None
        return CudaTool(str(tool.path), tool.version, tool.source)

    def __call__(self, path: Path) -> CudaListing:
        """SASS and PTX architectures of one object with device code."""
        tool = self.tool
        if isinstance(tool, str):
            return unlisted(f"not checked: {tool}")
        try:
            proc = subprocess.run(
                [str(tool.path), "--list-elf", "--list-ptx", str(path)],
                capture_output=True,
                text=True,
                timeout=LIST_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return unlisted(f"cuobjdump failed: {exc}")
        if proc.returncode != 0:
            tail = pip.tail(proc.stderr or proc.stdout, 3).replace("\n", " ")
            return unlisted(f"cuobjdump failed (exit {proc.returncode}): {tail}")
        found = architectures(proc.stdout)
        return CudaListing(True, tuple(found["sass"]), tuple(found["ptx"]), None)


def unlisted(note: str) -> CudaListing:
    """Device code whose architectures could not be listed, and why."""
    return CudaListing(False, (), (), note)


def architectures(listing: str) -> dict[str, list[str]]:
    """SASS (sm_XY) and PTX (compute_XY) architectures in `cuobjdump --list-elf --list-ptx`
    output, whose lines name each image ``<object>.<n>.sm_XY.cubin`` or ``...sm_XY.ptx``."""
    sass = set(_SASS.findall(listing))
    ptx = {m.replace("sm_", "compute_", 1) for m in _PTX.findall(listing)}
    return {"sass": sorted(sass, key=arch_key), "ptx": sorted(ptx, key=arch_key)}


def arch_key(arch: str) -> tuple[int, str]:
    """sm_89 before sm_90 before sm_100 (numeric, not text, order)."""
    number = arch.partition("_")[2]
    digits = number.rstrip("abcdefghijklmnopqrstuvwxyz")
    return (int(digits) if digits.isdigit() else 0, number[len(digits) :])
