"""--only and --skip over model forms: a pattern's third part picks forms, a pattern without
one takes every form; what selects nothing says which forms there are."""

from __future__ import annotations

import dataclasses

import pytest
from support.env import REPO

from tfbuild.config.load import load_matrix
from tfbuild.errors import SelectionError
from tfbuild.plan.select import select

FORMS = dataclasses.replace(
    load_matrix(REPO / "matrix.yaml"), forms=("as-given", "optimized", "litert")
)


def keys(**given: list[str]) -> list[str]:
    return [
        f"{v.name}:{t.name}" + ("" if form == "as-given" else f":{form}")
        for v, t, form in select(FORMS, **given)
    ]


def test_a_form_part_picks_forms_and_no_form_part_takes_them_all() -> None:
    assert keys(only=["stock:default"]) == [
        "stock:default",
        "stock:default:optimized",
        "stock:default:litert",
    ]
    assert keys(only=["stock:default:litert", "stock:default:as-given"]) == [
        "stock:default",
        "stock:default:litert",
    ]
    assert keys(only=["stock:*:lit*"]) == [f"stock:{t.name}:litert" for t in FORMS.tunings]
    assert keys(only=["stock:single-thread"], skip=["*:*:optimized"]) == [
        "stock:single-thread",
        "stock:single-thread:litert",
    ]
    assert keys(only=["stock:default:as-given"]) == ["stock:default"]


def test_a_form_pattern_that_selects_nothing_says_the_forms() -> None:
    with pytest.raises(SelectionError) as nothing:
        select(FORMS, only=["stock:default:tflite"])
    said = str(nothing.value)
    assert "; forms: as-given, optimized, litert)" in said, said
    assert "patterns are VARIANT, VARIANT:TUNING or VARIANT:TUNING:FORM" in said
    with pytest.raises(SelectionError, match="did you mean 'stock:default:litert'"):
        select(FORMS, only=["stock:default:litrt"])
