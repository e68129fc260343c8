"""Settings and where each one comes from. One cascade for every value a command uses: the
built-in default, then the matrix, then the environment, then the command line; the last
layer that sets a value wins, and the value knows which layer that was. A command's settings
are resolved by a Cascade, which keeps the record of what it resolved: `--debug` and `tfbuild
matrix --explain` print that record, so what they say is how the value was found."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar, cast

from tfbuild.config.model import Matrix

LAYERS = ("default", "matrix", "environment", "option")
"""From the weakest to the strongest."""

STORE_ENV = "TFBUILD_WHEELS"
CACHE_ENV = "TFBUILD_CACHE_DIR"
RESULTS_ENV = "TFBUILD_RESULTS"
BAZEL_CACHE_ENV = "TFBUILD_BAZEL_CACHE"
TF_SOURCE_ENV = "TFBUILD_TF_SOURCE"
PROCESSES_ENV = "TFBUILD_PROCESSES"

STORE_DEFAULT = "wheels"
"""The wheel store's folder, relative to where tfbuild runs."""
RESULTS_DEFAULT = "results"
"""The results' folder, relative to where tfbuild runs."""

T = TypeVar("T")


def shown(value: object) -> str:
    """A setting's value as a person reads it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return " ".join(map(str, value)) or "none"
    return str(value)


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


class Cascade:
    """Resolves a command's settings, each from the strongest layer that sets it, and records
    each one as it is resolved: `settings` is the record, and `said` hears each one too (for
    --debug)."""

    def __init__(
        self, environment: Mapping[str, str], said: Callable[[Setting], None] | None = None
    ) -> None:
        self._environment = environment
        self._said = said
        self.settings: list[Setting] = []

    def take(
        self,
        name: str,
        default: T,
        *,
        matrix: tuple[T, str] | None = None,
        variable: str | None = None,
        read: Callable[[str], T] | None = None,
        option: tuple[str, T | None] | None = None,
        default_where: str = "built in",
        show: Callable[[T], str] = shown,
    ) -> T:
        """The value of one setting: `option` (its flag, and its value when the command line
        gave one), else the environment's `variable` (its text through `read`), else `matrix`
        (the value and file:line), else `default`; recorded under `name` with its layer, the
        value as `show` words it."""
        value, layer, where = default, "default", default_where
        if matrix is not None:
            value, layer, where = matrix[0], "matrix", matrix[1]
        text = self._environment.get(variable) if variable else None
        if variable and text:
            value = read(text) if read is not None else cast(T, text)
            layer, where = "environment", variable
        if option is not None and option[1] is not None:
            value, layer, where = option[1], "option", option[0]
        self.record(Setting(name, show(value), layer, where))
        return value

    def record(self, setting: Setting) -> None:
        """A setting resolved elsewhere (which matrix file is read, say), in the record."""
        self.settings.append(setting)
        if self._said is not None:
            self._said(setting)

    def source(self, name: str) -> Setting | None:
        """The setting last recorded under `name`."""
        return next((s for s in reversed(self.settings) if s.name == name), None)


def cascade(
    name: str,
    default: str,
    *,
    matrix: tuple[str, str] | None = None,
    environment: tuple[str, Mapping[str, str]] | None = None,
    option: tuple[str, str | None] | None = None,
) -> Setting:
    """One setting on its own: `matrix` is (value, file:line) when the matrix sets it,
    `environment` the variable's name and the environment, `option` the option's flag and its
    value (None when not given)."""
    variable, env = environment if environment is not None else (None, {})
    resolved = Cascade(env)
    resolved.take(name, default, matrix=matrix, variable=variable, option=option)
    return resolved.settings[0]


def matrix_settings(
    matrix: Matrix,
    resolved: Cascade,
    options: Mapping[str, tuple[str, str | None]] | None = None,
) -> list[Setting]:
    """The matrix's defaults, each resolved in `resolved`: from the matrix (with its line) or
    built in, the environment over it where a variable may set one (defaults.bazel.cache), and
    the command's option over that (`options` maps a default to the option's flag and the
    value the command line gave, or None). The settings recorded, in the matrix's order."""
    defaults, set_at = matrix.defaults, matrix.defaults.set_at
    start = len(resolved.settings)

    def setting(key: str, value: object, variable: str | None = None) -> None:
        where = set_at.get(key)
        written = (shown(value), str(where)) if where is not None else None
        option = (options or {}).get(key)
        resolved.take(key, shown(value), matrix=written, variable=variable, option=option)

    pip, bazel, images = defaults.pip, defaults.bazel, defaults.base_images
    setting("defaults.tensorflow", defaults.tensorflow)
    setting("defaults.python", defaults.python)
    setting("defaults.base_images.build", images.build)
    setting("defaults.base_images.runtime", images.runtime)
    setting("defaults.base_images.from", images.source)
    setting("defaults.bazel.cache", bazel.cache, BAZEL_CACHE_ENV)
    setting("defaults.bazel.disk_cache", bazel.disk_cache)
    setting("defaults.bazel.remote_cache", bazel.remote_cache)
    setting("defaults.bazel.remote_executor", bazel.remote_executor)
    setting("defaults.bazel.network", bazel.network)
    setting("defaults.bazel.flags", bazel.flags)
    setting("defaults.pip.index_url", pip.index_url)
    setting("defaults.pip.extra_index_urls", pip.extra_index_urls)
    setting("defaults.pip.ca_bundle", pip.ca_bundle)
    setting("defaults.pip.trusted_hosts", pip.trusted_hosts)
    return resolved.settings[start:]


def user_cache(environment: Mapping[str, str]) -> str:
    """The user's cache folder for tfbuild (XDG_CACHE_HOME, else ~/.cache)."""
    return str(Path(environment.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tfbuild")


def session_settings(environment: Mapping[str, str]) -> list[Setting]:
    """The settings of the commands that fetch, build and measure, as the environment leaves
    them (their options, --store, --cache-dir, --results, --tf-source, --bazel-cache, are the
    strongest layer)."""
    return [
        cascade("store", STORE_DEFAULT, environment=(STORE_ENV, environment)),
        cascade("cache", user_cache(environment), environment=(CACHE_ENV, environment)),
        cascade("results", RESULTS_DEFAULT, environment=(RESULTS_ENV, environment)),
        cascade(
            "TensorFlow source",
            "the release's tag, cloned",
            environment=(TF_SOURCE_ENV, environment),
        ),
    ]
