"""The command line as a user meets it: the entry points, help and version, and exit codes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from support.cli import debug_said, on_terminal, run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild import __version__

HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"


def test_version_help_and_module_entry() -> None:
    proc = run_tfbuild("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"tfbuild, version {__version__}"
    proc = run_tfbuild("--help")
    assert proc.returncode == 0
    for command in ("detect", "matrix"):
        assert command in proc.stdout


def test_console_script_installed() -> None:
    """`pip install .` puts a `tfbuild` script beside the interpreter that runs these tests,
    declared by this distribution (never the unrelated `tfbuild` of the index), and it runs
    this tfbuild."""
    (entry,) = [
        e for e in metadata.entry_points(group="console_scripts", name="tfbuild")
        if e.dist is not None and e.dist.name == "tfbuild-bench"
    ]  # fmt: skip
    assert entry.value == "tfbuild.cli:main"
    script = Path(sys.executable).parent / "tfbuild"
    assert script.is_file(), "pip install . must provide `tfbuild` beside the interpreter"
    proc = subprocess.run(
        [str(script), "--version"], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and proc.stdout.strip() == f"tfbuild, version {__version__}"


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["matrix", "--only", "mkl-avx3"], 4, "selects nothing"),
        (["matrix", "--with", "intel"], 4, "unknown opt-in set 'intel'"),
        (["detect", "--cpuinfo", "/nonexistent/cpuinfo"], 3, "/nonexistent/cpuinfo: cannot read"),
        (["detect", "--cpuinfo", str(HASWELL), "--host", str(HASWELL)], 64, "give one of them"),
        (["matrix", "--bogus"], 64, "No such option"),
        (["matrix", "--host", str(HASWELL)], 3, "not valid JSON"),
        (
            [
                "bench",
                "--with",
                "intel-2023",
                "--only",
                "stock-2.14:default",
                "--runtime",
                "local",
                "--results",
                "/nonexistent/results",
            ],
            4,
            "the selection leaves out the baseline stock:default (matrix.yaml's `baseline:`), "
            "which every config is ranked against: add --only stock:default",
        ),
    ],
)
def test_exit_codes(args: list[str], code: int, message: str) -> None:
    proc = run_tfbuild(*args, cwd=REPO)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


FORKED = """\
import atexit, os, signal, sys, threading, time
from tfbuild.cli import stop_on_sigterm
stop_on_sigterm()  # as main() does
folder = sys.argv[1]
atexit.register(lambda: open(os.path.join(folder, f"cleanup-{os.getpid()}"), "w").close())
ended = []
for blocked in (False, True):
    child = os.fork()
    if child == 0:  # a pool worker waiting for work, or stuck in a lock it will never get
        try:
            if blocked:
                lock = threading.Lock()
                lock.acquire()
                lock.acquire()
            time.sleep(60)
        except KeyboardInterrupt:
            open(os.path.join(folder, "worker-unwound"), "w").close()
            raise
        os._exit(0)
    time.sleep(0.5)
    os.kill(child, signal.SIGTERM)  # as a process pool stops its workers
    _, status = os.waitpid(child, 0)
    ended.append(str(os.WTERMSIG(status)) if os.WIFSIGNALED(status) else "exited")
print(os.getpid(), *ended)
"""


def test_a_forked_worker_stopped_by_sigterm_just_ends(tmp_path: Path) -> None:
    """tfbuild turns SIGTERM into Ctrl-C's path in the process that runs the command; the
    workers the audit's process pool forks must not keep that, since a pool stops its workers
    with SIGTERM. A worker ends as without the handler (killed by SIGTERM), waiting or stuck
    in a lock: it does not unwind into a copy of the command and run its clean-up (which once
    removed the parent's temporary folder), nor outlive the signal (a stuck one once hung the
    run's audit for good)."""
    proc = subprocess.run([sys.executable, "-c", FORKED, str(tmp_path)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    parent, *ended = proc.stdout.split()
    assert ended == [str(signal.SIGTERM.value)] * 2, proc.stdout + proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == [f"cleanup-{parent}"]  # the parent's alone


def test_debug_says_each_setting_and_where_it_came_from(tmp_path: Path) -> None:
    """`--debug` before any command: its options, each from the command line, the environment
    (the variable named) or the default, then the matrix it reads and the matrix's defaults
    (the line that sets each, or the environment over them)."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text((REPO / "matrix.yaml").read_text())
    store = tmp_path / "w"
    env = {"TFBUILD_BAZEL_CACHE": str(tmp_path / "bazel")}
    args = ["build", "--dry-run", "--variant", "mkl-avx2", "--matrix", str(matrix),
            "--store", str(store)]  # fmt: skip
    proc = run_tfbuild("--debug", *args, env=env)
    assert proc.returncode == 0, proc.stderr
    said = debug_said(proc.stderr)
    python_line = next(
        n for n, line in enumerate(matrix.read_text().splitlines(), 1) if "python:" in line
    )
    assert said["--store"] == (str(store), "option --store")
    assert said["--bazel-cache"] == (str(tmp_path / "bazel"), "environment TFBUILD_BAZEL_CACHE")
    assert said["--force"] == ("no", "default")
    assert said["matrix"] == (str(matrix), "option --matrix")
    assert said["defaults.python"][1] == f"matrix {matrix}:{python_line}"
    assert said["defaults.bazel.cache"] == (
        str(tmp_path / "bazel"), "environment TFBUILD_BAZEL_CACHE"
    )  # fmt: skip
    quiet = run_tfbuild(*args, env=env)
    assert quiet.returncode == 0 and "tfbuild: debug:" not in quiet.stderr


COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:3[0-7]|9[0-7]|38;[0-9;]+)m")
"""An SGR escape that sets a foreground colour (bold, dim and italic are not colours)."""


def test_no_color_turns_colour_off_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal `tfbuild matrix` colours its verdicts; with NO_COLOR set (no-color.org,
    as docs/reference.md says) the same output carries no colour, its text unchanged."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    code, coloured = on_terminal("matrix")
    assert code == 0 and COLOUR.search(coloured), coloured[:500]
    monkeypatch.setenv("NO_COLOR", "1")
    code, plain = on_terminal("matrix")
    assert code == 0 and not COLOUR.search(plain), COLOUR.findall(plain)[:5]
    styles = re.compile(r"\x1b\[[0-9;]*m")
    assert styles.sub("", coloured) == styles.sub("", plain)


def test_shell_completion_works_as_documented() -> None:
    """The completion docs/reference.md documents: bash source that completes the commands."""
    reference = (REPO / "docs" / "reference.md").read_text()
    assert 'eval "$(_TFBUILD_COMPLETE=bash_source tfbuild)"' in reference
    source = run_tfbuild(env={"_TFBUILD_COMPLETE": "bash_source"})
    assert source.returncode == 0 and "_tfbuild_completion()" in source.stdout, source.stderr
    words = run_tfbuild(
        env={"_TFBUILD_COMPLETE": "bash_complete", "COMP_WORDS": "tfbuild com", "COMP_CWORD": "1"}
    )
    assert "plain,compare" in words.stdout.split("\n"), words.stdout


def test_color_is_chosen_with_color_before_or_after_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """--color always colours output that goes into a pipe (for `less -R`), never keeps a
    terminal plain whatever the environment, auto is as without it; on the group or after the
    command's name alike."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    piped = run_tfbuild("matrix")
    assert piped.returncode == 0 and not COLOUR.search(piped.stdout)
    for forced in (run_tfbuild("--color", "always", "matrix"), run_tfbuild("matrix", "--color",
                                                                          "always")):  # fmt: skip
        assert forced.returncode == 0 and COLOUR.search(forced.stdout), forced.stderr
    assert not COLOUR.search(run_tfbuild("--color", "auto", "matrix").stdout)
    code, plain = on_terminal("--color", "never", "matrix")
    assert code == 0 and not COLOUR.search(plain)
    code, plain = on_terminal("matrix", "--color", "never")
    assert code == 0 and not COLOUR.search(plain)


@pytest.mark.parametrize("users", [None, "3"])
def test_tfbuilds_numpy_has_one_blas_thread_and_what_it_starts_the_users_setting(
    users: str | None,
) -> None:
    """The command line loads numpy with OpenBLAS on one thread (it starts one per CPU when
    loaded: 0.13 CPU-seconds of every command on two CPUs), then puts the environment back as
    the user had it, for pip and the benchmark processes it starts. (On a one-CPU machine
    OpenBLAS starts no thread either way.)"""
    probe = (
        "import os, tfbuild.cli\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if users is not None:
        env["OPENBLAS_NUM_THREADS"] = users
    run = [sys.executable, "-c", probe]
    proc = subprocess.run(run, capture_output=True, text=True, env=env, check=False)
    assert proc.stdout.split() == ["1", str(users)], proc.stderr
