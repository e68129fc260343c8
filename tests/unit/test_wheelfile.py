"""The wheel file format: names, tags, metadata."""

from __future__ import annotations

import re

import pytest

from tfbuild import wheelfile
from tfbuild.errors import BadWheel


def test_a_wheels_pythons_come_from_its_cpython_tags() -> None:
    """cp39.cp310 means 3.9 or 3.10 (ordered by number, not text); a py3 or abi3 wheel needs no
    particular Python; an interpreter tag that is not cp3XY is refused by name, since the
    versions reach the runtime's install script."""
    assert wheelfile.cpython_versions("x-1.0-cp310.cp39-cp310.cp39-linux_x86_64.whl") == [
        "3.9",
        "3.10",
    ]
    assert wheelfile.cpython_versions("x-1.0-py3-none-any.whl") == []
    assert wheelfile.cpython_versions("x-1.0-cp311-abi3-linux_x86_64.whl") == []
    for tag in ("cp3$(id)", "cp3", "cp2x"):
        with pytest.raises(BadWheel, match=re.escape(f"{tag!r} is not a CPython 3 tag")):
            wheelfile.cpython_versions(f"x-1.0-{tag}-none-any.whl")
