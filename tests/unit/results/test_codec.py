"""Results files: read and written only through the typed model, every problem named by its
place."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.cli import compare, run_tfbuild
from support.synthetic import edited

from tfbuild.results.codec import load


def test_results_load_refuses_other_files(tmp_path: Path) -> None:
    from tfbuild.errors import ResultsError

    bad = tmp_path / "x.json"
    bad.write_text(json.dumps({"schema": "tfbuild.host/1"}))
    expected = r"another tfbuild document \(tfbuild\.host/1\); expected a file of schema 'tfbuild"
    with pytest.raises(ResultsError, match=expected):
        load(bad)
    bad.write_text("{")
    with pytest.raises(ResultsError, match="not a JSON results file"):
        load(bad)


def sample(document: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = document["runs"][3]["benchmarks"]["gru-keras"]["samples"][1]
    return entry


def set_sample(value: object) -> Callable[[dict[str, Any]], None]:
    return lambda d: sample(d).__setitem__("throughput", value)


RESULTS = {
    "no host": (edited(lambda d: d.pop("host")), "results.json: host: missing"),
    "no runs": (edited(lambda d: d.pop("runs")), "results.json: runs: missing"),
    "runs not a list": (edited(lambda d: d.__setitem__("runs", {})), "runs: an object where"),
    "unknown config": (
        edited(lambda d: d["runs"][2].__setitem__("config", "ghost:default")),
        "runs[2].config: 'ghost:default' is not among configs",
    ),
    "negative throughput": (
        edited(set_sample(-5.0)),
        "runs[3].benchmarks.gru-keras.samples[1].throughput: -5.0 is not a positive number",
    ),
    "string throughput": (
        edited(set_sample("fast")),
        "runs[3].benchmarks.gru-keras.samples[1].throughput: 'fast' where a number belongs",
    ),
    "NaN throughput": (
        edited(set_sample(float("nan"))),
        "runs[3].benchmarks.gru-keras.samples[1].throughput: nan is not a finite number",
    ),
}


@pytest.mark.parametrize("case", sorted(RESULTS))
def test_compare_refuses_a_damaged_results_file(case: str, tmp_path: Path) -> None:
    make, message = RESULTS[case]
    path = make(tmp_path)
    proc = run_tfbuild("compare", str(path))
    assert proc.returncode == 9, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"tfbuild: {path}") and message in line, line


def test_not_a_results_file(tmp_path: Path) -> None:
    bad = tmp_path / "host.json"
    bad.write_text(json.dumps({"schema": "tfbuild.host/1"}))
    proc = compare(str(bad))
    assert proc.returncode == 9 and "expected a file of schema 'tfbuild.results/2'" in proc.stderr


FIXTURES = Path(__file__).parents[2] / "fixtures" / "results"


def test_each_schema_version_is_read_as_that_version_wrote_it(tmp_path: Path) -> None:
    """Version 1 gave one sample count for the whole suite and called the warm-up `warmup`;
    version 2 counts per benchmark. A file is read by the version it names, not by the
    shape of its data: a version-2 file with version 1's suite is refused by its place."""
    from tfbuild.errors import ResultsError
    from tfbuild.results.codec import to_json
    from tfbuild.results.model import SCHEMA

    old_path = FIXTURES / "session-default-quick.json"
    recorded = json.loads(old_path.read_text())
    assert recorded["schema"] == "tfbuild.results/1" and isinstance(
        recorded["suite"]["samples"], int
    )
    old = load(old_path)
    assert old.suite.samples == {
        b: recorded["suite"]["samples"] for b in recorded["suite"]["benchmarks"]
    }
    assert old.suite.warmup_steps == recorded["suite"]["warmup"]
    # written again, it is a version-2 file, and it reads back the same
    again = tmp_path / "again.json"
    again.write_text(json.dumps(to_json(old)))
    assert json.loads(again.read_text())["schema"] == SCHEMA
    assert load(again).suite == old.suite and load(again).runs == old.runs
    mislabelled = tmp_path / "mislabelled.json"
    mislabelled.write_text(json.dumps({**recorded, "schema": SCHEMA}))
    with pytest.raises(ResultsError, match=r"mislabelled\.json: looks: missing"):
        load(mislabelled)


def test_a_forked_process_keeps_its_zygote_and_a_look_its_answer(tmp_path: Path) -> None:
    """Each run names the zygote it was forked from, and a look of rules 6 the answer it
    decided and whether it was held; written and read back, both are as they were, and the
    file passes the schema. A run recorded before zygotes were (a fresh process, or a forked
    one of an older session) reads as none."""
    from dataclasses import replace

    from support.env import FIXTURES

    from tfbuild.results.codec import run_json, to_json
    from tfbuild.results.documents import write_json
    from tfbuild.results.model import Look

    recorded = load(FIXTURES / "results" / "aa-run.json")
    runs = tuple(replace(r, zygote=f"z{r.round // 3}-{r.config}") for r in recorded.runs)
    look = replace((recorded.looks or ())[-1], answer="stock:default", held=True)
    doc = replace(recorded, runs=runs, looks=(*(recorded.looks or ())[:-1], look))
    path = tmp_path / "zygotes.json"
    write_json(path, to_json(doc))
    again = load(path)
    assert [r.zygote for r in again.runs] == [r.zygote for r in runs]
    last = (again.looks or ())[-1]
    assert isinstance(last, Look) and (last.answer, last.held) == ("stock:default", True)
    assert "zygote" not in run_json(recorded.runs[0])
    assert {r.zygote for r in recorded.runs} == {None}


def test_a_session_keeps_the_weights_it_was_decided_on(tmp_path: Path) -> None:
    """--weight of bench and run is recorded with the suite: written and read back it is as
    it was, the file passes the schema (which refuses a negative weight), and a session
    recorded without weights reads as all equal."""
    from dataclasses import replace

    import jsonschema
    from support.env import FIXTURES

    from tfbuild.resources import data_path
    from tfbuild.results.codec import to_json
    from tfbuild.results.documents import write_json
    from tfbuild.results.schema import SCHEMA_FILE

    recorded = load(FIXTURES / "results" / "aa-run.json")
    assert recorded.suite.weights == {}
    weighed = replace(recorded, suite=replace(recorded.suite, weights={"gru-keras": 3.0}))
    path = tmp_path / "weighed.json"
    write_json(path, to_json(weighed))
    assert load(path).suite.weights == {"gru-keras": 3.0}
    declared = jsonschema.Draft202012Validator(json.loads(data_path(SCHEMA_FILE).read_text()))
    document = json.loads(path.read_text())
    assert list(declared.iter_errors(document)) == []
    document["suite"]["weights"]["gru-keras"] = -1
    assert [e.json_path for e in declared.iter_errors(document)] == ["$.suite.weights['gru-keras']"]
    assert "weights" not in to_json(recorded)["suite"]


def test_a_config_keeps_its_model_form_and_older_results_read_as_given(tmp_path: Path) -> None:
    """A config measured in a model form records it (key VARIANT:TUNING:FORM, and `form`):
    written and read back it is as it was, and the file passes the declared schema, which
    refuses a form it does not know; a config recorded before forms reads as as-given and is
    written without the key."""
    import jsonschema
    from support.env import FIXTURES
    from support.synthetic import session, write

    from tfbuild.resources import data_path
    from tfbuild.results.codec import to_json
    from tfbuild.results.schema import SCHEMA_FILE

    old = load(FIXTURES / "results" / "aa-run.json")
    assert {c.form for c in old.configs} == {"as-given"}
    assert all("form" not in c for c in to_json(old)["configs"])
    path = write(tmp_path / "forms.json", session({"base:default:optimized": 1.5}))
    again = load(path)
    assert {c.key: c.form for c in again.configs} == {
        "base:default": "as-given", "base:default~aa": "as-given",
        "base:default:optimized": "optimized",
    }  # fmt: skip
    declared = jsonschema.Draft202012Validator(json.loads(data_path(SCHEMA_FILE).read_text()))
    document = json.loads(path.read_text())
    assert list(declared.iter_errors(document)) == []
    (entry,) = [c for c in document["configs"] if c.get("form")]
    assert entry["form"] == "optimized" and entry["key"] == "base:default:optimized"
    entry["form"], entry["key"] = "lite", "base:default:lite"
    assert len(list(declared.iter_errors(document))) == 2
    path.write_text(json.dumps(document))
    proc = compare(str(path))
    assert proc.returncode != 0 and "base:default:lite" in proc.stderr, proc.stderr
