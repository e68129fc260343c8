"""What a bench session is asked to do (SessionOptions) and where it reads and writes
(Workspace): set once by the command, read by every part of the session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.bench.workload import WORKLOAD_BENCHMARKS, payload_spec
from tfbuild.config.model import SuiteSettings
from tfbuild.config.values import AS_GIVEN, TIMEOUT_S
from tfbuild.results.model import DEFAULT_PROCESSES, ConfigEntry, ProcessPath, Workload
from tfbuild.runtime.records import PayloadConfig
from tfbuild.store import WheelStore


@dataclass(frozen=True, kw_only=True)
class SessionOptions:
    suite: SuiteSettings
    preset: str | None = None
    seed: int | None = None
    cpus: tuple[int, ...] | None = None
    runtime: str = "auto"
    timeout: float = TIMEOUT_S
    refresh: bool = False
    argv: tuple[str, ...] = ()
    force: bool = False
    """Install and run wheels even when the audit says they cannot run here."""
    container_cpus: float | None = None
    """--cpus for benchmark containers (Docker runtime)."""
    memory: str | None = None
    """Memory limit for benchmark containers, e.g. 8g (Docker runtime)."""
    host_key: str | None = None
    """The machine class the results are compared as (--host-key); None: from the host."""
    workload: Workload | None = None
    """The user's own model (`--workload`), measured with or instead of the suite."""
    processes: ProcessPath = DEFAULT_PROCESSES
    """How each benchmark process starts: fresh, or forked from its config's zygote."""
    weights: Mapping[str, float] = field(default_factory=dict)
    """benchmark -> its weight in the overall speed the session decides on (--weight)."""
    build_failures: Mapping[str, str] = field(default_factory=dict)
    """Variants whose build failed just before the session (`tfbuild run`), with the build's
    message: recorded as failed at their build, not as missing a wheel."""


@dataclass(frozen=True, kw_only=True)
class Workspace:
    """Where a session reads and writes: the wheel store, the runtime cache, results."""

    store: WheelStore
    cache_dir: Path
    results_dir: Path
    engine_reachable: bool


def payload_config(
    benchmarks: Sequence[str], config: ConfigEntry, workload: Workload | None = None
) -> PayloadConfig:
    """What the payload is told to run for a config: the suite's benchmarks, and the user's
    model when the session measures one."""
    return PayloadConfig(
        benchmarks=tuple(b for b in benchmarks if b not in WORKLOAD_BENCHMARKS),
        intra_op=config.intra_op,
        inter_op=config.inter_op,
        xla=config.xla,
        workload=None if workload is None else _with_form(payload_spec(workload), config.form),
    )


def _with_form(spec: dict[str, Any], form: str) -> dict[str, Any]:
    """The workload's spec, with the model form a config measures it in (none: as-given)."""
    return spec if form == AS_GIVEN else {**spec, "form": form}
