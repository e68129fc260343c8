"""What option values mean: each parsed into the typed value a command's settings hold, and a
user mistake named with its option, its value and what is accepted."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from support.cli import RESULTS, run_tfbuild

from tfbuild.bench.session import design_of
from tfbuild.cli.values import (
    SuiteRequest,
    parse_cpus,
    parse_forms,
    parse_fraction,
    parse_host_key,
    parse_weights,
    results_paths,
    workload_request,
)
from tfbuild.config.load import load_matrix
from tfbuild.config.model import Budget
from tfbuild.config.settings import Cascade
from tfbuild.errors import UsageError
from tfbuild.resources import default_matrix_path


@pytest.mark.parametrize(("given", "number"), [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125)])
def test_a_fraction_is_a_percentage_or_a_number(given: str, number: float) -> None:
    assert parse_fraction("--fail-above", given) == pytest.approx(number)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("fast", "expected a percentage like 5% or 0.05"),
        ("100%", "expected a value between 0% and 100%"),
        ("0", "expected a value between 0% and 100%"),
        ("150", "expected a value between 0% and 100%"),
        ("5", "a number without % is a fraction (0.05 is 5%); did you mean 5%?"),
        ("1", "a number without % is a fraction (0.05 is 5%); did you mean 1%?"),
    ],
)
def test_a_fraction_out_of_range_is_named(given: str, said: str) -> None:
    with pytest.raises(UsageError, match=f"--fail-above {given!r}: {re.escape(said)}"):
        parse_fraction("--fail-above", given)


def test_a_bare_number_for_a_percentage_is_refused_with_the_one_meant() -> None:
    """`--fail-above 5` (meant: 5 %) is a usage error saying so, before anything is compared."""
    results = str(RESULTS / "aa-run-epyc.json.gz")
    proc = run_tfbuild("compare", results, "--against", results, "--fail-above", "5")
    assert proc.returncode == 64, proc.stderr
    assert "--fail-above '5': a number without % is a fraction (0.05 is 5%); did you mean 5%?" in (
        proc.stderr
    )
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "command",
    [
        ("detect",),
        ("matrix",),
        ("compare", str(RESULTS / "session-2x2-10rounds.json")),
        ("compare", str(RESULTS / "aa-run-epyc.json.gz"), "--all"),
    ],
)
def test_output_that_is_not_a_terminal_ends_no_line_with_spaces(command: tuple[str, ...]) -> None:
    """Tables are padded to their width on a terminal; piped to a file or a diff, no line
    ends with a space, and the tables' rows are all there."""
    proc = run_tfbuild(*command, env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    padded = [line for line in proc.stdout.splitlines() if line.endswith(" ")]
    assert padded == [], padded[:5]
    assert len(proc.stdout.splitlines()) > 10


def test_cpus_are_a_list_this_process_may_use() -> None:
    allowed = sorted(os.sched_getaffinity(0))
    assert parse_cpus(None) is None
    assert parse_cpus(str(allowed[0])) == (allowed[0],)
    with pytest.raises(UsageError, match=r"--cpus 'a-b': expected a CPU list like 0 or 0,1"):
        parse_cpus("a-b")
    with pytest.raises(UsageError, match="this process may use CPUs"):
        parse_cpus(str(max(allowed) + 64))


def test_a_host_key_is_short_and_printable() -> None:
    assert parse_host_key("epyc-2vcpu") == "epyc-2vcpu" and parse_host_key(None) is None
    for bad in ("", " ", "x" * 101, "a\nb"):
        with pytest.raises(UsageError, match="--host-key"):
            parse_host_key(bad)


def test_results_are_found_in_files_folders_and_patterns(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps({"schema": "tfbuild.results/2"}))
    (tmp_path / "b.json").write_text(json.dumps({"schema": "tfbuild.results/2"}))
    (tmp_path / "cal.json").write_text(json.dumps({"schema": "tfbuild.calibration/1"}))
    folder = results_paths([str(tmp_path)])
    assert [p.name for p in folder] == ["a.json", "b.json"]  # the calibration passed over
    assert results_paths([str(tmp_path / "a*.json")]) == (tmp_path / "a.json",)
    with pytest.raises(UsageError, match=r"--against '.*nothing\*': no results there"):
        results_paths([str(tmp_path / "nothing*")])


def test_a_suite_request_is_the_preset_with_the_options_on_top() -> None:
    suite = load_matrix(default_matrix_path()).suite
    resolved = Cascade({})
    quick = SuiteRequest.parse(quick=True).settings(suite, resolved)
    assert quick == suite.preset("quick")
    longer = SuiteRequest.parse(budget="1h30m", resolve="4%", min_rounds=99).settings(
        suite, resolved
    )
    assert (longer.budget, longer.resolve, longer.min_rounds) == (Budget(5400.0), 0.04, 99)
    wide = SuiteRequest.parse(budget="5m per config").settings(suite, resolved)
    assert wide.budget == Budget(300.0, per_config=True)
    assert design_of(wide, 16).budget_s == 16 * 300  # the session's, for the configs it plans
    assert design_of(suite.preset(None), 5).budget_s == 20 * 60
    assert longer.max_rounds >= 99 and longer.rounds is None
    fixed = SuiteRequest.parse(rounds=6).settings(suite, resolved)
    assert fixed.rounds == 6
    for kwargs, said in (
        ({"quick": True, "preset": "full"}, "give --quick or --preset"),
        ({"budget": "soon"}, "--budget 'soon': expected a duration like 20m or 1h30m in all"),
        ({"resolve": "half"}, "--resolve 'half': expected a percentage like 5%"),
        ({"rounds": 6, "budget": "1h"}, "--rounds asks for a fixed design"),
    ):
        with pytest.raises(UsageError, match=said):
            SuiteRequest.parse(**kwargs)


def test_workload_options_need_a_workload(tmp_path: Path) -> None:
    assert workload_request({}) is None
    with pytest.raises(UsageError, match="--batch: only with --workload PATH"):
        workload_request({"batch": 8})
    made = workload_request({"workload": tmp_path / "m.keras", "batch": 8, "shapes": ["x=1,2"]})
    assert made is not None and made.batch == 8 and made.shapes == ("x=1,2",)


def test_weights_name_a_measured_benchmark_and_a_number() -> None:
    measured = ["gru-keras", "input-fed"]
    assert parse_weights(["gru-keras=3", " input-fed = 0 "], measured) == {
        "gru-keras": 3.0,
        "input-fed": 0.0,
    }
    assert parse_weights([], measured) == {}
    for values, said in (
        (["gru-keras"], "--weight 'gru-keras': expected BENCHMARK=WEIGHT, like gru-keras=3"),
        (
            ["gru-kers=2"],
            "--weight 'gru-kers=2': these results measured no benchmark 'gru-kers' (only "
            "gru-keras, input-fed); did you mean 'gru-keras'?",
        ),
        (["gru-keras=-1"], "--weight 'gru-keras=-1': expected a weight that is a number >= 0"),
        (["gru-keras=nan"], "expected a weight that is a number >= 0"),
        (["gru-keras=0", "input-fed=0"], "--weight: every benchmark weighs 0"),
    ):
        with pytest.raises(UsageError) as caught:
            parse_weights(values, measured)
        assert said in str(caught.value)


def test_a_session_refuses_a_weight_before_anything_runs(tmp_path: Path) -> None:
    """bench and run check --weight against the benchmarks the session will measure, before
    anything is planned or installed: a user mistake (exit 64), no traceback."""
    proc = run_tfbuild(
        "bench", "--weight", "gru-kers=2", "--results", str(tmp_path), "--runtime", "local"
    )
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert (
        "--weight 'gru-kers=2': this session measures no benchmark 'gru-kers' (only gru-keras"
        in proc.stderr
    )
    assert "did you mean 'gru-keras'?" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(tmp_path.iterdir())


def test_forms_are_named_on_the_command_as_given_among_them() -> None:
    assert parse_forms(None) == ()
    assert parse_forms("litert") == ("as-given", "litert")
    assert parse_forms("optimized, as-given,optimized") == ("as-given", "optimized")
    with pytest.raises(UsageError, match=r"unknown model form 'litrt'.*did you mean 'litert'"):
        parse_forms("as-given,litrt")


def test_a_form_without_a_savedmodel_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """--forms (or the matrix's `forms:`) with no --workload, or with a script, which no form
    can be made from: refused with the reason (exit 64), nothing fetched or measured."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    script = tmp_path / "model.py"
    script.write_text("def step(state):\n    return None\n")
    common = ["bench", "--matrix", str(matrix), "--store", str(tmp_path / "w"),
              "--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    proc = run_tfbuild(*common, "--forms", "as-given,litert")
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr.startswith(
        "tfbuild: --forms: litert: a model form is made from a SavedModel's signature, and "
        "this session has no --workload; expected --workload DIR (a SavedModel)"
    ), proc.stderr
    matrix.write_text(matrix.read_text() + "forms: [as-given, optimized]\n")
    proc = run_tfbuild(*common, "--workload", str(script))
    assert proc.returncode == 64, proc.stderr
    assert f"tfbuild: {matrix}: forms: optimized: a model form is made" in proc.stderr
    assert "--workload is a script" in proc.stderr
    proc = run_tfbuild(*common, "--workload", str(script), "--with-suite")
    assert proc.returncode == 64 and "--with-suite with model forms (optimized)" in proc.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_a_tolerance_needs_a_form_to_hold_to_it(tmp_path: Path) -> None:
    """--atol/--rtol without --workload, or with only the as-given form, which nothing is
    compared with, or a negative one: refused (exit 64) before anything runs."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    model = tmp_path / "model"
    model.mkdir()
    (model / "saved_model.pb").write_bytes(b"")
    common = ["bench", "--matrix", str(matrix), "--store", str(tmp_path / "w"),
              "--results", str(tmp_path / "r"), "--cache-dir", str(tmp_path / "c")]  # fmt: skip
    proc = run_tfbuild(*common, "--rtol", "0.1")
    assert proc.returncode == 64, proc.stderr
    assert "--rtol: only with --workload PATH" in proc.stderr
    proc = run_tfbuild(*common, "--workload", str(model), "--atol", "0.01")
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr.startswith(
        "tfbuild: --atol: a tolerance for a model form's outputs, and this session measures "
        "only as-given; add --forms (e.g. --forms litert-int8) or leave it out"
    ), proc.stderr
    proc = run_tfbuild(*common, "--workload", str(model), "--forms", "litert-int8", "--atol", "-1")
    assert proc.returncode == 64, proc.stderr
    assert "Invalid value for '--atol': -1.0 is not in the range x>=0" in proc.stderr
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_each_suite_setting_is_recorded_with_the_line_or_option_that_set_it(
    tmp_path: Path,
) -> None:
    """The option's, else the preset's line, else the suite's line (a preset keeps the
    suite's other keys), else built in; --min-rounds is named for max_rounds only when it
    raised it, and a sequential option for rounds only when it replaced a fixed design."""
    path = tmp_path / "m.yaml"
    path.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "suite:\n  max_rounds: 30\n  presets:\n    fixed:\n      rounds: 6\n"
    )
    suite = load_matrix(path).suite

    def said(request: SuiteRequest) -> dict[str, tuple[str, str]]:
        resolved = Cascade({})
        request.settings(suite, resolved)
        return {s.name: (s.value, s.source) for s in resolved.settings}

    plain = said(SuiteRequest.parse(preset="fixed"))
    assert plain["suite.rounds"] == ("6", f"matrix {path}:7")
    assert plain["suite.max_rounds"] == ("30", f"matrix {path}:4")
    assert plain["suite.min_rounds"] == ("5", "default")
    assert plain["suite.resolve"] == ("5%", "default")
    lower = said(SuiteRequest.parse(min_rounds=2))
    assert lower["suite.min_rounds"] == ("2", "option --min-rounds")
    assert lower["suite.max_rounds"] == ("30", f"matrix {path}:4")
    raised = said(SuiteRequest.parse(preset="fixed", min_rounds=40, budget="5m"))
    assert raised["suite.max_rounds"] == ("40", "option --min-rounds")
    assert raised["suite.rounds"] == (
        "none", "option --budget, --min-rounds (a sequential design)"
    )  # fmt: skip
    quick = said(SuiteRequest.parse(quick=True))
    assert quick["suite.resolve"] == ("10%", "default (the quick preset)")
    assert quick["suite.max_rounds"] == ("30", f"matrix {path}:4")
