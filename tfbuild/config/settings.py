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
        text = self._environment.get(variable) if variable else None
        if option is not None and option[1] is not None:
            value, layer, where = option[1], "option", option[0]
        elif variable and text:  # read only when it is what counts: a bad one under a good
            value = read(text) if read is not None else cast(T, text)  # option is no error
            layer, where = "environment", variable
        elif matrix is not None:
            value, layer, where = matrix[0], "matrix", matrix[1]
        else:
            value, layer, where = default, "default", default_where
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


def matrix_settings(
    matrix: Matrix, resolved: Cascade, over: Mapping[str, Setting] | None = None
) -> list[Setting]:
    """The matrix's defaults, each resolved in `resolved`: from the matrix (with its line) or
    built in, or, where `over` names one, from the stronger layer that set it (--tensorflow,
    --bazel-cache or its variable; the matrix holds the value as applied). The settings
    recorded, in the matrix's order."""
    defaults, set_at = matrix.defaults, matrix.defaults.set_at
    start = len(resolved.settings)

    def setting(key: str, value: object) -> None:
        if over is not None and (stronger := over.get(key)) is not None:
            resolved.record(Setting(key, shown(value), stronger.layer, stronger.where))
            return
        where = set_at.get(key)
        written = (shown(value), str(where)) if where is not None else None
        resolved.take(key, shown(value), matrix=written)

    pip, bazel, images = defaults.pip, defaults.bazel, defaults.base_images
    setting("defaults.tensorflow", defaults.tensorflow)
    setting("defaults.python", defaults.python)
    setting("defaults.base_images.build", images.build)
    setting("defaults.base_images.runtime", images.runtime)
    setting("defaults.base_images.from", images.source)
    setting("defaults.bazel.cache", bazel.cache)
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
