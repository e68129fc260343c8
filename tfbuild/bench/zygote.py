"""A benchmark process's parent that has already imported TensorFlow: it forks each benchmark
process instead of starting a new interpreter, so a process no longer pays the import.

Runs inside a runtime beside payload.py (standard library, numpy and tensorflow only; never
tfbuild):

    python zygote.py SOCKET [--watch-stdin]      # serve: import, then fork one child a request
    python zygote.py SOCKET --ask REQUEST_JSON   # a client: send one request, print the reply

The server imports payload, numpy and tensorflow and draws the inputs made with numpy alone,
runs no TensorFlow op (its thread pools start with the first op, so none exists to be lost in a
fork), then listens on a Unix socket. A
request is one JSON line (``{"ping": true}`` is answered at once): the payload's CONFIG and
RESULT paths, a file for the child's stderr and a timeout. For each it forks a child that
runs ``payload.main`` exactly as ``python payload.py CONFIG RESULT`` would, kills it at the
timeout, and answers one JSON line: the child's exit status (negative: killed by that
signal), whether it timed out, and its wall time.

The client form exists for runtimes tfbuild cannot reach a socket in (a container): the engine
runs it in the zygote's container and returns what it prints. With --watch-stdin the server
exits when its standard input closes (tfbuild, its parent, is gone).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys
import time
import traceback
from pathlib import Path

CONNECT_S = 600.0
"""How long a client waits for the server to listen (it may still be importing TensorFlow)."""


def _child(request: dict[str, object]) -> None:
    """In the forked child: the payload, then exit without the interpreter's teardown."""
    code = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)
        err = os.open(str(request["stderr"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(err, 2)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        import payload  # type: ignore[import-not-found]  # beside this file

        code = payload.main(["payload.py", str(request["config"]), str(request["result"])])
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _wait(pid: int, timeout: float) -> tuple[int, bool]:
    """The child's exit status, and whether it was killed at the timeout."""
    deadline = time.monotonic() + timeout
    try:
        handle = os.pidfd_open(pid)
    except (AttributeError, OSError):  # before Linux 5.3: poll
        handle = None
    timed_out = False
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), timed_out
        left = deadline - time.monotonic()
        if left <= 0 and not timed_out:
            os.kill(pid, signal.SIGKILL)
            timed_out = True
            continue
        if handle is not None:
            select.select([handle], [], [], max(left, 0.05))
        else:
            time.sleep(0.005)


def serve(path: str, watch_stdin: bool) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import numpy  # imported once here: what every child is spared
    import payload
    import tensorflow  # noqa: F401

    payload.draw_inputs(numpy)
    # No gc.freeze(): a child's first full collection writes to the pages of the heap it
    # inherited, so each child gets its own copies, as a fresh process has its own. Frozen, the
    # children of a zygote kept sharing them and resembled each other in most benchmarks
    # (scripts/process-cost's zygote test), where unfrozen they are as alike as fresh ones.

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    partial = f"{path}.{os.getpid()}"
    listener.bind(partial)
    listener.listen(1)
    Path(partial).replace(path)  # a client sees the socket only once it is listened on
    watched = [listener, sys.stdin] if watch_stdin else [listener]
    while True:
        ready, _, _ = select.select(watched, [], [])
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 4096):
            return 0
        if listener not in ready:
            continue
        conn, _ = listener.accept()
        with conn:
            line = conn.makefile("rb").readline()
            if not line:
                continue
            request = json.loads(line)
            if request.get("ping"):  # the client waits for this answer until the import is done
                conn.sendall(b'{"ready": true}\n')
                continue
            started = time.perf_counter()
            pid = os.fork()
            if pid == 0:
                listener.close()
                conn.close()
                _child(request)
            status, timed_out = _wait(pid, float(request["timeout"]))
            reply = {
                "status": status,
                "timed_out": timed_out,
                "wall_s": time.perf_counter() - started,
            }
            conn.sendall((json.dumps(reply) + "\n").encode())


def ask(path: str, request: str) -> int:
    deadline = time.monotonic() + CONNECT_S
    while True:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            client.connect(path)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            client.close()
            if time.monotonic() > deadline:
                print(json.dumps({"error": f"no zygote listens on {path}"}))
                return 2
            time.sleep(0.02)
    with client:
        client.sendall(request.encode().rstrip(b"\n") + b"\n")
        reply = client.makefile("rb").readline()
    sys.stdout.write(reply.decode() or json.dumps({"error": "the zygote closed the connection"}))
    return 0 if reply else 2


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[2] == "--ask":
        return ask(argv[1], argv[3])
    return serve(argv[1], "--watch-stdin" in argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
