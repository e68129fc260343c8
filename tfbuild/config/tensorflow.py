"""TensorFlow release facts (tfbuild/data/tensorflow.yaml): which releases have a build recipe,
how each is built (its Era), with which compiler, which --configs it defines, and the CPU
floor of the prebuilt distributions. The table is read here only; the rest of tfbuild asks
for Release, Era, Compiler and ConfigSpan records."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tfbuild.config.values import TF_VERSION_RE
from tfbuild.jsonrecords import frozen_record
from tfbuild.resources import load_table


@dataclass(frozen=True, kw_only=True)
class Era:
    """How the wheels of a span of releases are made; the recipe in templates/ branches on
    these facts only (the table's `eras` says what each one means)."""

    name: str
    configure: bool
    target: str
    script: bool
    python_env: tuple[str, ...]
    hermetic_cuda: bool
    local_cc: bool
    extra_configs: tuple[str, ...]
    floor_configs: tuple[str, ...]
    cuda_configs: tuple[str, ...]
    repo_env: Mapping[str, str]
    warning_copts: tuple[str, ...]
    cuda: bool
    """Whether tfbuild builds CUDA in this era; `cuda_refusal` says why not."""
    cuda_refusal: str | None = None
    sources: tuple[str, ...] = ()
    table: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The entry as the table has it: what templates see as `era_facts`."""


@dataclass(frozen=True, kw_only=True)
class Compiler:
    """A C/C++ toolchain a recipe installs: its Debian packages, an extra apt repository where
    the base image lacks them, and the path bazel gets (None: bazel brings its own)."""

    name: str
    packages: tuple[str, ...]
    cc: str | None
    apt_repository: str | None = None
    apt_key: str | None = None
    retired: str | None = None
    """Why it cannot be had any more (then its releases are refused)."""
    table: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """The entry as the table has it: what templates see as `compiler_facts`."""


@dataclass(frozen=True, kw_only=True)
class Release:
    """One TensorFlow minor release's facts: how it is built, with what, for which Pythons."""

    minor: str
    era: Era
    bazel: str
    """Its .bazelversion, used when the source tree has none."""
    python: tuple[str, str]
    """The CPython range its wheels are built for."""
    compiler: Compiler
    cuda: str
    cudnn: str
    repo_env: Mapping[str, str] = field(default_factory=dict)
    floor: tuple[str, ...] = ("avx",)
    """The instruction sets of TensorFlow's own wheels (--config=avx_linux)."""
    verify: bool = False
    """Facts not confirmed from a release tag."""
    sources: tuple[str, ...] = ()

    def builds_for(self, python: str) -> bool:
        low, high = self.python
        return version_tuple(low) <= version_tuple(python) <= version_tuple(high)


@dataclass(frozen=True, kw_only=True)
class ConfigSpan:
    """A --config name of TensorFlow's .bazelrc and the releases that define it (`since` and
    `until` inclusive; absent: every release known); `inferred` when the releases after `until`
    are taken to lack it from master, not read; `instead`: what to use where it is lacking."""

    name: str
    since: str | None = None
    until: str | None = None
    inferred: bool = False
    instead: str | None = None


@dataclass(frozen=True)
class _Facts:
    repository: str
    bazelisk: Mapping[str, str]
    releases: Mapping[str, Release]
    configs: Mapping[str, ConfigSpan]
    distributions: Mapping[str, tuple[str, ...]]


@functools.cache
def _facts() -> _Facts:
    table = load_table("tensorflow")
    eras = {n: frozen_record(Era, e, name=n, table=e) for n, e in table["eras"].items()}
    compilers = {
        n: frozen_record(Compiler, c, name=n, table=c) for n, c in table["compilers"].items()
    }
    releases = {
        minor: frozen_record(
            Release, r, minor=minor, era=eras[r["era"]], compiler=compilers[r["compiler"]]
        )
        for minor, r in table["releases"].items()
    }
    return _Facts(
        repository=table["repository"],
        bazelisk=table["bazelisk"],
        releases=releases,
        configs={
            n: frozen_record(ConfigSpan, c or {}, name=n) for n, c in table["configs"].items()
        },
        distributions={n: tuple(d["cpu_flags"]) for n, d in table["distributions"].items()},
    )


def tf_release(version: str) -> Release | None:
    """The facts of the release a version (2.21, 2.21.0, 2.22.0rc0) belongs to, if known."""
    return _facts().releases.get(".".join(version.split(".")[:2]))


def releases() -> tuple[Release, ...]:
    """Every release tfbuild has facts for, oldest first."""
    return tuple(sorted(_facts().releases.values(), key=lambda r: version_tuple(r.minor)))


def config_span(name: str) -> ConfigSpan | None:
    """A --config name tfbuild knows, with the releases that define it; None for another."""
    return _facts().configs.get(name)


def known_configs() -> tuple[str, ...]:
    return tuple(_facts().configs)


def distribution_floor(project: str) -> tuple[str, ...] | None:
    """The instruction sets a prebuilt distribution on the package index is declared to need
    (by its canonical project name); None for one tfbuild does not know."""
    return _facts().distributions.get(project)


def source_repository() -> str:
    return _facts().repository


def bazelisk() -> Mapping[str, str]:
    """The bazelisk build images install as `bazel`: version, URL, sha256, archive member."""
    return _facts().bazelisk


def floor_flags(version: str | None) -> tuple[str, ...]:
    """The instruction sets of TensorFlow's own wheels of a release (its --config=avx_linux):
    AVX, and F16C from 2.21 on (tfbuild/data/tensorflow.yaml `floor`)."""
    release = tf_release(version) if version else None
    return release.floor if release else ("avx",)


def lacking_config(
    configs: Sequence[str], version: str, read_only: bool = False
) -> tuple[str, str] | None:
    """The first of `configs` (bazel --config names) that release `version`'s .bazelrc does not
    define, with the releases that do ("from 2.x", "up to 2.y"); None when it defines them all
    (tfbuild/data/tensorflow.yaml `configs`). With `read_only`, only a lack read from the
    release's own tree counts, not one inferred from master (`inferred`)."""
    minor = version_tuple(".".join(version.split(".")[:2]))
    for name in configs:
        span = config_span(name) or ConfigSpan(name=name)
        since, until = span.since, span.until
        after = bool(until and minor > version_tuple(until))
        if read_only and after and span.inferred:
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
    if lacking_config(configs, version, read_only=True) is not None:
        return None
    lack = lacking_config(configs, version)
    span = config_span(lack[0]) if lack is not None else None
    if lack is None or span is None or not span.inferred:
        return None
    return lack[0], str(span.until)


def has_recipe(version: str) -> bool:
    """Whether source builds know this release's era (tfbuild/data/tensorflow.yaml)."""
    return bool(TF_VERSION_RE.fullmatch(version)) and tf_release(version) is not None


def known_releases() -> list[str]:
    return [r.minor for r in releases()]


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
