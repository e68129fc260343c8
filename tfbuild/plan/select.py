"""Selection: which (variant, tuning) pairs --only and --skip pick.

Patterns are fnmatch patterns over variant names (or ids), optionally with a tuning part:
``mkl-*`` selects every config of the matching variants, ``stock:single-*`` only some tunings of
one variant."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tfbuild.config.model import Matrix, Tuning, Variant
from tfbuild.errors import SelectionError


def _matches(pattern: str, variant: Variant, tuning: Tuning) -> bool:
    variant_part, _, tuning_part = pattern.partition(":")
    if not (
        fnmatch.fnmatchcase(variant.name, variant_part)
        or fnmatch.fnmatchcase(variant.id, variant_part)
    ):
        return False
    return not tuning_part or fnmatch.fnmatchcase(tuning.name, tuning_part)


def select(
    matrix: Matrix, only: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[tuple[Variant, Tuning]]:
    """The (variant, tuning) pairs picked by --only / --skip, in matrix order."""
    pairs = [
        (v, t)
        for v in matrix.variants
        for t in matrix.tunings
        if (not only or any(_matches(p, v, t) for p in only))
        and not any(_matches(p, v, t) for p in skip)
    ]
    if not pairs:
        given = " ".join([*(f"--only {p!r}" for p in only), *(f"--skip {p!r}" for p in skip)])
        raise SelectionError(
            f"{given} selects nothing in {matrix.path} "
            f"(variants: {', '.join(v.name for v in matrix.variants)}; "
            f"tunings: {', '.join(t.name for t in matrix.tunings)}); "
            "patterns are VARIANT or VARIANT:TUNING, with * and ? wildcards"
        )
    return pairs
