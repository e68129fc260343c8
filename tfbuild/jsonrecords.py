"""Frozen records read back from the JSON documents tfbuild writes (host profiles, results,
manifests) and from its fact tables: the keys a record's class knows are taken, the others
ignored, as each document's schema promises its consumers (a later tfbuild may add keys)."""

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


def frozen_record(cls: Callable[..., T], data: Mapping[str, Any], **given: Any) -> T:
    """A `cls` of the keys of `data` it has fields for, lists as tuples (a record whose fields
    are tuples compares equal to one built in code), with `given` fields on top."""
    names = _names(cls) - set(given)
    taken = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items() if k in names}
    return cls(**taken, **given)
