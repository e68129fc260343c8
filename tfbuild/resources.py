"""Packaged data files: the default matrix, templates, schemas and fact tables.

An installed tfbuild carries them under ``tfbuild/data``; a source checkout keeps the default
matrix and the templates at the repository root, where users see them.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

_PACKAGE_DATA = Path(__file__).resolve().parent / "data"
_CHECKOUT_ROOT = Path(__file__).resolve().parent.parent
_IN_CHECKOUT = {"make-base-image": "scripts/make-base-image"}
"""Data a checkout keeps elsewhere than at its root (pyproject.toml packs them)."""


def data_path(name: str) -> Path:
    """Path of a packaged data file or folder, e.g. ``matrix.yaml`` or ``templates``."""
    packaged = _PACKAGE_DATA / name
    if packaged.exists():
        return packaged
    in_checkout = _CHECKOUT_ROOT / _IN_CHECKOUT.get(name, name)
    if in_checkout.exists():
        return in_checkout
    raise FileNotFoundError(f"tfbuild data file {name!r} is missing from the installation")


@functools.cache
def load_table(name: str) -> dict[str, Any]:
    """A packaged YAML fact table (``microarchitectures``, ``tensorflow``), parsed once."""
    with data_path(f"{name}.yaml").open(encoding="utf-8") as fh:
        table: dict[str, Any] = yaml.safe_load(fh)
    return table


def default_matrix_path() -> Path:
    return data_path("matrix.yaml")
