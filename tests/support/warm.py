"""`python -m tfbuild ARGS` without paying, each time, for the interpreter's start and tfbuild's
imports (0.3-0.5 CPU-s of a unit test's typical 0.5 s call): a server process per test process
imports tfbuild's modules once (not the scripts it ships into runtimes) and the libraries its
commands import as they run, then forks one child per command. The child is the
command as a new interpreter runs it: its own process, working directory, environment,
standard input (/dev/null), output and error (files the caller reads as subprocess.run's
text mode reads its pipes), sys.argv, exit status (a signal's as -N), and the interpreter's
own shutdown (atexit, non-daemon threads). What it cannot be: a command with another
PYTHONPATH than the server's, whose imports would differ (support.cli runs those in a new
interpreter), and state an import sets from the environment, which tfbuild's modules do not
read at import (test_warm.py checks commands give byte-identical results both ways).

The server imports nothing but tfbuild.cli and starts no thread, so forking it is safe; it
ends when the test process does (its request pipe closes)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SERVER = r"""
import json, os, sys

import atexit, importlib, pkgutil, threading

import tfbuild
import tfbuild.cli  # what `python -m tfbuild` imports before it reads its arguments

# and what its commands import when they run (imports only: nothing is called)
RUNTIME_SCRIPTS = {"payload", "zygote", "workload_payload", "workload_forms", "__main__"}
for found in pkgutil.walk_packages(tfbuild.__path__, "tfbuild."):
    if found.name.rpartition(".")[2] not in RUNTIME_SCRIPTS:
        importlib.import_module(found.name)
for name in ("docker", "docker.errors", "docker.types", "requests.exceptions", "iced_x86",
             "fastjsonschema"):
    importlib.import_module(name)

requests, replies = os.fdopen(os.dup(0), "r"), os.dup(1)
devnull = os.open(os.devnull, os.O_RDWR)
os.dup2(devnull, 0)
os.dup2(devnull, 1)


def serve():
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            requests.close()
            os.close(replies)
            return request
        os.write(replies, f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        os.write(replies, f"{os.waitstatus_to_exitcode(status)}\n".encode())
    sys.exit(0)


request = serve()
os.chdir(request["cwd"])
os.environ.clear()
os.environ.update(request["env"])
# The one setting a tfbuild module reads from the environment as it is imported (a class
# attribute), read again from this command's.
tfbuild.cli.options.Flags.debug = bool(os.environ.get("TFBUILD_DEBUG"))
for fd, path in ((1, request["out"]), (2, request["err"])):
    opened = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(opened, fd)
    os.close(opened)
os.close(devnull)
sys.argv = [os.path.join(os.path.dirname(tfbuild.__file__), "__main__.py"), *request["args"]]
try:
    tfbuild.cli.main(request["args"])
    code = 0
except SystemExit as stop:
    code = stop.code if isinstance(stop.code, int) else 0 if stop.code is None else 1
    if not isinstance(stop.code, (int, type(None))):
        print(stop.code, file=sys.stderr)
# The interpreter's shutdown as far as a command can see it (non-daemon threads joined, atexit
# handlers, the standard streams flushed), without tearing down every module of the server.
threading._shutdown()
atexit._run_exitfuncs()
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
"""


class Server:
    """One server process, started on first use, one command at a time."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()

    def _started(self) -> subprocess.Popen[bytes]:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                bufsize=0,
                cwd=tempfile.gettempdir(),  # imports the installed tfbuild, not a cwd's
            )
        return self.proc

    def run(
        self, args: list[str], cwd: Path | None, env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str] | None:
        """The command's result, or None when the server is busy with another thread's."""
        if not self.lock.acquire(blocking=False):
            return None
        try:
            return self._run(args, cwd, env, timeout)
        finally:
            self.lock.release()

    def _run(
        self, args: list[str], cwd: Path | None, env: dict[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        proc = self._started()
        assert proc.stdin is not None and proc.stdout is not None
        replies = proc.stdout.fileno()
        command = [sys.executable, "-m", "tfbuild", *args]
        with tempfile.TemporaryDirectory(prefix="tfbuild-warm-") as folder:
            out, err = Path(folder) / "out", Path(folder) / "err"
            request = {"args": args, "cwd": str(cwd or Path.cwd()), "env": env,
                       "out": str(out), "err": str(err)}  # fmt: skip
            try:
                proc.stdin.write((json.dumps(request) + "\n").encode())
                proc.stdin.flush()
                pid = int(_line(replies, None))
            except (OSError, ValueError, RuntimeError) as exc:  # the command never started
                self._discard()
                raise Unavailable(str(exc)) from exc
            try:
                code = int(_line(replies, time.monotonic() + timeout))
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
                    os.kill(pid, signal.SIGKILL)
                _line(replies, None)  # its exit status, once the server has reaped it: in step
                raise subprocess.TimeoutExpired(command, timeout, _read(out), _read(err)) from None
            except BaseException:  # out of step with the server: never used again
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
                self._discard()
                raise
            return subprocess.CompletedProcess(command, code, _read(out), _read(err))

    def _discard(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


class Unavailable(Exception):
    """The server could not take the command (it did not start, or ended): nothing ran."""


def _line(fd: int, deadline: float | None) -> str:
    """One line the server wrote (a pid, an exit status), by the deadline."""
    got = b""
    while not got.endswith(b"\n"):
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not select.select([fd], [], [], wait)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1)
        if not chunk:
            raise RuntimeError("the tfbuild server ended")
        got += chunk
    return got.decode()


def _read(path: Path) -> str:
    """As subprocess.run(text=True) decodes a pipe: the locale's encoding, universal newlines."""
    if not path.exists():
        return ""
    with path.open(encoding=None, newline=None) as fh:
        return fh.read()


SERVER_OF_THIS_PROCESS = Server()
