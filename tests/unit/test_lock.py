"""The nightly's lock (.github/tfbuild-requirements.txt, written by scripts/lock-nightly): what
every job installs before tfbuild, pinned and hashed, covers what pyproject.toml asks for.
(The test suite's wheelhouse is made from it with pip --require-hashes, so its hashes are
checked against the package index's files on every run; the nightly's replay installs it.)"""

from __future__ import annotations

import re
import sys

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from support.env import LOCK, REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # hatchling, in the test extra, brings tomli there
    import tomli as tomllib


def pins() -> dict[str, tuple[str, list[str]]]:
    """name -> (version, hashes), as pip reads the file (continuation lines joined)."""
    text = re.sub(r"\\\n\s*", " ", LOCK.read_text())
    found = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, *options = line.split()
        name, _, version = requirement.partition("==")
        assert version, f"not pinned: {line}"
        hashes = [o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash=")]
        found[str(canonicalize_name(name))] = (version, hashes)
    return found


def test_the_lock_pins_what_pyproject_asks_for_with_hashes() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    asked = [Requirement(r) for r in project["project"]["dependencies"]]
    asked += [Requirement(r) for r in project["build-system"]["requires"]]
    assert {"numpy", "jinja2", "hatchling"} <= {r.name for r in asked}
    locked = pins()
    for requirement in asked:
        name = str(canonicalize_name(requirement.name))
        assert name in locked, f"{requirement} is not in {LOCK.name}: run scripts/lock-nightly"
        version, _ = locked[name]
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)
    for name, (_, hashes) in locked.items():
        assert hashes and all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name
    assert "tfbuild-bench" not in locked  # tfbuild itself is installed from the checkout
