"""Frozen records read back from the JSON documents tfbuild writes (host profiles, results):
the keys a record's class knows are taken, the others ignored, as each document's schema
promises its consumers (a later tfbuild may add keys)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def _names(cls: Callable[..., Any]) -> frozenset[str]:
    return frozenset(f.name for f in fields(cls))  # type: ignore[arg-type]


def record(cls: Callable[..., T], data: Mapping[str, Any]) -> T:
    """A `cls` of the keys of `data` it has fields for."""
    names = _names(cls)
    return cls(**{k: v for k, v in data.items() if k in names})
