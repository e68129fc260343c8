"""TensorFlow release facts (tfbuild/data/tensorflow.yaml): which releases have a build recipe."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tfbuild.config.values import TF_VERSION_RE
from tfbuild.resources import load_table


def tf_release(version: str) -> Mapping[str, Any] | None:
    releases: Mapping[str, Any] = load_table("tensorflow")["releases"]
    return releases.get(".".join(version.split(".")[:2]))


def floor_flags(version: str | None) -> tuple[str, ...]:
    """The instruction sets of TensorFlow's own wheels of a release (its --config=avx_linux):
    AVX, and F16C from 2.21 on (tfbuild/data/tensorflow.yaml `floor`)."""
    release = tf_release(version) if version else None
    return tuple(release.get("floor", ("avx",))) if release else ("avx",)


def lacking_config(
    configs: Sequence[str], version: str, read_only: bool = False
) -> tuple[str, str] | None:
    """The first of `configs` (bazel --config names) that release `version`'s .bazelrc does not
    define, with the releases that do ("from 2.x", "up to 2.y"); None when it defines them all
    (tfbuild/data/tensorflow.yaml `configs`). With `read_only`, only a lack read from the
    release's own tree counts, not one inferred from master (`inferred`)."""
    known = load_table("tensorflow")["configs"]
    minor = version_tuple(".".join(version.split(".")[:2]))
    for name in configs:
        span = known.get(name, {})
        since, until = span.get("since"), span.get("until")
        after = bool(until and minor > version_tuple(until))
        if read_only and after and span.get("inferred"):
            continue
        if (since and minor < version_tuple(since)) or after:
            limits = " ".join(
                part for part in (since and f"from {since}", until and f"up to {until}") if part
            )
            return name, limits
    return None


def inferred_lack(configs: Sequence[str], version: str) -> tuple[str, str] | None:
    """The first of `configs` that release `version` is taken to lack only by inference (its
    own .bazelrc not read), with the last release known to define it; None otherwise."""
    known = load_table("tensorflow")["configs"]
    if lacking_config(configs, version, read_only=True) is not None:
        return None
    lack = lacking_config(configs, version)
    if lack is None or not known.get(lack[0], {}).get("inferred"):
        return None
    return lack[0], str(known[lack[0]]["until"])


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


def source_tag(version: str) -> str:
    """The git tag of a release in TensorFlow's repository: v2.21.0, and v2.22.0-rc0 for the
    candidate the package index calls 2.22.0rc0."""
    return "v" + re.sub(r"(rc\d+)$", r"-\1", version)
