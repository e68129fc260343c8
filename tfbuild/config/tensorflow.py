"""TensorFlow release facts (tfbuild/data/tensorflow.yaml): which releases have a build recipe."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tfbuild.config.values import TF_VERSION_RE
from tfbuild.resources import load_table


def tf_release(version: str) -> Mapping[str, Any] | None:
    releases: Mapping[str, Any] = load_table("tensorflow")["releases"]
    return releases.get(".".join(version.split(".")[:2]))


def has_recipe(version: str) -> bool:
    """Whether source builds know this release's era (tfbuild/data/tensorflow.yaml)."""
    return bool(TF_VERSION_RE.fullmatch(version)) and tf_release(version) is not None


def known_releases() -> list[str]:
    return list(load_table("tensorflow")["releases"])


def accepted_releases() -> str:
    """What a release with a build recipe looks like, for an error message: a full version of
    one of the known eras."""
    eras = known_releases()
    return (
        f"a release in full, like {eras[-1]}.0, of an era tfbuild knows ({eras[0]}.x to "
        f"{eras[-1]}.x)"
    )


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))
