"""Benchmark processes forked from a zygote: a process of the config's runtime and environment
that has imported TensorFlow once (tfbuild/bench/zygote.py), instead of a new interpreter each.

A zygote serves one config (its tuning's environment is in force before TensorFlow starts, as
for a fresh process) and at most CHILDREN children: then the next process of that config gets a
new zygote, so a session's processes of a config come from several zygotes, each with its own
address-space layout, as fresh processes each have theirs. A zygote is started, and waited for
until it has imported TensorFlow, before the child is asked for: its import never runs beside
a measurement."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tfbuild import pip
from tfbuild.runtime.base import PAYLOAD, STDERR_TAIL_LINES, RunOutcome
from tfbuild.runtime.records import PayloadConfig

ZYGOTE = PAYLOAD.with_name("zygote.py")
"""The zygote's program, shipped beside the payload."""
CHILDREN = 5
"""Processes one zygote forks before the next process of its config gets a new one: a zygote's
memory layout is one draw shared by its children, so a config's processes must come from
several (a session of 10 rounds: 2 zygotes per config), and each new zygote costs an import."""
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
            return self._child(config, timeout)
        except ZygoteGone as exc:
            return self._given_up(exc)

    def _given_up(self, exc: ZygoteGone) -> RunOutcome:
        """The asked-for process fails with the zygote's reason; the next process of the
        config gets a new zygote."""
        self.children = CHILDREN
        return RunOutcome(exc.status, None, f"{exc}\n{self.log()}", 0.0)

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


class Zygotes:
    """The zygotes of one runtime, one per config at a time (keyed by the caller), each used
    for CHILDREN processes, then replaced."""

    def __init__(self) -> None:
        self.live: dict[str, Zygote] = {}

    def get(self, key: str, make: Callable[[], Zygote]) -> Zygote:
        """The config's zygote; a new one (from `make()`) when it has none, or has served
        CHILDREN processes."""
        zygote = self.live.get(key)
        if zygote is not None and zygote.children >= CHILDREN:
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = self.live[key] = make()
        return zygote

    def close(self) -> None:
        while self.live:
            _, zygote = self.live.popitem()
            zygote.close()


def zygote_key(env: Mapping[str, str], cpus: Sequence[int] | None, label: str) -> str:
    """Which zygote a process may come from: the same config (its label), environment and
    CPUs."""
    return json.dumps([label, sorted(env.items()), list(cpus or ())])
