"""Where each variant runs (a local venv or a container) and whether the runtime it gets has the
Python its wheel needs. The planner asks the runtime image through a function handed to it: it
never talks to the engine itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tfbuild import wheelfile
from tfbuild.config.model import Matrix, Variant
from tfbuild.errors import EngineUnavailable
from tfbuild.machine.profile import HostProfile
from tfbuild.machine.pythons import RUNNING_PYTHON, find_python

ImageProbe = Callable[[str, str], "tuple[tuple[str, ...], bool] | None"]
"""(image, X.Y) -> the CPython versions the image has, and whether its apt sources offer X.Y;
None when that cannot be told (engine.image_pythons)."""


@dataclass(frozen=True)
class Runtimes:
    """Where this machine runs each variant, for the Python its wheel needs: a local venv from
    an interpreter found here, or a container of the runtime image, which has that Python or
    installs it from its own apt sources."""

    choice: str
    """--runtime: auto, local or docker."""
    engine_reachable: bool
    image: str
    probe: ImageProbe | None
    """Asks the runtime image; None when no engine answers (nothing to ask)."""

    def python_refusal(self, variant: Variant) -> str | None:
        pythons = _runtime_pythons(variant)
        if not pythons:
            return None
        try:
            kind = runtime_kind(variant, self.choice, self.engine_reachable)
        except EngineUnavailable:
            return None  # the bench refuses it with what to do
        if kind == "docker":
            return self._image_refusal(pythons)
        if any(find_python(p) for p in pythons):
            return None
        return (
            f"needs Python {' or '.join(pythons)}; tfbuild runs on Python {RUNNING_PYTHON} and "
            f"there is no python{pythons[0]} on PATH or in pyenv for a local runtime"
        )

    def _image_refusal(self, pythons: Sequence[str]) -> str | None:
        if self.probe is None:
            return None
        have: tuple[str, ...] = ()
        for python in pythons:
            found = self.probe(self.image, python)
            if found is None:
                return None  # cannot be told; the runtime install says what is wrong
            have, from_apt = found
            if python in have or from_apt:
                return None
        return (
            f"needs Python {' or '.join(pythons)}; the runtime image {self.image} has "
            f"{'Python ' + ', '.join(have) if have else 'no Python'} and its apt sources have "
            f"no python{pythons[0]}; use a base image of a distribution release that has it, "
            "or --runtime local"
        )


def runtimes_for(
    matrix: Matrix, machine: HostProfile, choice: str, image_probe: ImageProbe | None
) -> Runtimes | None:
    """The runtimes of the machine a plan is for, when tfbuild runs its variants there: this
    machine (live), or the engine's when containers run on another machine. None for a saved
    profile: its interpreters and engine are not known here. `image_probe` asks the engine what
    the runtime image holds; None when no engine answers."""
    if machine.source not in ("live", "engine"):
        return None
    return Runtimes(
        choice, image_probe is not None, matrix.defaults.base_images.runtime, image_probe
    )


def _runtime_pythons(variant: Variant) -> list[str]:
    """The CPython versions a runtime needs for the variant's wheel: a source build's `python`,
    a local wheel's tags (none for a pure py3 wheel); index wheels follow tfbuild's own."""
    if variant.source == "bazel":
        return [variant.python]
    if variant.source == "wheel" and variant.path is not None:
        return wheelfile.cpython_versions(variant.path.name)
    return []


def runtime_kind(variant: Variant, choice: str, engine_reachable: bool) -> str:
    """Which runtime a variant gets: --runtime wins, then the variant's own `runtime` key.

    ``auto`` means docker for source builds when an engine is reachable, else local.
    """
    wanted = choice if choice != "auto" else variant.runtime
    if wanted == "auto":
        wanted = "docker" if variant.needs_build and engine_reachable else "local"
    if wanted == "docker" and not engine_reachable:
        raise EngineUnavailable(
            f"variant {variant.name!r} runs in Docker but no engine is reachable "
            "(start dockerd, set DOCKER_HOST, or pass --runtime local)"
        )
    return wanted
