"""The nightly CI's pieces a user meets on the command line: what the jobs may install, builds
for a runner's saved profile, the TensorFlow release override, and the per-class reference
results the gate compares with."""

from __future__ import annotations

import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES

from tfbuild.ci.workflow import check_install
from tfbuild.errors import UsageError

SKYLAKE = FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo"
ZEN4 = "zen4-epyc-9654.cpuinfo"


@pytest.mark.parametrize(
    "command",
    ["pip install .", "pip install ./dist/tfbuild_bench-0.1.0-py3-none-any.whl",
     "python -m pip install tfbuild-bench==0.1.0", "pip install 'tfbuild_bench[test]'",
     "pip install git+https://example.org/tfbuild.git@v0.1.0", "pip install -e . && pytest"],
)  # fmt: skip
def test_installs_of_this_repository_are_accepted(command: str) -> None:
    assert check_install(command) == command


@pytest.mark.parametrize(
    ("command", "name", "owner"),
    [
        ("pip install tfbuild==0.1.0", "tfbuild", "an unrelated project"),
        ("pip install -U tfbuild", "tfbuild", "an unrelated project"),
        ("pip install . && pip install requests", "requests", "not this repository"),
    ],
)
def test_installs_by_a_foreign_name_are_refused(command: str, name: str, owner: str) -> None:
    with pytest.raises(UsageError, match=f"installs '{name}' by name .* belongs to {owner}"):
        check_install(command)
    proc = run_tfbuild("ci", "github", "--install", command, "--out", "/dev/null")
    assert proc.returncode == 64 and "by name from the package index" in proc.stderr
