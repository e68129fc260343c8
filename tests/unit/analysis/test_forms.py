"""Each build's model forms as their processes checked them against the as-given form: the
largest errors any process saw, the processes that failed the check, outputs too uniform for
the check to mean anything; and what `compare` says of them (terminal, Markdown, JSON), a form
that failed its check never ranked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
from support.cli import compare
from support.synthetic import BENCHMARKS, session, write

from tfbuild.analysis.forms import form_figures
from tfbuild.analysis.sessions import Session
from tfbuild.bench import workload_forms
from tfbuild.bench.failures import form_check_of
from tfbuild.results.forms import FormCheck
from tfbuild.results.model import Results

REFERENCE = {"probs": np.array([[0.1, 0.7, 0.2], [0.5, 0.25, 0.25]], dtype=np.float32)}
LITERT = {"tensorflow": "2.21.0", "interpreter": "ai-edge-litert", "interpreter_version": "2.3.0"}


def check(
    form: str, shift: float, uniform: bool = False, atol: float = 1e-4, rtol: float = 1e-3
) -> FormCheck:
    """The runtime's own comparison of outputs `shift` away from the reference."""
    reference = {"probs": np.full((2, 3), 0.25, np.float32)} if uniform else REFERENCE
    got = {"probs": reference["probs"] + np.float32(shift)}
    found = workload_forms.compare_outputs(np, reference, got, atol, rtol)
    made = LITERT if form.startswith("litert") else {"tensorflow": "2.21.0"}
    read = form_check_of({**found, "form": form, **made})
    assert read is not None
    return read


def with_checks(results: Results, checks: dict[str, list[FormCheck]]) -> Results:
    """Each config's runs given its checks, round after round."""
    runs = []
    for run in results.runs:
        found = checks.get(run.config)
        runs.append(replace(run, form_check=found[run.round % len(found)]) if found else run)
    return replace(results, runs=tuple(runs))


def sessions_of_three_forms() -> Results:
    """litert ahead and within tolerance (its errors differ by round), optimized failing its
    check in every process (so it measured nothing)."""
    results = session(
        {"base:default:litert": 1.6, "base:default:optimized": 1.2},
        rounds=4,
        failing={"base:default:optimized": list(BENCHMARKS)},
    )
    return with_checks(
        results,
        {
            "base:default:litert": [check("litert", 1e-6), check("litert", 3e-5)],
            "base:default:optimized": [check("optimized", 0.05)],
        },
    )


def test_the_worst_check_of_each_form_and_its_failures_are_counted() -> None:
    (litert, optimized) = form_figures([Session(Path("s.json"), sessions_of_three_forms())])
    assert (litert.variant, litert.form, litert.processes, litert.failed) == (
        "base",
        "litert",
        4,
        0,
    )
    assert litert.max_abs is not None and abs(litert.max_abs - 3e-5) < 1e-6  # the worst round's
    assert litert.max_rel is not None and abs(litert.max_rel - 3e-5 / 0.1) < 1e-4
    assert litert.made_by == "TensorFlow 2.21.0's converter, ai-edge-litert 2.3.0"
    assert not litert.uniform
    assert (optimized.form, optimized.processes, optimized.failed) == ("optimized", 4, 4)
    assert optimized.made_by == "TensorFlow 2.21.0"
    uniform = with_checks(
        session({"base:default:litert": 1.0}, rounds=2),
        {"base:default:litert": [check("litert", 0.0, uniform=True)]},
    )
    (flat,) = form_figures([Session(Path("s.json"), uniform)])
    assert flat.uniform and flat.failed == 0 and flat.max_abs == 0.0


def test_compare_says_each_forms_errors_and_never_ranks_one_that_failed(tmp_path: Path) -> None:
    path = write(tmp_path / "forms.json", sessions_of_three_forms())
    proc = compare(str(path))
    assert proc.returncode == 0, proc.stderr
    said = " ".join(proc.stdout.split())
    assert (
        "Form litert of base: max abs error 3e-05, max rel error 0.0003 against the as-given "
        "outputs (allowed 0.0001 + 0.001 x |as-given|), within them in all 4 processes; made by "
        "TensorFlow 2.21.0's converter, ai-edge-litert 2.3.0"
    ) in said, said[:3000]
    assert (
        "Form optimized of base: max abs error 0.05, max rel error 0.5 against the as-given "
        "outputs (allowed 0.0001 + 0.001 x |as-given|), outside the tolerances in 4 of 4 "
        "processes, which measured nothing; made by TensorFlow 2.21.0"
    ) in said
    document = json.loads(compare(str(path), "--format", "json").stdout)
    (host,) = document["hosts"]
    ranked = [e["config"] for e in host["ranking"]]
    assert "base:default:litert" in ranked and "base:default:optimized" not in ranked
    forms = {(f["form"], f["failed"]) for f in host["forms"]}
    assert forms == {("litert", 0), ("optimized", 4)}
    markdown = compare(str(path), "--format", "markdown").stdout
    assert "- Form litert of base: max abs error 3e-05" in markdown


def test_sessions_without_forms_say_nothing_of_them() -> None:
    """No check, no line and no JSON key: the committed sessions' reports are unchanged."""
    assert form_figures([Session(Path("s.json"), session({"x:default": 1.1}, rounds=2))]) == ()


def test_an_answer_to_switch_to_int8_says_what_it_costs_in_accuracy(tmp_path: Path) -> None:
    """litert-int8 ahead by far, its outputs 0.004 off (let through by --atol 0.01): the
    answer to use it is followed at once by that error and the tolerance that let it pass;
    float litert, also ahead, gets no such line."""
    results = with_checks(
        session({"base:default:litert-int8": 3.0, "base:default:litert": 1.5}, rounds=12),
        {
            "base:default:litert-int8": [check("litert-int8", 0.004, atol=0.01, rtol=0.0)],
            "base:default:litert": [check("litert", 1e-6)],
        },
    )
    proc = compare(str(write(tmp_path / "int8.json", results)))
    assert proc.returncode == 0, proc.stderr
    lines = [" ".join(line.split()) for line in proc.stdout.split("\n\n")]
    said = " ".join(proc.stdout.split())
    assert "Use base:default:litert-int8: " in said, said[:3000]
    answer = next(p for p in lines if p.startswith("Use base:default:litert-int8: "))
    assert (
        "base:default:litert-int8 is quantized to int8: its outputs differ from the as-given "
        "form's by up to 0.004 (max abs), 0.04 (max rel), allowed 0.01 + 0 x |as-given| "
        "(--atol, --rtol)"
    ) in answer, answer
    assert "base:default:litert is quantized" not in said
    assert (
        "Form litert-int8 of base: max abs error 0.004, max rel error 0.04 against the "
        "as-given outputs (allowed 0.01 + 0 x |as-given|), within them in all 12 processes; "
        "made by TensorFlow 2.21.0's converter (int8, calibrated on the workload's inputs), "
        "ai-edge-litert 2.3.0"
    ) in said
