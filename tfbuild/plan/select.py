"""Selection: which (variant, tuning, form) configs --only and --skip pick.

Patterns are fnmatch patterns over variant names (or ids), optionally with a tuning part and a
model form part: ``mkl-*`` selects every config of the matching variants, ``stock:single-*``
only some tunings of one variant, ``*:*:litert`` one model form of every build and tuning (a
pattern without a form part takes every form, as-given among them). The variants of the matrix's
opt-in sets are left out unless their set is named (--with) or a pattern names the variant
itself, without wildcards."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence

from tfbuild.config.model import Matrix, Tuning, Variant
from tfbuild.config.values import did_you_mean
from tfbuild.errors import SelectionError


def _matches(pattern: str, variant: Variant, tuning: Tuning, form: str) -> bool:
    variant_part, _, rest = pattern.partition(":")
    tuning_part, _, form_part = rest.partition(":")
    if not (
        fnmatch.fnmatchcase(variant.name, variant_part)
        or fnmatch.fnmatchcase(variant.id, variant_part)
    ):
        return False
    if tuning_part and not fnmatch.fnmatchcase(tuning.name, tuning_part):
        return False
    return not form_part or fnmatch.fnmatchcase(form, form_part)


def _named(only: Sequence[str], variant: Variant) -> bool:
    return any(p.partition(":")[0] in (variant.name, variant.id) for p in only)


def select(
    matrix: Matrix,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    opt_in: Sequence[str] = (),
) -> list[tuple[Variant, Tuning, str]]:
    """The (variant, tuning, form) configs picked by --with / --only / --skip, in matrix
    order."""
    opted = matrix.opted_in(opt_in)
    candidates = [
        v
        for v in matrix.variants
        if v.name not in matrix.left_out or v.name in opted or _named(only, v)
    ]
    picked = [
        (v, t, form)
        for v in candidates
        for t in matrix.tunings
        for form in matrix.forms
        if (not only or any(_matches(p, v, t, form) for p in only))
        and not any(_matches(p, v, t, form) for p in skip)
    ]
    if not picked:
        given = " ".join(
            [
                *(f"--with {n}" for n in opt_in),
                *(f"--only {p!r}" for p in only),
                *(f"--skip {p!r}" for p in skip),
            ]
        )
        names = [v.name for v in matrix.variants]
        names += [f"{v.name}:{t.name}" for v in matrix.variants for t in matrix.tunings]
        names += [f"{n}:{form}" for n in names if n.count(":") == 1 for form in matrix.forms]
        hint = next(
            (h for p in only if not any(c in p for c in "*?[") and (h := did_you_mean(p, names))),
            "",
        )
        raise SelectionError(
            f"{given} selects nothing in {matrix.path}{hint} "
            f"(variants: {', '.join(v.name for v in candidates)}; "
            f"tunings: {', '.join(t.name for t in matrix.tunings)}"
            + (f"; forms: {', '.join(matrix.forms)}" if len(matrix.forms) > 1 else "")
            + "); patterns are VARIANT, VARIANT:TUNING or VARIANT:TUNING:FORM, with * and ? "
            "wildcards"
            + (
                f"; opt-in variants come with --with SET ({opt_in_sets(matrix)}) or by name"
                if matrix.opt_in
                else ""
            )
        )
    return picked


def opt_in_sets(matrix: Matrix) -> str:
    """The opt-in sets and their variants, for messages: `newer: a, b; intel-2023: c`."""
    return "; ".join(f"{s.name}: {', '.join(s.variants)}" for s in matrix.opt_in)
