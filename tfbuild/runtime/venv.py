"""The local runtime: a cached virtual environment per (Python, wheel sha256, constraints,
extras, index settings), made from an interpreter of the wheel's CPython version."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from tfbuild import pip, wheelfile
from tfbuild.config.model import PipSettings
from tfbuild.errors import InstallError
from tfbuild.files import atomic_write_json, locked
from tfbuild.machine.pythons import RUNNING_PYTHON, find_python
from tfbuild.runtime.base import (
    PAYLOAD,
    RunOutcome,
    RuntimeEnv,
    installed_packages,
    local_env,
    run_payload,
    traces_name,
)
from tfbuild.runtime.forked import LocalZygote, Zygotes, zygote_key
from tfbuild.runtime.records import PayloadConfig, RuntimeRecord, VenvRecord
from tfbuild.store import Artifact

READY_MARKER = "tfbuild-runtime.json"
SAVE_TIMEOUT_S = 900
"""How long saving the training steps may take (importing TensorFlow and tracing them)."""


def interpreter_for(artifact: Artifact) -> str:
    """The interpreter a local venv for this wheel is made from: one of the CPython version its
    tags require (the one running tfbuild, or pythonX.Y on PATH)."""
    wanted = wheelfile.cpython_versions(artifact.wheel.name)
    if not wanted or RUNNING_PYTHON in wanted:
        return sys.executable
    for version in wanted:
        found = find_python(version)
        if found is not None:
            return found
    names = " or ".join(wanted)
    raise InstallError(
        f"{artifact.wheel.name} needs Python {names}; tfbuild runs on Python {RUNNING_PYTHON} "
        f"and there is no python{wanted[0]} on PATH for a local runtime (install it, or build "
        f"the variant with python: {RUNNING_PYTHON!r})"
    )


class LocalVenv(RuntimeEnv):
    """A virtual environment per (Python, wheel sha256, constraints, extras, index settings),
    cached."""

    kind = "local"

    def __init__(
        self,
        artifact: Artifact,
        cache_dir: Path,
        settings: PipSettings,
        python: str | None = None,
        beside: tuple[str, ...] = (),
    ) -> None:
        super().__init__(artifact)
        self.settings = settings
        self.beside = beside
        self.python = python or interpreter_for(artifact)
        base = getattr(sys, "_base_executable", sys.executable)
        identity = {
            "python": sys.version if self.python == sys.executable else self.python,
            "base": os.path.realpath(base if self.python == sys.executable else self.python),
            "wheel": artifact.sha256,
            "constraints": sorted(artifact.constraints),
            "index": pip.index_options(settings),
            "report": pip.REPORT,  # a venv made before its packages were recorded is made again
        }
        if artifact.extras:
            identity["extras"] = sorted(artifact.extras)
        if beside:
            identity["beside"] = sorted(beside)
        self.key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]
        self.path = cache_dir / "venvs" / self.key
        self.interpreter = self.path / "bin" / "python"
        self.zygotes = Zygotes()

    def _ready(self) -> bool:
        """The venv was completed for this key and its scripts still point into it."""
        marker = self.path / READY_MARKER
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if recorded.get("key") != self.key or not self.interpreter.exists():
            return False
        # The interpreter runs from where the venv stands: a moved or half-deleted one fails.
        try:
            check = subprocess.run(
                [str(self.interpreter), "-c", "import sys; print(sys.prefix)"],
                capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
        except OSError:  # no bin/python, or the interpreter it links to is gone
            return False
        prefix = check.stdout.strip()
        return (
            check.returncode == 0 and bool(prefix) and Path(prefix).resolve() == self.path.resolve()
        )

    def prepare(self) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Made in place (a venv's scripts name its path, so it cannot be renamed), under a lock;
        # the ready marker is written last, so a venv without one is half-made and is redone.
        with locked(self.path.parent / f"{self.key}.lock"):
            if self._ready():
                return False
            pip.remove_tree(self.path)
            log = self.path.parent / f"{self.key}.install.log"
            log.unlink(missing_ok=True)
            try:
                python = pip.create_venv(self.python, self.path)
                pip.install(
                    python,
                    self.artifact.wheel,
                    self.artifact.constraints,
                    self.settings,
                    log,
                    self.artifact.extras,
                    self.path / pip.REPORT,
                    self.beside,
                )
                atomic_write_json(
                    self.path / READY_MARKER,
                    {
                        "key": self.key,
                        "wheel": self.artifact.wheel.name,
                        "sha256": self.artifact.sha256,
                    },
                )
            except BaseException:
                pip.remove_tree(self.path)
                raise
        return True

    def run(
        self,
        config: PayloadConfig,
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
        zygote: str | None = None,
        live: int | None = None,
    ) -> RunOutcome:
        if not self.interpreter.exists():
            raise InstallError(f"runtime {self.path} is not prepared")
        config = self.with_traces(config)
        if zygote is not None:
            made = self.zygotes.get(
                zygote_key(env, cpus, zygote),
                lambda: LocalZygote(self.interpreter, local_env(env)),
                live,
            )
            return made.run(config.pinned(cpus), timeout)
        argv = [str(self.interpreter), str(PAYLOAD)]
        return run_payload(argv, config.pinned(cpus), local_env(env), timeout)

    def close(self) -> None:
        self.zygotes.close()

    def _save_traces(self, jit: bool) -> str:
        folder = self.path / "tfbuild-traces" / traces_name(jit)
        with locked(self.path.parent / f"{self.key}.traces.lock"):
            if folder.is_dir():
                return str(folder)
            partial = folder.with_name(f"{folder.name}.partial")
            pip.remove_tree(partial)
            partial.parent.mkdir(exist_ok=True)
            command = [str(self.interpreter), str(PAYLOAD), "--save-traces", str(partial)]
            proc = subprocess.run(
                command + (["jit"] if jit else []), capture_output=True, text=True,
                env=local_env({}), timeout=SAVE_TIMEOUT_S, check=False,
            )  # fmt: skip
            if proc.returncode != 0:
                pip.remove_tree(partial)
                raise InstallError(
                    f"saving the training steps with {self.artifact.wheel.name} failed (exit "
                    f"{proc.returncode}):\n{pip.tail(proc.stderr, 25)}"
                )
            partial.rename(folder)
        return str(folder)

    def describe(self) -> RuntimeRecord:
        try:
            report: bytes | None = (self.path / pip.REPORT).read_bytes()
        except OSError:
            report = None
        return RuntimeRecord(
            kind=self.kind,
            venv=VenvRecord(path=str(self.path), python=sys.version.split()[0]),
            wheel=self.artifact.wheel.name,
            sha256=self.artifact.sha256,
            packages=installed_packages(report, self.artifact),
        )
