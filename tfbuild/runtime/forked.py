"""Benchmark processes forked from a zygote: a process of the config's runtime and environment
that has imported TensorFlow once (tfbuild/bench/zygote.py), instead of a new interpreter each.

A zygote serves one config (its tuning's environment is in force before TensorFlow starts, as
for a fresh process) and at most CHILDREN children, then is replaced. Each config has LIVE
zygotes alive at once and its processes come from them in turns, each cycle in a random order
(`Turns`): a config's consecutive processes come from different zygotes,
so a zygote's own level, which its children share, is spread over the session's rounds instead
of lining up with a run of them, and a session's first rounds already hold several zygotes of
each config. Every process records the zygote it came from, and the analysis estimates how alike
a zygote's children are from the session itself (tfbuild.analysis.zygotes). A zygote is
started, and waited for until it has imported TensorFlow, before the child is asked for: its
import never runs beside a measurement."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tfbuild import pip
from tfbuild.runtime.base import PAYLOAD, STDERR_TAIL_LINES, RunOutcome
from tfbuild.runtime.records import PayloadConfig

ZYGOTE = PAYLOAD.with_name("zygote.py")
"""The zygote's program, shipped beside the payload."""
CHILDREN = 3
"""Processes one zygote forks before it is replaced: a zygote's memory layout is one draw shared
by its children, so a config's processes must come from several, and each new zygote costs an
import."""
LIVE = 3
"""Zygotes of one config alive at once, its processes drawn from them in turns (`Turns`), where
the machine's memory allows it (`live_zygotes`)."""
ZYGOTE_BYTES = 400 * 2**20
"""What one zygote is taken to hold of the machine's memory (a zygote of tensorflow-cpu 2.21
measured 250 MB proportional set size, its shared libraries aside)."""
START_S = 600.0
"""How long a zygote may take to import TensorFlow."""
GRACE_S = 60.0
"""Beyond a process's timeout (the zygote kills the child at it), how long tfbuild waits for
the zygote's answer before it gives the zygote up."""


class ZygoteGone(Exception):
    """The zygote did not answer: it failed to start, or died (`status`: how it ended, as a
    process's exit status; negative, killed by that signal)."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class Zygote(ABC):
    """One config's zygote in a runtime."""

    def __init__(self) -> None:
        self.children = 0
        self.started = False
        self.id = uuid.uuid4().hex[:12]
        """Which zygote this is, as each of its children's records say."""

    @abstractmethod
    def _start(self) -> None:
        """Start the zygote's process (it imports TensorFlow, then listens)."""

    @abstractmethod
    def _ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        """Send one request, return the reply; ZygoteGone when there is none."""

    @abstractmethod
    def _child(self, config: PayloadConfig, timeout: float) -> RunOutcome:
        """Ask for one benchmark process with `config` and collect what it wrote."""

    @abstractmethod
    def log(self) -> str:
        """What the zygote itself wrote on stderr."""

    @abstractmethod
    def close(self) -> None:
        """Stop the zygote and anything it forked."""

    def run(self, config: PayloadConfig, timeout: float) -> RunOutcome:
        """One benchmark process forked from this zygote (started first if it is not)."""
        if not self.started:
            self._start()
            self.started = True
            try:
                self._ask({"ping": True}, START_S)
            except ZygoteGone as exc:
                return self._given_up(exc)
        self.children += 1
        try:
            return dataclasses.replace(self._child(config, timeout), zygote=self.id)
        except ZygoteGone as exc:
            return self._given_up(exc)

    def _given_up(self, exc: ZygoteGone) -> RunOutcome:
        """The asked-for process fails with the zygote's reason; the zygote is replaced."""
        self.children = CHILDREN
        return RunOutcome(exc.status, None, f"{exc}\n{self.log()}", 0.0, zygote=self.id)

    def request(self, config: str, result: str, stderr: str, timeout: float) -> dict[str, Any]:
        """A benchmark process's request, as zygote.py reads it."""
        return {"config": config, "result": result, "stderr": stderr, "timeout": timeout}


def outcome(reply: Mapping[str, Any], result: bytes | None, stderr: str, wall: float) -> RunOutcome:
    """A forked process's outcome from the zygote's answer and the files the child wrote;
    `wall` is the time tfbuild waited for it (from handing in its config to reading its
    result), as the wall time of a fresh process is."""
    data = None
    if result is not None:
        try:
            data = json.loads(result)
        except ValueError:
            data = None
    return RunOutcome(
        returncode=int(reply["status"]),
        result=data,
        stderr=stderr,
        wall_s=wall,
        timed_out=bool(reply["timed_out"]),
    )


class LocalZygote(Zygote):
    """A zygote in a local venv: its own process group, reached through a Unix socket in a
    temporary folder; it exits when tfbuild closes its standard input (or dies)."""

    def __init__(self, interpreter: Path, env: Mapping[str, str]) -> None:
        super().__init__()
        self.interpreter = interpreter
        self.env = dict(env)
        self.folder = Path(tempfile.mkdtemp(prefix="tfbuild-zygote-"))
        self.socket = self.folder / "zygote.sock"
        self.stderr = self.folder / "zygote.stderr"
        self.proc: subprocess.Popen[bytes] | None = None

    def _start(self) -> None:
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen(
                [str(self.interpreter), str(ZYGOTE), str(self.socket), "--watch-stdin"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, env=self.env,
                start_new_session=True,  # its group is killed as one when tfbuild closes it
            )  # fmt: skip

    def _ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            while True:
                try:
                    conn.connect(str(self.socket))
                    break
                except (FileNotFoundError, ConnectionRefusedError) as exc:
                    if self.proc.poll() is not None:
                        code = self.proc.returncode
                        raise ZygoteGone(f"the zygote exited ({code})", code) from exc
                    if time.monotonic() > deadline:
                        raise ZygoteGone(f"the zygote did not listen in {timeout:.0f} s") from exc
                    time.sleep(0.02)
            conn.settimeout(max(1.0, deadline - time.monotonic()))
            try:
                conn.sendall((json.dumps(request) + "\n").encode())
                line = conn.makefile("rb").readline()
            except OSError as exc:
                raise ZygoteGone(f"the zygote did not answer ({exc})", self._ended()) from exc
        if not line:
            raise ZygoteGone("the zygote closed the connection", self._ended())
        reply: dict[str, Any] = json.loads(line)
        return reply

    def _ended(self) -> int:
        """How the zygote ended (waited for briefly), or SIGKILL's status if it has not."""
        assert self.proc is not None
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return -int(signal.SIGKILL)

    def _child(self, config: PayloadConfig, timeout: float) -> RunOutcome:
        with tempfile.TemporaryDirectory(prefix="tfbuild-run-") as tmp:
            paths = [Path(tmp) / name for name in ("config.json", "result.json", "stderr.txt")]
            config_path, result_path, stderr_path = paths
            started = time.perf_counter()
            config_path.write_text(json.dumps(config.to_json()), encoding="utf-8")
            request = self.request(str(config_path), str(result_path), str(stderr_path), timeout)
            reply = self._ask(request, timeout + GRACE_S)
            result = result_path.read_bytes() if result_path.exists() else None
            stderr = (
                stderr_path.read_text(encoding="utf-8", errors="replace")
                if stderr_path.exists()
                else ""
            )
        return outcome(reply, result, stderr, time.perf_counter() - started)

    def log(self) -> str:
        try:
            text = self.stderr.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return pip.tail(text, STDERR_TAIL_LINES)

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            self.proc = None
        pip.remove_tree(self.folder)


def live_zygotes(configs: int, available: int | None) -> int:
    """How many zygotes each of `configs` keeps alive at once: LIVE, or fewer (one at least)
    where LIVE of every config would take more than half of the `available` memory."""
    if available is None or configs <= 0:
        return LIVE
    return max(1, min(LIVE, available // 2 // (configs * ZYGOTE_BYTES)))


class Turns:
    """Which of a config's `live` zygotes forks its next process: each cycle visits every one of
    them once, in an order drawn at random, never beginning with the one the cycle before
    ended with. So a zygote's children are spread over the session's rounds, one a cycle, never
    two in a row; a zygote that has served CHILDREN is replaced at its next turn, and all of
    them in step, a generation every CHILDREN cycles."""

    def __init__(self, live: int, rng: random.Random) -> None:
        self.live = live
        self.rng = rng
        self.left: list[int] = []
        self.last: int | None = None

    def next(self) -> int:
        if not self.left:
            self.left = list(range(self.live))
            self.rng.shuffle(self.left)
            if self.live > 1 and self.left[0] == self.last:
                self.left.append(self.left.pop(0))
        self.last = self.left.pop(0)
        return self.last


class Zygotes:
    """The zygotes of one runtime, up to LIVE per config (keyed by the caller), each used for
    CHILDREN processes, then replaced."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.live: dict[str, list[Zygote | None]] = {}
        self.turns: dict[str, Turns] = {}
        self.rng = rng or random.Random()

    def get(self, key: str, make: Callable[[], Zygote], live: int | None = None) -> Zygote:
        """The zygote of the config's next process: one of its `live` (LIVE when None), in
        turns (`Turns`), a new one (from `make()`) where that one has served CHILDREN processes,
        or has not been made yet."""
        slots = self.live.setdefault(key, [None] * (live or LIVE))
        slot = self.turns.setdefault(key, Turns(len(slots), self.rng)).next()
        zygote = slots[slot]
        if zygote is not None and zygote.children >= CHILDREN:
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = slots[slot] = make()
        return zygote

    def close(self) -> None:
        while self.live:
            _, slots = self.live.popitem()
            for zygote in filter(None, slots):
                zygote.close()


def zygote_key(env: Mapping[str, str], cpus: Sequence[int] | None, label: str) -> str:
    """Which zygote a process may come from: the same config (its label), environment and
    CPUs."""
    return json.dumps([label, sorted(env.items()), list(cpus or ())])
