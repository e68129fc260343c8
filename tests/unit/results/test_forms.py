"""A model form's check as results keep it: made here by the runtime's own comparison
(bench/workload_forms.py's compare_outputs, on numpy arrays whose differences are known), read
into a FormCheck, written and read back unchanged, and valid to the declared schema."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
from support.synthetic import session, write

from tfbuild.bench import workload_forms
from tfbuild.bench.failures import form_check_of
from tfbuild.resources import data_path
from tfbuild.results.codec import load
from tfbuild.results.forms import FormCheck, form_check, form_check_json
from tfbuild.results.schema import SCHEMA_FILE

MADE = {"tensorflow": "2.21.0", "interpreter": "ai-edge-litert", "interpreter_version": "2.3.0"}


def checked(got: dict[str, Any], reference: dict[str, Any]) -> FormCheck:
    """The payload's check of `got` against `reference`, as a litert process answers it, read
    as the session reads it (bench/failures.py)."""
    found = workload_forms.compare_outputs(np, reference, got, 1e-4, 1e-3)
    check = form_check_of({**found, "form": "litert", **MADE})
    assert check is not None
    return check


REFERENCE: dict[str, Any] = {
    "probs": np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]], dtype=np.float32),
    "label": np.array([1, 0], dtype=np.int64),
}


def test_a_check_keeps_each_outputs_errors_and_what_made_the_form() -> None:
    off = {"probs": REFERENCE["probs"] + np.float32(2e-5), "label": REFERENCE["label"].copy()}
    check = checked(off, REFERENCE)
    assert check.ok and not check.uniform and check.form == "litert"
    assert (check.atol, check.rtol) == (1e-4, 1e-3)
    by_name = {o.output: o for o in check.outputs}
    assert by_name["label"].max_abs == 0.0 and by_name["label"].ok
    assert abs((by_name["probs"].max_abs or 0) - 2e-5) < 1e-6
    assert abs((check.max_rel or 0) - 2e-5 / 0.1) < 1e-5  # the smallest value moved the most
    assert (check.tensorflow, check.interpreter, check.interpreter_version) == (
        "2.21.0", "ai-edge-litert", "2.3.0",
    )  # fmt: skip
    assert form_check(form_check_json(check)) == check


def test_a_failed_check_keeps_its_figures_nan_where_there_was_none_and_missing_outputs() -> None:
    """NaN where the as-given form has a number (the unfrozen conversion's symptom), an
    output of another shape, an output the form lacks: each is failed and said."""
    nan = REFERENCE["probs"].copy()
    nan[0, 1] = np.nan
    check = checked({"probs": nan}, REFERENCE)
    assert not check.ok
    by_name = {o.output: o for o in check.outputs}
    assert by_name["probs"].nonfinite == 1 and not by_name["probs"].ok
    assert by_name["label"].problem == "the form lacks it" and not by_name["label"].ok
    shaped = checked({**REFERENCE, "probs": REFERENCE["probs"][:1]}, REFERENCE)
    (probs,) = [o for o in shaped.outputs if o.output == "probs"]
    assert probs.problem == "float32 (1, 3), not float32 (2, 3)" and not shaped.ok
    for each in (check, shaped):
        assert form_check(form_check_json(each)) == each


def test_uniform_outputs_are_marked() -> None:
    """Outputs that are all one value (an untrained classifier's 1/1000 everywhere) pass the
    check while proving nothing: the check says so."""
    flat = {"probs": np.full((2, 3), 1 / 3, dtype=np.float32)}
    check = checked(flat, flat)
    assert check.ok and check.uniform


def test_runs_keep_their_checks_in_results_valid_to_the_schema(tmp_path: Path) -> None:
    results = session({"base:default:litert": 1.5}, rounds=3)
    good = checked(dict(REFERENCE), REFERENCE)
    runs = tuple(
        replace(r, form_check=good) if r.config == "base:default:litert" else r
        for r in results.runs
    )
    path = write(tmp_path / "forms.json", replace(results, runs=runs))
    again = load(path)
    kept = [r.form_check for r in again.runs if r.config == "base:default:litert"]
    assert kept and all(c == good for c in kept)
    assert all(r.form_check is None for r in again.runs if r.config != "base:default:litert")
    declared = jsonschema.Draft202012Validator(json.loads(data_path(SCHEMA_FILE).read_text()))
    document = json.loads(path.read_text())
    assert list(declared.iter_errors(document)) == []
    (run,) = [r for r in document["runs"] if "form_check" in r][:1]
    run["form_check"]["outputs"][0]["max_abs"] = -1.0
    run["form_check"]["form"] = "as-given"
    assert len(list(declared.iter_errors(document))) == 2


def test_no_answer_is_no_check() -> None:
    assert form_check_of(None) is None and form_check_of({}) is None


def test_a_check_reads_as_a_typed_record() -> None:
    assert isinstance(checked(dict(REFERENCE), REFERENCE), FormCheck)
