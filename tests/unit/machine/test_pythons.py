"""Which interpreter a local runtime of CPython X.Y is made from: the one running tfbuild when
it is X.Y; else `pythonX.Y` on PATH, else one pyenv installed, but only one that runs and says
it is X.Y (a shim of a version it has not activated says another); none when there is none.
PATH and PYENV_ROOT are folders made here, holding symlinks to this interpreter and small
stand-in interpreters (shell scripts that answer as CPython 3.97 would: no such Python exists,
so no machine has one installed by chance)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tfbuild.machine.pythons import RUNNING_PYTHON, find_python


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """An empty PATH folder and pyenv root of this test's own, and find_python's memory of
    earlier answers cleared before and after."""
    path = tmp_path / "bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    find_python.cache_clear()
    yield path
    find_python.cache_clear()


def interpreter(path: Path, says: str, log: Path | None = None) -> Path:
    """An executable that answers find_python's question (`-c ...`) with `says`, as a CPython
    of that version prints it; it logs each run to `log`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    logged = f'echo run >> "{log}"\n' if log else ""
    path.write_text(f'#!/bin/sh\n{logged}[ "$1" = -c ] || exit 2\necho {says}\n')
    path.chmod(0o755)
    return path


def test_the_running_interpreter_serves_its_own_version(fresh: Path) -> None:
    """Even with another python3.X first on PATH that says the same version."""
    interpreter(fresh / f"python{RUNNING_PYTHON}", RUNNING_PYTHON)
    assert find_python(RUNNING_PYTHON) == sys.executable


def test_an_interpreter_on_path_that_says_its_version_is_found(fresh: Path) -> None:
    found = interpreter(fresh / "python3.97", "3.97")
    assert find_python("3.97") == str(found)


def test_a_shim_that_runs_another_version_is_not_taken(fresh: Path) -> None:
    """A real interpreter (this one) under the name python3.97 says it is the running
    version: it is no 3.97."""
    (fresh / "python3.97").symlink_to(sys.executable)
    assert find_python("3.97") is None


def test_pyenv_versions_are_found_when_path_has_none_that_answers(
    fresh: Path, tmp_path: Path
) -> None:
    """The PATH one exits with an error; pyenv's 3.97.1 answers. pyenv's 3.9.18 is 3.9's, not
    3.97's (nor 3.97.1 3.9's)."""
    broken = fresh / "python3.97"
    broken.write_text("#!/bin/sh\nexit 1\n")
    broken.chmod(0o755)
    pyenv = tmp_path / "pyenv" / "versions"
    good = interpreter(pyenv / "3.97.1" / "bin" / "python3.97", "3.97")
    old = interpreter(pyenv / "3.9.18" / "bin" / "python3.9", "3.9")
    assert find_python("3.97") == str(good)
    assert find_python("3.9") == str(old)


def test_a_pyenv_interpreter_that_cannot_run_is_passed_over(tmp_path: Path) -> None:
    """3.97.0's file is not executable (a broken install): 3.97.2, the next, is taken."""
    pyenv = tmp_path / "pyenv" / "versions"
    interpreter(pyenv / "3.97.0" / "bin" / "python3.97", "3.97").chmod(0o644)
    good = interpreter(pyenv / "3.97.2" / "bin" / "python3.97", "3.97")
    assert find_python("3.97") == str(good)


def test_pyenv_is_looked_for_in_the_home_folder_without_pyenv_root(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PYENV_ROOT")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    good = interpreter(tmp_path / "home/.pyenv/versions/3.97.5/bin/python3.97", "3.97")
    assert find_python("3.97") == str(good)


def test_none_when_no_interpreter_of_the_version_exists() -> None:
    assert find_python("3.97") is None


def test_each_version_is_looked_for_once(fresh: Path, tmp_path: Path) -> None:
    """The answer is kept for the process: the interpreter runs once for two questions, even
    when it is gone by the second."""
    log = tmp_path / "runs.log"
    found = interpreter(fresh / "python3.97", "3.97", log)
    assert find_python("3.97") == str(found)
    found.unlink()
    assert find_python("3.97") == str(found)
    assert log.read_text().splitlines() == ["run"]
