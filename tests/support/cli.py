"""tfbuild run as a user runs it: `python -m tfbuild` in a subprocess (forked from a warm
server, support/warm.py). With `plans_made`, the
subprocess also records every plan tfbuild makes (a spy on tfbuild.plan.make.make_plan, seen
through the interpreter's profile hook, so no import of it can escape)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

from support.env import TOY
from support.warm import SERVER_OF_THIS_PROCESS, Unavailable

RESULTS = TOY.parent / "results"
"""Committed results files: real sessions, and the golden outputs of `tfbuild compare`."""
EVERYDAY_SESSIONS = ("default-run-epyc.json.gz",)
"""The committed session a check made of every one runs on in the everyday subset, one that
answers "Use" (the others are marked slow: the whole suite runs them)."""


def committed_sessions() -> list[Any]:
    """Every committed session (not the calibration run) as a pytest parameter, those not in
    EVERYDAY_SESSIONS marked slow."""
    import pytest

    names = sorted(
        p.name
        for p in RESULTS.iterdir()
        if p.name.endswith((".json", ".json.gz")) and not p.name.startswith("calibration")
    )
    return [
        pytest.param(n, marks=() if n in EVERYDAY_SESSIONS else (pytest.mark.slow,), id=n)
        for n in names
    ]


def compare(*args: str, cwd: Path = RESULTS) -> subprocess.CompletedProcess[str]:
    """`tfbuild compare` on a 120-column terminal, run in the committed results' folder."""
    return run_tfbuild("compare", *args, cwd=cwd, env={"COLUMNS": "120"})


def environment(env: dict[str, str] | None) -> dict[str, str]:
    """This process's environment with `env` on top; without the terminal size a test runner
    may set (pytest-xdist's workers say 80 columns), so output is as piped unless `env` says."""
    inherited = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return {**inherited, **(env or {})}


def run_tfbuild(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the installed tfbuild as a user would (python -m tfbuild): forked from this test
    process's warm server (support/warm.py), or, with `fresh`, another PYTHONPATH, or the
    server busy with another thread's command, in a new interpreter."""
    full = environment(env)
    if not fresh and full.get("PYTHONPATH") == os.environ.get("PYTHONPATH"):
        try:
            done = SERVER_OF_THIS_PROCESS.run(list(args), cwd, full, timeout)
        except Unavailable:  # nothing ran: a new interpreter runs it (and says why it fails)
            done = None
        if done is not None:
            return done
    return subprocess.run(
        [sys.executable, "-m", "tfbuild", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full,
        timeout=timeout,
        check=False,
    )


def on_terminal(*args: str, columns: int = 200, timeout: float = 600) -> tuple[int, str]:
    """Run tfbuild with a terminal (a pseudo-terminal `columns` wide) as its standard input,
    output and error, as a person at a terminal sees it: its exit status and all it wrote,
    live-display redraws and escapes included."""
    main, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfbuild", *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        env=environment({"TERM": "xterm-256color"}),
    )
    os.close(terminal)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if select.select([main], [], [], 1.0)[0]:
                try:
                    data = os.read(main, 65536)
                except OSError:  # EIO: every process holding the terminal has closed it
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        else:
            proc.kill()
        status = proc.wait(timeout=60)
    finally:
        os.close(main)
    return status, b"".join(chunks).decode("utf-8", errors="replace")


SPY = """\
import json, sys, threading
from tfbuild.plan import make

code, log = make.make_plan.__code__, open(sys.argv[1], "a", encoding="utf-8")

def spy(frame, event, plan):
    if event == "return" and frame.f_code is code and plan is not None:
        host = plan.host
        log.write(json.dumps({
            "source": host.source,
            "hostname": host.hostname,
            "cpu": host.cpu.model_name,
            "march": host.cpu.march.name if host.cpu.march else None,
            "variants": {pv.variant.name: {"march": pv.march, "runs": pv.verdict.runs}
                         for pv in plan.variants},
        }) + "\\n")
        log.flush()

sys.setprofile(spy)
threading.setprofile(spy)
sys.argv = ["tfbuild", *sys.argv[2:]]
from tfbuild.cli import main
main()
"""


def plans_made(
    log: Path,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run tfbuild with the plan spy; its result and every plan it made, in order (the
    machine each is for, and each variant's resolved -march and verdict)."""
    log.unlink(missing_ok=True)
    proc = subprocess.run(
        [sys.executable, "-c", SPY, str(log), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment(env),
        timeout=timeout,
        check=False,
    )
    text = log.read_text(encoding="utf-8") if log.exists() else ""
    return proc, [json.loads(line) for line in text.splitlines()]


RUN_VARIABLE = "TFBUILD_TEST_RUN"
"""Names this test run (set by the main pytest process, inherited by its workers)."""


def toy_cache() -> str:
    """The bazel cache volume of this test run's toy builds: what a test finds in it was
    written by this run (the main process removes it at the end)."""
    return f"tfbuild-test-cache-{os.environ[RUN_VARIABLE][:12]}"


def toy_build_args(store: Path, *args: str, source: Path = TOY / "src") -> list[str]:
    """`tfbuild build` arguments for the toy recipe: a C extension (in `source`) compiled with
    each variant's copts, its bazel cache on this test run's volume."""
    matrix = TOY / "matrix.yaml"
    return ["build", "--matrix", str(matrix), "--tf-source", str(source), "--store", str(store),
            "--bazel-cache", toy_cache(), *args]  # fmt: skip


def toy_build(store: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tfbuild(*toy_build_args(store, *args), timeout=900)


def toy_wheel(store: Path, variant: str) -> Path:
    return next((store / f"tf2.17-py3.11-{variant}").glob("*.whl"))


def debug_said(stderr: str) -> dict[str, tuple[str, str]]:
    """What `--debug` said of each setting on stderr: name -> (value, where it came from)."""
    said = {}
    for line in stderr.splitlines():
        if line.startswith("tfbuild: debug: "):
            name, _, rest = line.removeprefix("tfbuild: debug: ").partition(" = ")
            value, _, source = rest.rpartition("  [")
            said[name] = (value, source.removesuffix("]"))
    return said
