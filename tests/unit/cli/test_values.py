"""What option values mean: each parsed into the typed value a command's settings hold, and a
user mistake named with its option, its value and what is accepted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tfbuild.cli.values import (
    SuiteRequest,
    cache_folder,
    parse_cpus,
    parse_fraction,
    parse_host_key,
    results_paths,
    workload_request,
)
from tfbuild.config.load import load_matrix
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
    ],
)
def test_a_fraction_out_of_range_is_named(given: str, said: str) -> None:
    with pytest.raises(UsageError, match=f"--fail-above {given!r}: {said}"):
        parse_fraction("--fail-above", given)


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
    quick = SuiteRequest.parse(quick=True).settings(suite)
    assert quick == suite.preset("quick")
    longer = SuiteRequest.parse(budget="1h30m", resolve="4%", min_rounds=99).settings(suite)
    assert (longer.budget_s, longer.resolve, longer.min_rounds) == (5400.0, 0.04, 99)
    assert longer.max_rounds >= 99 and longer.rounds is None
    fixed = SuiteRequest.parse(rounds=6).settings(suite)
    assert fixed.rounds == 6
    for kwargs, said in (
        ({"quick": True, "preset": "full"}, "give --quick or --preset"),
        ({"budget": "soon"}, "--budget 'soon': expected a duration like 15m"),
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
    assert cache_folder(tmp_path) == tmp_path and cache_folder(None).name == "tfbuild"
