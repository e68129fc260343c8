"""Selection: which (variant, tuning) pairs --only and --skip pick.

Patterns are fnmatch patterns over variant names (or ids), optionally with a tuning part:
``mkl-*`` selects every config of the matching variants, ``stock:single-*`` only some tunings of
one variant. The variants of the matrix's opt-in sets are left out unless their set is named
(--with) or a pattern names the variant itself, without wildcards."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tfbuild.config.model import Matrix, Tuning, Variant
from tfbuild.config.values import did_you_mean
from tfbuild.errors import SelectionError


def _matches(pattern: str, variant: Variant, tuning: Tuning) -> bool:
    variant_part, _, tuning_part = pattern.partition(":")
    if not (
        fnmatch.fnmatchcase(variant.name, variant_part)
        or fnmatch.fnmatchcase(variant.id, variant_part)
    ):
        return False
    return not tuning_part or fnmatch.fnmatchcase(tuning.name, tuning_part)


def _named(only: Sequence[str], variant: Variant) -> bool:
    return any(p.partition(":")[0] in (variant.name, variant.id) for p in only)


def select(
    matrix: Matrix,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    opt_in: Sequence[str] = (),
) -> list[tuple[Variant, Tuning]]:
    """The (variant, tuning) pairs picked by --with / --only / --skip, in matrix order."""
    opted = matrix.opted_in(opt_in)
    candidates = [
        v
        for v in matrix.variants
        if v.name not in matrix.left_out or v.name in opted or _named(only, v)
    ]
    pairs = [
        (v, t)
        for v in candidates
        for t in matrix.tunings
        if (not only or any(_matches(p, v, t) for p in only))
        and not any(_matches(p, v, t) for p in skip)
    ]
    if not pairs:
        given = " ".join(
            [
                *(f"--with {n}" for n in opt_in),
                *(f"--only {p!r}" for p in only),
                *(f"--skip {p!r}" for p in skip),
            ]
        )
        names = [v.name for v in matrix.variants]
        names += [f"{v.name}:{t.name}" for v in matrix.variants for t in matrix.tunings]
        hint = next(
            (h for p in only if not any(c in p for c in "*?[") and (h := did_you_mean(p, names))),
            "",
        )
        raise SelectionError(
            f"{given} selects nothing in {matrix.path}{hint} "
            f"(variants: {', '.join(v.name for v in candidates)}; "
            f"tunings: {', '.join(t.name for t in matrix.tunings)}); "
            "patterns are VARIANT or VARIANT:TUNING, with * and ? wildcards"
            + (
                f"; opt-in variants come with --with SET ({opt_in_sets(matrix)}) or by name"
                if matrix.opt_in
                else ""
            )
        )
    return pairs


def opt_in_sets(matrix: Matrix) -> str:
    """The opt-in sets and their variants, for messages: `newer: a, b; intel-2023: c`."""
    return "; ".join(f"{s.name}: {', '.join(s.variants)}" for s in matrix.opt_in)
