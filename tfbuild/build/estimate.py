"""How long a source build will take on the machine that runs it, and how much memory bazel's
jobs need there, said before any build starts.

The model (docs/reference.md, "Build estimates", gives its sources):
- a TensorFlow CPU wheel is about TF_ACTIONS bazel targets, and a core builds about
  ACTIONS_PER_CORE_MINUTE of them a minute: one build got through 11,286 of its 33,563 in
  5 h 56 min on a 2-vCPU runner, bazel running one job per core (numerator and denominator
  from the same build, so the model's hours are that build's, scaled by cores);
- each job needs about GIB_PER_JOB of memory, and bazel's server BAZEL_SERVER_GIB more;
- a previous build of the same variant in the store is the better guide: its recorded time,
  scaled by the cores of the machine that made it;
- a remote executor runs REMOTE_JOBS jobs at once; a remote cache that holds this recipe's
  outputs makes the build a download, which the model cannot know: it says so.
CUDA builds compile far more (every kernel for every compute capability): the CPU figure is a
floor for them, and the estimate says so.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tfbuild.machine.profile import HostProfile
from tfbuild.store import Manifest
from tfbuild.wording import duration

TF_ACTIONS = 33_563
"""Targets configured in a TensorFlow CPU wheel build (tensorflow#48421, April 2021: "only
11,286 compiled target on an estimate of 33563 targets configured")."""
OBSERVED_ACTIONS = 11_286
OBSERVED_MINUTES = 5 * 60 + 56
OBSERVED_CORES = 2
"""GitHub's hosted runners then: Azure Standard_DS2_v2, 2 vCPUs and 7 GB (the same thread)."""
ACTIONS_PER_CORE_MINUTE = OBSERVED_ACTIONS / (OBSERVED_MINUTES * OBSERVED_CORES)
"""About 15.9: what that 2-vCPU runner did before its 6-hour limit stopped it."""
GIB_PER_JOB = 2.0
"""TensorFlow's install guide: "Building TensorFlow from source can use a lot of RAM ... limit
Bazel's RAM usage with --local_ram_resources=2048"; tensorflow#42066: 6 jobs ran out of 10 GB."""
BAZEL_SERVER_GIB = 2.0
"""bazel's own Java server, beside its jobs."""
REMOTE_JOBS = 200
"""What a remote executor is assumed to run at once (TensorFlow's release builds use 800)."""


@dataclass(frozen=True)
class BuildEstimate:
    """One build's estimate on the machine that runs it."""

    variant: str
    seconds: float
    basis: str
    """How it was reached: "model" (TF_ACTIONS at the per-core rate), "previous build",
    "remote executor"."""
    jobs: int
    memory_gib: float
    """What bazel's jobs and its server need at once."""
    available_gib: float | None
    cuda: bool = False
    remote_cache: bool = False

    @property
    def enough_memory(self) -> bool | None:
        return None if self.available_gib is None else self.memory_gib <= self.available_gib

    def describe(self) -> str:
        """ "about 18 h (2 cores, the model, cold cache); bazel's 2 jobs need about 6 GiB of the
        24 GiB here"."""
        how = {
            "model": f"{self.jobs} cores, "
            + (
                "less as far as the remote cache holds this recipe's outputs"
                if self.remote_cache
                else "no cache of this recipe"
            ),
            "previous build": "its previous build, scaled to these cores",
            "remote executor": f"a remote executor at {self.jobs} jobs",
        }[self.basis]
        said = f"about {rough(self.seconds)}{' or more (CUDA)' if self.cuda else ''} ({how})"
        if self.basis == "remote executor":
            return said
        memory = f"bazel's {self.jobs} jobs need about {self.memory_gib:.0f} GiB"
        if self.available_gib is None:
            return f"{said}; {memory}"
        if self.enough_memory:
            return f"{said}; {memory} of the {self.available_gib:.0f} GiB here"
        jobs = max(1, math.floor((self.available_gib - BAZEL_SERVER_GIB) / GIB_PER_JOB))
        return (
            f"{said}; {memory} and this machine has {self.available_gib:.0f} GiB: expect the "
            f"build to be killed unless bazel runs at most {jobs} (--jobs={jobs} in the "
            "matrix's bazel flags)"
        )


def rough(seconds: float) -> str:
    """A span no finer than the model knows it: whole hours from 5 h, tens of minutes from 1 h,
    and nothing finer than a minute."""
    if seconds >= 5 * 3600:
        return duration(round(seconds / 3600) * 3600)
    if seconds >= 3600:
        return duration(round(seconds / 600) * 600)
    return "under a minute" if seconds < 60 else duration(seconds)


def _cores(host: HostProfile) -> int:
    topology = host.topology
    return max(1, topology.usable_cpus or topology.logical_cpus)


def _memory_gib(host: HostProfile) -> float | None:
    memory = host.memory
    if memory is None:
        return None
    sizes = [b for b in (memory.total_bytes, memory.cgroup_limit_bytes) if b]
    return min(sizes) / 2**30 if sizes else None


def estimate(
    variant: str,
    host: HostProfile,
    previous: Manifest | None = None,
    remote_executor: bool = False,
    cuda: bool = False,
    remote_cache: bool = False,
) -> BuildEstimate:
    """The estimate for building `variant` on `host` (the engine's machine). `previous` is the
    variant's manifest in the store, when it was built before: its `build_seconds` on its
    `builder_host` are scaled by cores."""
    cores = _cores(host)
    available = _memory_gib(host)
    memory = BAZEL_SERVER_GIB + GIB_PER_JOB * cores
    if remote_executor:
        minutes = TF_ACTIONS / (ACTIONS_PER_CORE_MINUTE * REMOTE_JOBS)
        return BuildEstimate(variant, minutes * 60, "remote executor", REMOTE_JOBS,
                             BAZEL_SERVER_GIB, available, cuda)  # fmt: skip
    built = previous.build if previous is not None else None
    if built is not None and built.build_seconds:
        seconds = built.build_seconds * (built.builder_cpus or cores) / cores
        return BuildEstimate(variant, seconds, "previous build", cores, memory, available, cuda)
    minutes = TF_ACTIONS / (ACTIONS_PER_CORE_MINUTE * cores)
    return BuildEstimate(
        variant, minutes * 60, "model", cores, memory, available, cuda, remote_cache
    )


_PROGRESS = re.compile(r"^\[(\d[\d,]*) / (\d[\d,]*)\]")
_ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r")


def plain(line: str) -> str:
    """A log line without terminal escapes (colours, cursor moves) and carriage returns."""
    return _ESCAPE.sub("", line)


class BazelProgress:
    """bazel's own progress lines ("[1,234 / 33,563] Compiling ...": actions done of those
    known so far) turned into a line a person reads, with an ETA from the rate since the first
    one. The total grows while bazel discovers actions, so the ETA is a floor early on."""

    def __init__(self) -> None:
        self.first: tuple[float, int] | None = None
        self.done = self.total = 0

    def update(self, line: str, now: float) -> str | None:
        """The progress line for `line` at time `now` (seconds), None if it is not bazel's."""
        found = _PROGRESS.match(plain(line).lstrip())
        if not found:
            return None
        done, total = (int(g.replace(",", "")) for g in found.groups())
        self.done, self.total = done, total
        if self.first is None or done < self.first[1]:
            self.first = (now, done)
        said = f"bazel {done:,} of {total:,} actions ({done / max(total, 1):.0%})"
        started, at_first = self.first
        if at_first < done < total and now > started:  # nothing is left to time at 100 %
            rate = (done - at_first) / (now - started)
            said += f", about {rough((total - done) / rate)} left"
        return said
