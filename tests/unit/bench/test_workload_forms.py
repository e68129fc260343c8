"""A model form's check against the as-given form, on numpy arrays: what passes, what fails and
with which figures, and when the check proves nothing. (Making the forms needs TensorFlow and
LiteRT: tests/integration/test_forms.py.)"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tfbuild.bench import workload_forms as forms
from tfbuild.bench.workload_payload import FORMS, prepare

TF = SimpleNamespace(__version__="2.21.0")
"""What the check reads of TensorFlow: its version, recorded with the result."""
REFERENCE = {"logits": np.array([[0.25, -1.5, 3.0, 0.0]], np.float32)}


def check(
    got: dict[str, np.ndarray], atol: float = forms.ATOL, rtol: float = forms.RTOL
) -> dict[str, Any]:
    return forms.compare_outputs(np, REFERENCE, got, atol, rtol)


def test_outputs_within_the_tolerances_pass_with_their_errors() -> None:
    got = {"logits": REFERENCE["logits"] + np.float32(2e-5)}
    made, result = forms.checked(np, TF, {}, "optimized", lambda: REFERENCE, lambda: got)
    assert made() is got and result == {**check(got), "form": "optimized", "tensorflow": "2.21.0"}
    assert result["ok"] and not result["uniform"]
    (entry,) = result["outputs"]
    assert entry["max_abs"] == pytest.approx(2e-5, rel=0.05)
    assert entry["max_rel"] == pytest.approx(2e-5 / 0.25, rel=0.05)  # on the smallest nonzero
    assert entry["nonfinite"] == 0 and entry["shape"] == [1, 4]


def test_an_error_beyond_the_tolerances_fails_and_says_it() -> None:
    got = {"logits": REFERENCE["logits"] * np.float32(1.01)}
    result = check(got)
    assert not result["ok"]
    with pytest.raises(forms.FormMismatch) as raised:
        forms.checked(np, TF, {}, "optimized", lambda: REFERENCE, lambda: got)
    said = str(raised.value)
    assert said.startswith("the optimized form's outputs differ from the as-given form's (")
    assert "logits: max abs error 0.03, max rel error 0.01" in said
    assert "allowed 0.0001 + 0.001 x |as-given|" in said
    assert raised.value.check["outputs"][0]["max_abs"] == pytest.approx(0.03, rel=1e-3)
    # the same outputs pass where the tolerances asked for allow them
    assert check(got, atol=0.0, rtol=0.02)["ok"]


def test_nan_or_inf_where_the_as_given_form_has_none_fails_whatever_the_tolerance() -> None:
    got = {"logits": np.array([[np.nan, -1.5, np.inf, 0.0]], np.float32)}
    result = check(got, atol=1e9, rtol=1e9)
    assert not result["ok"] and result["outputs"][0]["nonfinite"] == 2
    with pytest.raises(
        forms.FormMismatch, match="2 NaN/Inf the as-given form does not have there"
    ) as raised:
        forms.checked(np, TF, {"atol": 1e9}, "litert", lambda: REFERENCE, lambda: got)
    assert raised.value.check["tensorflow"] == "2.21.0"
    assert raised.value.check["interpreter"] == "ai-edge-litert"
    # NaN in both: nothing new, so no failure for it
    both = {"logits": np.array([[np.nan, 1.0]])}
    assert forms.compare_outputs(np, both, both, 0.0, 0.0)["ok"]


def test_nan_and_inf_must_be_where_the_as_given_form_has_them_and_of_its_sign() -> None:
    reference = {"y": np.array([np.nan, np.inf, 1.0])}
    assert forms.compare_outputs(np, reference, dict(reference), 0.0, 0.0)["ok"]
    for other in ([0.0, np.inf, 1.0], [np.nan, -np.inf, 1.0], [np.nan, 5.0, 1.0]):
        result = forms.compare_outputs(np, reference, {"y": np.array(other)}, 1e9, 1e9)
        assert not result["ok"] and result["outputs"][0]["nonfinite"] == 1, other


def test_integer_and_boolean_outputs_must_be_equal_whatever_the_tolerance() -> None:
    ids = {"ids": np.array([20000, 3], np.int64), "mask": np.array([True, False])}
    assert forms.compare_outputs(np, ids, dict(ids), 1.0, 1.0)["ok"]
    off = {**ids, "ids": np.array([20005, 3], np.int64)}
    result = forms.compare_outputs(np, ids, off, 1.0, 1.0)
    assert not result["ok"] and result["outputs"][0]["max_abs"] == 5.0
    flipped = {**ids, "mask": np.array([True, True])}
    assert not forms.compare_outputs(np, ids, flipped, 1.0, 1.0)["ok"]


def test_another_dtype_fails_and_says_both() -> None:
    got = {"logits": REFERENCE["logits"].astype(np.float16)}
    with pytest.raises(
        forms.FormMismatch, match=re.escape("logits: float16 (1, 4), not float32 (1, 4)")
    ):
        forms.checked(np, TF, {}, "litert", lambda: REFERENCE, lambda: got)


def test_a_missing_output_or_another_shape_fails() -> None:
    assert not check({})["ok"]
    assert check({})["outputs"][0]["missing"] == "form"
    with pytest.raises(forms.FormMismatch, match="logits: missing from the litert form"):
        forms.checked(np, TF, {}, "litert", lambda: REFERENCE, dict)
    assert not check({"logits": REFERENCE["logits"], "extra": np.zeros(1)})["ok"]
    other = check({"logits": REFERENCE["logits"].reshape(4, 1)})
    assert not other["ok"] and other["outputs"][0]["form_shape"] == [4, 1]


def test_outputs_of_one_value_make_the_check_prove_nothing() -> None:
    """MobileNetV3Small with weights=None answers 1/1000 for every class and every input: any
    form that returns a constant passes, so the result says so."""
    flat = {"probabilities": np.full((1, 1000), 1e-3, np.float32)}
    result = forms.compare_outputs(np, flat, flat, forms.ATOL, forms.RTOL)
    assert result["ok"] and result["uniform"]
    assert not check(dict(REFERENCE))["uniform"]


@pytest.mark.parametrize(
    ("form", "kind", "jit", "said"),
    [
        (
            "tflite",
            "savedmodel",
            False,
            "unknown form 'tflite' (known: as-given, optimized, litert, litert-int8)",
        ),
        (
            "litert",
            "keras",
            False,
            "the litert form is made from a SavedModel signature, not a keras",
        ),
        ("optimized", "script", False, "made from a SavedModel signature, not a script"),
        ("litert", "savedmodel", True, "the litert form cannot run under an XLA (jit) tuning"),
    ],
)
def test_a_form_the_workload_cannot_take_is_refused_before_loading(
    form: str, kind: str, jit: bool, said: str
) -> None:
    assert "as-given" in FORMS and form not in ("as-given",)
    spec = {"kind": kind, "path": "/nonexistent", "form": form, "jit": jit}
    with pytest.raises(forms.FormRefused, match=re.escape(said)):
        prepare(np, None, spec)


def test_the_forms_are_the_same_wherever_they_are_named() -> None:
    """The runtime's lists (it cannot import tfbuild), the host's and the results schema's."""
    import json

    from tfbuild.config import values
    from tfbuild.resources import data_path

    assert FORMS == values.FORMS == ("as-given", *forms.KNOWN)
    assert set(values.QUANTIZED) <= set(forms.KNOWN) and set(values.FORM_PACKAGES) <= set(FORMS)
    schema = json.loads(data_path("schemas/results.schema.json").read_text())
    text = json.dumps(schema)
    others = "|".join(forms.KNOWN)
    assert f"(:({others}))?(~aa)?$" in text
    assert text.count(json.dumps(list(forms.KNOWN))) == 2  # a config's form, a form_check's
