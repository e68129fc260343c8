"""The cached local venvs: made in place (a venv's scripts name its path), found broken when
a script's interpreter is gone, and made again."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from cext import pure_wheel

from tfbuild.fetch import Artifact
from tfbuild.matrix import PipSettings
from tfbuild.runtime import LocalVenv


def test_a_venv_works_where_it_stands_and_a_broken_one_is_redone(tmp_path: Path) -> None:
    wheel = pure_wheel(tmp_path, "tfbuild_venv_probe", "1.0", [])
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    artifact = Artifact("probe", wheel, digest, (), {})
    venv = LocalVenv(artifact, tmp_path / "cache", PipSettings("inherit", "inherit", "inherit", ()))
    assert venv.prepare() is True
    # Its scripts point at the venv itself, not at a temporary name it was built under.
    shebang = (venv.path / "bin" / "pip").read_text().splitlines()[0]
    assert shebang == f"#!{venv.path}/bin/python"
    version = subprocess.run(
        [str(venv.path / "bin" / "pip"), "--version"], capture_output=True, text=True, check=True
    )
    assert str(venv.path) in version.stdout
    assert venv.prepare() is False  # ready: reused
    # A script whose interpreter is gone (a moved venv) makes it not ready: made again.
    pip = venv.path / "bin" / "pip"
    pip.write_text(pip.read_text().replace(str(venv.path), str(tmp_path / "gone"), 1))
    assert venv.prepare() is True
    assert (venv.path / "bin" / "pip").read_text().splitlines()[0] == shebang
    probe = subprocess.run(
        [str(venv.interpreter), "-c", "import tfbuild_venv_probe as p; print(p.VERSION)"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert probe.stdout.strip() == "1.0"
