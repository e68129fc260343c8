"""The packaged data: what `pip install .` installs is the repository's matrix, templates and
schemas."""

from __future__ import annotations

import zipfile
from pathlib import Path

from support.env import REPO


def test_wheel_carries_data_files(wheelhouse: Path) -> None:
    wheel = next(wheelhouse.glob("tfbuild_bench-*.whl"))  # the distribution name
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "tfbuild/data/matrix.yaml",
        "tfbuild/data/templates/README.md",
        "tfbuild/data/schemas/host.schema.json",
        "tfbuild/data/microarchitectures.yaml",
        "tfbuild/data/tensorflow.yaml",
        "tfbuild/data/make-base-image",
    ):
        assert required in names
    packaged = zipfile.ZipFile(wheel).read("tfbuild/data/matrix.yaml")
    assert packaged == (REPO / "matrix.yaml").read_bytes()


def test_packaged_default_is_the_repository_matrix(wheelhouse: Path) -> None:
    """The wheel `pip install .` builds carries the repository's matrix.yaml and templates as
    its packaged defaults, byte for byte."""
    wheel = next(wheelhouse.glob("tfbuild_bench-*.whl"))
    templates = sorted(p for p in (REPO / "templates").rglob("*") if p.is_file())
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read("tfbuild/data/matrix.yaml") == (REPO / "matrix.yaml").read_bytes()
        for path in templates:
            packed = "tfbuild/data/templates/" + path.relative_to(REPO / "templates").as_posix()
            assert archive.read(packed) == path.read_bytes(), packed
    assert len(templates) >= 4
