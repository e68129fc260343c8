"""support/warm.py, the server the tests' `tfbuild` commands are forked from, against the real
thing: each command here run both ways, forked and in a new interpreter (`python -m tfbuild`),
gives the same exit status, output and error, byte for byte. The commands cover what a fork
could get wrong: the working directory (a relative path), the environment (a setting from it,
colour asked by NO_COLOR's absence, the terminal width), a user error's exit code and message,
a usage error of click's, the traceback --debug prints, the version; and the timeout's kill,
after which the server still serves."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import pytest
from support.cli import RESULTS, run_tfbuild
from support.env import FIXTURES
from support.warm import SERVER_OF_THIS_PROCESS

MATRIX = """\
defaults:
  python: "3.12"
variants:
  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}
"""
BAD = "variants:\n  - {name: a, source: bazel, cpu_flags: [avx2, fmaa]}\n"


def both(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    """The command's result both ways, asserted equal; its output."""
    warm = run_tfbuild(*args, cwd=cwd, env=env)
    fresh = run_tfbuild(*args, cwd=cwd, env=env, fresh=True)
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr
    ), args  # fmt: skip
    return warm.stdout + warm.stderr


def test_commands_forked_give_what_a_new_interpreter_gives(tmp_path: Path) -> None:
    assert "version" in both("--version")
    said = both("compare", "aa-run.json", cwd=RESULTS, env={"COLUMNS": "120"})
    assert said.startswith("Keep the baseline stock:default"), said[:300]
    document = json.loads(both("compare", "aa-run.json", "--format", "json", cwd=RESULTS))
    assert document["hosts"], document.keys()
    assert "no results there" in both("compare", "missing.json", cwd=RESULTS)
    assert "Usage:" in both("compare", "--format", "nope", cwd=RESULTS)
    cpuinfo = FIXTURES / "cpuinfo" / "broadwell-xeon-e5-2690v4.cpuinfo"
    assert "E5-2690 v4" in both("detect", "--cpuinfo", str(cpuinfo))
    (tmp_path / "m.yaml").write_text(MATRIX)
    env = {"TFBUILD_WHEELS": str(tmp_path / "w")}
    assert str(tmp_path / "w") in both("matrix", "--explain", "--matrix", "m.yaml", cwd=tmp_path,
                                       env={**env, "TFBUILD_BAZEL_CACHE": ""})  # fmt: skip
    (tmp_path / "bad.yaml").write_text(BAD)
    assert "did you mean 'fma'?" in both("matrix", "--matrix", "bad.yaml", cwd=tmp_path)
    assert "Traceback" in both("matrix", "--matrix", "bad.yaml", "--debug", cwd=tmp_path)
    debug = {"TFBUILD_DEBUG": "1"}  # read as tfbuild.cli.options is imported
    assert "Traceback" in both("matrix", "--matrix", "bad.yaml", cwd=tmp_path, env=debug)


def test_a_command_past_its_timeout_is_killed_and_the_server_serves_on() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        run_tfbuild("compare", "default-run.json.gz", cwd=RESULTS, timeout=0.01)
    again = run_tfbuild("--version")
    assert again.returncode == 0 and "version" in again.stdout


def test_commands_from_two_threads_at_once_both_run() -> None:
    """The server runs one command at a time; another thread's meanwhile runs in a new
    interpreter."""
    done: list[subprocess.CompletedProcess[str]] = []
    with SERVER_OF_THIS_PROCESS.lock:  # the server busy: both threads' commands go fresh
        threads = [threading.Thread(target=lambda: done.append(run_tfbuild("--version")))
                   for _ in range(2)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert [p.returncode for p in done] == [0, 0] and all("version" in p.stdout for p in done)
