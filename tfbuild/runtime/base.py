"""Runtimes: where a TensorFlow wheel is installed and the benchmark payload runs.

``RuntimeEnv`` is the interface; ``LocalVenv`` (tfbuild.runtime.venv: one cached venv per wheel
and constraint set) is the embedded default, and ``DockerRuntime`` (tfbuild.runtime.container: an
image per wheel, benchmark containers without network) runs where a Docker engine is reachable
and the variant asks for it. Every run is a fresh process, or one forked from a zygote
of its config that has imported TensorFlow (tfbuild.runtime.forked)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from tfbuild import pip
from tfbuild.config.values import KNOWN_ENV
from tfbuild.jsonrecords import record
from tfbuild.runtime.records import InstalledPackage, PayloadConfig, RuntimeRecord
from tfbuild.store import Artifact

PAYLOAD = Path(__file__).resolve().parent.parent / "bench" / "payload.py"
"""The benchmark payload: a file shipped into the runtime; it never imports tfbuild."""
WORKLOAD_PAYLOAD = PAYLOAD.with_name("workload_payload.py")
"""The payload's part that runs the user's own model, shipped beside it."""
WORKLOAD_FORMS = PAYLOAD.with_name("workload_forms.py")
"""The other forms of a SavedModel workload, imported by workload_payload.py beside it."""
STDERR_TAIL_LINES = 30
# Fixed for every benchmark process, in every runtime.
BASE_ENV = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
# Variables that change how TensorFlow or its thread pools behave: never inherited from the
# caller's shell, only set by a tuning.
_SCRUBBED_PREFIXES = ("OMP_", "KMP_", "MKL_", "TF_", "ONEDNN_", "DNNL_", "PYTHON", "GOMP_")


def workload_files(spec: Mapping[str, Any], folder: str) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The files of a workload (its model, and its inputs; a script under its own name, with
    its FILES beside it as they are beside it here) to ship into a runtime under `folder`, and
    the payload's spec with its paths relative to where they are shipped."""
    files: dict[str, bytes] = {}
    moved = dict(spec)
    for key, name in (("path", "model"), ("inputs", "inputs.npz")):
        if not spec.get(key):
            continue
        source = Path(spec[key])
        script = key == "path" and spec.get("kind") == "script"
        target = f"{folder}/" + (source.name if script else name)
        if key == "path" and not script:
            target += source.suffix
        _add(files, source, target)
        for beside in (spec.get("files") or ()) if script else ():
            _add(files, source.parent / beside, f"{folder}/{beside}")
        moved[key] = target
    return files, moved


def _add(files: dict[str, bytes], source: Path, target: str) -> None:
    """A file, or a folder's files, into `files` under `target`."""
    if source.is_dir():
        for f in sorted(p for p in source.rglob("*") if p.is_file()):
            files[f"{target.rstrip('/')}/{f.relative_to(source).as_posix()}"] = f.read_bytes()
    else:
        files[target] = source.read_bytes()


def installed_packages(
    report: bytes | str | None, artifact: Artifact
) -> tuple[InstalledPackage, ...]:
    """What pip installed into a runtime, from the install report it left there (none when
    there is no report, or it cannot be read). The artifact's wheel, a local file, has the
    sha256 the store knows where pip's report gives none (pip before 23.1 hashes no local
    file)."""
    try:
        made = pip.installed(json.loads(report)) if report else []
    except (ValueError, KeyError, TypeError, AttributeError):
        return ()
    for p in made:
        if p["file"] == artifact.wheel.name:
            p["sha256"] = p["sha256"] or artifact.sha256
    return tuple(record(InstalledPackage, p) for p in made)


def traces_name(jit: bool) -> str:
    """The saved training steps' folder (or volume) name: the payload's code that traced them
    (any change saves them again) and the XLA mode."""
    return f"{hashlib.sha256(PAYLOAD.read_bytes()).hexdigest()[:12]}-{'jit' if jit else 'graph'}"


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
    zygote: str | None = None
    """The zygote the process was forked from (its id); None for a fresh process."""

    @property
    def stderr_tail(self) -> str:
        return pip.tail(self.stderr, STDERR_TAIL_LINES)


class RuntimeEnv(ABC):
    """A place where one wheel is installed and the payload runs, one fresh process per run."""

    kind: ClassVar[str]

    def __init__(self, artifact: Artifact) -> None:
        self.artifact = artifact
        self._traces: dict[bool, str] = {}

    @abstractmethod
    def prepare(self) -> bool:
        """Install the wheel if that was not done before; True if anything was installed."""

    @abstractmethod
    def run(
        self,
        config: PayloadConfig,
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
        zygote: str | None = None,
        live: int | None = None,
    ) -> RunOutcome:
        """Run the payload with `config`, pinned to `cpus`, in a fresh process; `env` is the
        tuning's variables. With `zygote` (the config's name), the process is forked from one
        of that config's `live` zygotes instead (tfbuild.runtime.forked.LIVE when None)."""

    @abstractmethod
    def close(self) -> None:
        """Stop what the runtime keeps between processes (its zygotes)."""

    def traces(self, jit: bool) -> str:
        """Where this build's saved training steps are (for `xla: jit` or not), as its
        processes see the folder: saved with the build's own TensorFlow the first time they
        are asked for, and kept with the runtime."""
        if jit not in self._traces:
            self._traces[jit] = self._save_traces(jit)
        return self._traces[jit]

    @abstractmethod
    def _save_traces(self, jit: bool) -> str:
        """Save the training steps (payload.py --save-traces) unless saved before; where."""

    def with_traces(self, config: PayloadConfig) -> PayloadConfig:
        """A benchmark process's configuration with the folder of its saved training steps."""
        if config.smoke_test or config.traces is not None or not config.trains:
            return config
        return replace(config, traces=self.traces(config.xla == "jit"))

    @abstractmethod
    def describe(self) -> RuntimeRecord:
        """What to record about this runtime in results."""


def run_payload(
    argv: Sequence[str],
    config: PayloadConfig,
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
        config_path.write_text(json.dumps(config.to_json()), encoding="utf-8")
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
