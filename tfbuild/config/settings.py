"""Settings and where each one comes from. One cascade for every value a command uses: the
built-in default, then the matrix, then the environment, then the command line; the last
layer that sets a value wins, and the value knows which layer that was (`tfbuild matrix
--explain` lists them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tfbuild.config.model import Matrix

LAYERS = ("default", "matrix", "environment", "option")
"""From the weakest to the strongest."""

STORE_ENV = "TFBUILD_WHEELS"
CACHE_ENV = "TFBUILD_CACHE_DIR"
RESULTS_ENV = "TFBUILD_RESULTS"
BAZEL_CACHE_ENV = "TFBUILD_BAZEL_CACHE"
TF_SOURCE_ENV = "TFBUILD_TF_SOURCE"


@dataclass(frozen=True)
class Setting:
    """One value a command uses, from the strongest layer that sets it."""

    name: str
    value: str
    layer: str
    """One of LAYERS."""
    where: str
    """Where in that layer: "built in", "matrix.yaml:12", "TFBUILD_WHEELS", "--store"."""

    @property
    def source(self) -> str:
        if self.layer == "default":
            return f"default ({self.where})" if self.where != "built in" else "default"
        return f"{self.layer} {self.where}"


def cascade(
    name: str,
    default: str,
    *,
    matrix: tuple[str, str] | None = None,
    environment: tuple[str, Mapping[str, str]] | None = None,
    option: tuple[str, str | None] | None = None,
    default_where: str = "built in",
) -> Setting:
    """The setting from the strongest layer that sets it: `matrix` is (value, file:line) when
    the matrix sets it, `environment` the variable's name and the environment, `option` the
    option's name and its value (None when not given)."""
    found = Setting(name, default, "default", default_where)
    if matrix is not None:
        found = Setting(name, matrix[0], "matrix", matrix[1])
    if environment is not None and environment[1].get(environment[0]):
        found = Setting(name, environment[1][environment[0]], "environment", environment[0])
    if option is not None and option[1] is not None:
        found = Setting(name, option[1], "option", option[0])
    return found


def matrix_settings(
    matrix: Matrix,
    environment: Mapping[str, str],
    given: Mapping[str, Setting] | None = None,
) -> list[Setting]:
    """The matrix's defaults, each from the matrix (with its line) or built in, with the
    environment on top where a variable may override one, and the command's own option over a
    default on top of that: `given` maps a default to the option's setting (from the command
    line or the option's variable)."""
    defaults, set_at = matrix.defaults, matrix.defaults.set_at

    def from_matrix(key: str, value: object) -> tuple[str, str] | None:
        where = set_at.get(key)
        return (shown(value), str(where)) if where is not None else None

    def setting(key: str, value: object, variable: str | None = None) -> Setting:
        env = (variable, environment) if variable else None
        found = cascade(key, shown(value), matrix=from_matrix(key, value), environment=env)
        over = (given or {}).get(key)
        if over is not None and LAYERS.index(over.layer) >= LAYERS.index(found.layer):
            found = Setting(key, shown(value), over.layer, over.where)
        return found

    pip, bazel, images = defaults.pip, defaults.bazel, defaults.base_images
    return [
        setting("defaults.tensorflow", defaults.tensorflow),
        setting("defaults.python", defaults.python),
        setting("defaults.base_images.build", images.build),
        setting("defaults.base_images.runtime", images.runtime),
        setting("defaults.base_images.from", images.source),
        setting("defaults.bazel.cache", bazel.cache, BAZEL_CACHE_ENV),
        setting("defaults.bazel.disk_cache", bazel.disk_cache),
        setting("defaults.bazel.remote_cache", bazel.remote_cache),
        setting("defaults.bazel.remote_executor", bazel.remote_executor),
        setting("defaults.bazel.network", bazel.network),
        setting("defaults.bazel.flags", bazel.flags),
        setting("defaults.pip.index_url", pip.index_url),
        setting("defaults.pip.extra_index_urls", pip.extra_index_urls),
        setting("defaults.pip.ca_bundle", pip.ca_bundle),
        setting("defaults.pip.trusted_hosts", pip.trusted_hosts),
    ]


def user_cache(environment: Mapping[str, str]) -> str:
    """The user's cache folder for tfbuild (XDG_CACHE_HOME, else ~/.cache)."""
    return str(Path(environment.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfbuild")


def session_settings(environment: Mapping[str, str]) -> list[Setting]:
    """The settings of the commands that fetch, build and measure, as the environment leaves
    them (their options, --store, --cache-dir, --results, --tf-source, --bazel-cache, are the
    strongest layer)."""
    return [
        cascade("store", "wheels", environment=(STORE_ENV, environment)),
        cascade("cache", user_cache(environment), environment=(CACHE_ENV, environment)),
        cascade("results", "results", environment=(RESULTS_ENV, environment)),
        cascade(
            "TensorFlow source",
            "the release's tag, cloned",
            environment=(TF_SOURCE_ENV, environment),
        ),
    ]


def shown(value: object) -> str:
    """A setting's value as a person reads it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return str(value)
