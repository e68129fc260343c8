"""Builds that ran with a different Keras or numpy measured different work: the report says
which, with each version and its variants (smoke reports as the payload writes them)."""

from __future__ import annotations

from tfbuild.analysis.software import software_differences
from tfbuild.results.model import VariantRecord


def _ready(
    tensorflow: str, keras: str | None, distribution: str | None, numpy: str
) -> VariantRecord:
    smoke = {"tensorflow": tensorflow, "keras": keras, "keras_distribution": distribution,
             "numpy": numpy}  # fmt: skip
    return VariantRecord(definition={}, status="ready", smoke=smoke)


def test_a_keras_nightly_build_is_named_beside_the_release_build() -> None:
    variants = {
        "stock-2.21": _ready("2.21.0", "3.12.0", "keras", "2.3.5"),
        "stock-2.22": _ready("2.22.0rc0", "3.13.0.dev2026102303", "keras-nightly", "2.3.5"),
        "failed": VariantRecord(definition={}, status="failed"),
    }
    (line,) = software_differences(variants)
    assert line == (
        "the builds ran different keras: 3.12.0 (stock-2.21); keras-nightly "
        "3.13.0.dev2026102303 (stock-2.22); gru-keras runs Keras's own GRU layer and optimizer "
        "step, so the difference is part of what is measured"
    )


def test_same_software_says_nothing_and_numpy_is_checked_too() -> None:
    same = {"a": _ready("2.21.0", "3.12.0", "keras", "2.3.5"),
            "b": _ready("2.21.0", "3.12.0", "keras", "2.3.5")}  # fmt: skip
    assert software_differences(same) == []
    old = {"a": _ready("2.21.0", "3.12.0", "keras", "2.3.5"),
           "intel": _ready("2.14.0", None, None, "1.26.4")}  # fmt: skip
    lines = software_differences(old)
    assert lines[0].startswith("the builds ran different keras: 3.12.0 (a); none found (intel)")
    assert lines[1].startswith("the builds ran different numpy: 2.3.5 (a); 1.26.4 (intel); ")
