"""Runtimes: where a TensorFlow wheel is installed and the benchmark payload runs.

``RuntimeEnv`` is the interface; ``LocalVenv`` (one cached venv per wheel and constraint set,
made with this machine's Python) is the embedded default, and ``DockerRuntime`` (one image per
wheel, benchmark containers without network) runs when a Docker engine is reachable and the
variant asks for it. Every run is a fresh process.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from tfbuild import pip, wheelfile
from tfbuild.errors import EngineUnavailable, InstallError
from tfbuild.fetch import Artifact
from tfbuild.host import RUNNING_PYTHON, find_python
from tfbuild.matrix import KNOWN_ENV, PipSettings, Variant
from tfbuild.store import atomic_write_json, locked

PAYLOAD = Path(__file__).resolve().parent / "bench" / "payload.py"
STDERR_TAIL_LINES = 30
READY_MARKER = "tfbuild-runtime.json"
# Fixed for every benchmark process, in every runtime.
BASE_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
# Variables that change how TensorFlow or its thread pools behave: never inherited from the
# caller's shell, only set by a tuning.
_SCRUBBED_PREFIXES = ("OMP_", "KMP_", "MKL_", "TF_", "ONEDNN_", "DNNL_", "PYTHON", "GOMP_")


def local_env(tuning_env: Mapping[str, str]) -> dict[str, str]:
    """This process's environment without tuning-sensitive variables, plus the tuning's."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in KNOWN_ENV and not k.startswith(_SCRUBBED_PREFIXES)
    }
    return {**env, **BASE_ENV, **tuning_env}


@dataclass(frozen=True)
class RunOutcome:
    """How one payload process ended, and what it wrote."""

    returncode: int
    result: dict[str, Any] | None
    stderr: str
    wall_s: float
    timed_out: bool = False

    @property
    def stderr_tail(self) -> str:
        return pip.tail(self.stderr, STDERR_TAIL_LINES)


class RuntimeEnv(ABC):
    """A place where one wheel is installed and the payload runs, one fresh process per run."""

    kind: ClassVar[str]

    def __init__(self, artifact: Artifact) -> None:
        self.artifact = artifact

    @abstractmethod
    def prepare(self) -> bool:
        """Install the wheel if that was not done before; True if anything was installed."""

    @abstractmethod
    def run(
        self,
        config: Mapping[str, Any],
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
    ) -> RunOutcome:
        """Run the payload with `config` in a fresh process; `env` is the tuning's variables."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What to record about this runtime in results."""


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
    ) -> None:
        super().__init__(artifact)
        self.settings = settings
        self.python = python or interpreter_for(artifact)
        base = getattr(sys, "_base_executable", sys.executable)
        identity = {
            "python": sys.version if self.python == sys.executable else self.python,
            "base": os.path.realpath(base if self.python == sys.executable else self.python),
            "wheel": artifact.sha256,
            "constraints": sorted(artifact.constraints),
            "index": pip.index_options(settings),
        }
        if artifact.extras:
            identity["extras"] = sorted(artifact.extras)
        self.key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]
        self.path = cache_dir / "venvs" / self.key
        self.interpreter = self.path / "bin" / "python"

    def _ready(self) -> bool:
        """The venv was completed for this key and its scripts still point into it."""
        marker = self.path / READY_MARKER
        try:
            recorded = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        if recorded.get("key") != self.key or not self.interpreter.exists():
            return False
        # bin/pip runs through its shebang: a moved or half-deleted venv fails here.
        try:
            check = subprocess.run(
                [str(self.path / "bin" / "pip"), "--version"],
                capture_output=True, text=True, check=False, timeout=120,
            )  # fmt: skip
        except OSError:  # no bin/pip, or its shebang names an interpreter that is gone
            return False
        return check.returncode == 0 and str(self.path) in check.stdout

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
        config: Mapping[str, Any],
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
    ) -> RunOutcome:
        if not self.interpreter.exists():
            raise InstallError(f"runtime {self.path} is not prepared")
        pinned = {**config, "cpus": list(cpus) if cpus else None}
        return run_payload([str(self.interpreter), str(PAYLOAD)], pinned, local_env(env), timeout)

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": str(self.path),
            "python": sys.version.split()[0],
            "wheel": self.artifact.wheel.name,
            "sha256": self.artifact.sha256,
        }


def run_payload(
    argv: Sequence[str],
    config: Mapping[str, Any],
    env: Mapping[str, str],
    timeout: float,
) -> RunOutcome:
    """Run ``argv + [CONFIG, RESULT]`` and collect the result file and the stderr tail."""
    with tempfile.TemporaryDirectory(prefix="tfbuild-run-") as tmp:
        config_path, result_path, stderr_path = (
            Path(tmp) / "config.json",
            Path(tmp) / "result.json",
            Path(tmp) / "stderr.txt",
        )
        config_path.write_text(json.dumps(config), encoding="utf-8")
        started = time.perf_counter()
        timed_out = False
        with stderr_path.open("wb") as stderr:
            proc = subprocess.Popen(
                [*argv, str(config_path), str(result_path)],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env=dict(env),
            )
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                proc.kill()
                proc.wait()
            except BaseException:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                raise
        wall = time.perf_counter() - started
        result = None
        if result_path.exists():
            try:
                result = json.loads(result_path.read_text(encoding="utf-8"))
            except ValueError:
                result = None
        return RunOutcome(
            returncode=proc.returncode,
            result=result,
            stderr=stderr_path.read_text(encoding="utf-8", errors="replace"),
            wall_s=wall,
            timed_out=timed_out,
        )


def runtime_kind(variant: Variant, choice: str, engine_reachable: bool) -> str:
    """Which runtime a variant gets: --runtime wins, then the variant's own `runtime` key.

    ``auto`` means docker for source builds when an engine is reachable, else local.
    """
    wanted = choice if choice != "auto" else variant.runtime
    if wanted == "auto":
        wanted = "docker" if variant.needs_build and engine_reachable else "local"
    if wanted == "docker" and not engine_reachable:
        raise EngineUnavailable(
            f"variant {variant.name!r} runs in Docker but no engine is reachable "
            "(start dockerd, set DOCKER_HOST, or pass --runtime local)"
        )
    return wanted
