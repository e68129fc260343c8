"""`tfbuild compare`, `replay` and `scenarios` on the committed results, as a user runs them:
what --margin, --weight, --against, --history, --requirements and --output do to the report,
the figures read back from the results files themselves, and each user mistake refused with
one line (exit 64) before anything is analysed."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.cli import RESULTS, run_tfbuild
from support.env import FIXTURES

from tfbuild.analysis.scenarios import SCENARIOS
from tfbuild.cli.comparing import (
    CompareArguments,
    CompareSettings,
    HistorySettings,
    compare,
    named_scenarios,
    saved_scenarios,
)
from tfbuild.cli.options import options_record, resolve_options
from tfbuild.errors import UsageError

AA = RESULTS / "aa-run-epyc.json.gz"
"""A sequential A/A session: stock and a copy of it, 7 benchmarks, no runtime recorded."""
FORMS = RESULTS / "forms-gru.json.gz"
"""A session that recorded the packages of its runtime."""
NIGHTS = FIXTURES / "nights"


def document(path: Path) -> Any:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def compare_json(*args: str) -> dict[str, Any]:
    proc = run_tfbuild("compare", *args, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc: dict[str, Any] = json.loads(proc.stdout)
    return doc


def refused(*args: str) -> str:
    """stderr of a command that must end in a usage error: one line, no traceback."""
    proc = run_tfbuild(*args)
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1, proc.stderr
    return proc.stderr.removesuffix("\n")


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    """The report of the A/A session as it was decided, without options."""
    (host,) = compare_json(str(AA))["hosts"]
    found: dict[str, Any] = host
    return found


def test_margin_replaces_the_one_the_session_was_decided_at(plain: dict[str, Any]) -> None:
    """Without --margin the answer is at the session's --resolve (recorded in its design);
    --margin 3% puts the answer and every benchmark's margin at 3 %."""
    resolve = document(AA)["session"]["design"]["resolve"]
    assert plain["answer"]["margin"] == resolve != 0.03
    (host,) = compare_json(str(AA), "--margin", "3%")["hosts"]
    assert host["answer"]["margin"] == pytest.approx(0.03)
    assert all(m == pytest.approx(0.03) for m in host["margins"].values())
    assert host["margin_source"].startswith("3.0% (given with --margin)")
    assert "the 3.0% margin" in host["answer"]["lines"][0]


@pytest.mark.parametrize("given", ["3", "abc", "0%", "120%"])
def test_a_margin_that_is_no_percentage_is_refused(given: str) -> None:
    assert refused("compare", str(AA), "--margin", given) == (
        f"tfbuild: --margin {given!r}: expected a percentage like 3%"
    )


def test_weights_as_typed_weigh_the_benchmarks_the_others_one(plain: dict[str, Any]) -> None:
    benchmarks = document(AA)["suite"]["benchmarks"]
    assert plain["weights"] == dict.fromkeys(benchmarks, 1.0)  # the session recorded none
    (weighed,) = compare_json(str(AA), "--weight", "gru-keras=3", "--weight", "input-fed=0")[
        "hosts"
    ]
    assert weighed["weights"] == {**dict.fromkeys(benchmarks, 1.0), "gru-keras": 3.0,
                                  "input-fed": 0.0}  # fmt: skip


def test_a_weight_of_a_benchmark_not_measured_names_those_that_were() -> None:
    benchmarks = ", ".join(document(AA)["suite"]["benchmarks"])
    assert refused("compare", str(AA), "--weight", "gru-kers=2") == (
        f"tfbuild: --weight 'gru-kers=2': these results measured no benchmark 'gru-kers' (only "
        f"{benchmarks}); did you mean 'gru-keras'?"
    )


def test_results_gated_against_themselves_pass_with_no_change(tmp_path: Path) -> None:
    """--against a quoted pattern: every config x benchmark of the session
    is compared (the A/A copy aside), each at a ratio of exactly 1, none a regression; the
    gate says how much it compared, on stderr, and exits 0."""
    doc = document(AA)
    configs = [c["key"] for c in doc["configs"] if not c["aa"]]
    benchmarks = doc["suite"]["benchmarks"]
    old = tmp_path / "old"
    old.mkdir()
    shutil.copy(AA, old / AA.name)
    proc = run_tfbuild("compare", str(AA), "--against", str(old / "*.json.gz"), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == f"gate: compared {len(configs)} configs x {len(benchmarks)} benchmarks\n"
    changes = json.loads(proc.stdout)["against"]["changes"]
    assert sorted((c["config"], c["benchmark"]) for c in changes) == sorted(
        (k, b) for k in configs for b in benchmarks
    )
    assert {c["ratio"] for c in changes} == {1.0}
    assert not any(c["regression"] for c in changes)


def test_a_suite_change_fails_the_gate_unless_new_suite_passes() -> None:
    """aa-run.json measured suite v2, aa-run-epyc suite v3: nothing is compared; the gate fails
    (exit 10) naming the cause and the option that lets it pass."""
    old = RESULTS / "aa-run.json"
    assert (document(old)["suite"]["version"], document(AA)["suite"]["version"]) == (2, 3)
    proc = run_tfbuild("compare", str(AA), "--against", str(old))
    assert proc.returncode == 10, proc.stderr
    assert (
        f"tfbuild: the regression gate failed against {old}, 1 cause(s):\n"
        "  nothing compared: every old result is of suite v2, the new ones of suite v3: they "
        "measured different work (--new-suite-passes lets a suite change pass)"
    ) in proc.stderr
    passed = run_tfbuild("compare", str(AA), "--against", str(old), "--new-suite-passes")
    assert passed.returncode == 0, passed.stderr
    assert passed.stderr.endswith("; passed (--new-suite-passes)\n"), passed.stderr


def test_a_new_machine_class_fails_the_gate_unless_new_class_passes(tmp_path: Path) -> None:
    doc = document(AA)
    doc["session"]["host_key"] = "a runner of a new kind"
    new = tmp_path / "new.json"
    new.write_text(json.dumps(doc))
    proc = run_tfbuild("compare", str(new), "--against", str(AA))
    assert proc.returncode == 10, proc.stderr
    assert "tfbuild: the regression gate failed" in proc.stderr
    passed = run_tfbuild("compare", str(new), "--against", str(AA), "--new-class-passes")
    assert passed.returncode == 0, passed.stderr


def test_requirements_pin_every_package_the_session_installed(tmp_path: Path) -> None:
    """--requirements writes the measured runtime of the config to use, each package at the
    version and sha256 the results file recorded, and the report names the file."""
    lock = tmp_path / "use.txt"
    (host,) = compare_json(str(FORMS), "--requirements", str(lock))["hosts"]
    assert host["choice"]["requirements"] == str(lock)
    variant = document(FORMS)["variants"][host["choice"]["variant"]]
    expected = {
        f"{p['name']}=={p['version']} --hash=sha256:{p['sha256']}"
        for p in variant["runtime"]["packages"]
    }
    written = [line for line in lock.read_text().splitlines() if not line.startswith("#")]
    assert set(written) == expected and len(written) == len(expected)


def test_requirements_are_refused_without_a_recorded_runtime_or_for_two_classes(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "use.txt"
    assert refused("compare", str(AA), "--requirements", str(lock)) == (
        f"tfbuild: --requirements {lock}: the session recorded no packages of the runtime of "
        "stock:default (its runtime was made before tfbuild recorded them: run the session "
        "again to record them)"
    )
    doc = document(FORMS)
    doc["session"]["host_key"] = "another machine"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    assert refused("compare", str(FORMS), str(other), "--requirements", str(lock)) == (
        f"tfbuild: --requirements {lock}: the results are from 2 machine classes; it writes the "
        "runtime of one, so compare one machine's results"
    )
    assert not lock.exists()


@pytest.mark.parametrize(
    "extra",
    [("--against", str(AA)), ("--requirements", "use.txt")],
    ids=["against", "requirements"],
)
def test_history_refuses_what_belongs_to_one_comparison(extra: tuple[str, ...]) -> None:
    assert refused("compare", "--history", str(NIGHTS), *extra) == (
        "tfbuild: --history shows the nights given; --against and --requirements belong to one "
        "comparison: run them without --history"
    )


def test_history_shows_the_nights_in_date_order_whatever_order_they_are_given(
    tmp_path: Path,
) -> None:
    """A folder of nights or its files in reverse give the same table; a fourth night whose
    base variant imported another TensorFlow is marked with that change."""
    as_folder = run_tfbuild("compare", "--history", str(NIGHTS))
    reverse = sorted((str(p) for p in NIGHTS.glob("night-*.json")), reverse=True)
    as_files = run_tfbuild("compare", "--history", *reverse)
    assert as_folder.returncode == as_files.returncode == 0, as_folder.stderr + as_files.stderr
    assert as_folder.stdout == as_files.stdout
    assert "3 nights, 2026-01-01 to 2026-01-03" in as_folder.stdout
    night = document(NIGHTS / "night-3.json")
    before = night["variants"]["base"]["smoke"]["tensorflow"]
    night["session"]["id"] = "night-4"
    for key in ("started_at", "updated_at", "finished_at"):
        night["session"][key] = night["session"][key].replace("2026-01-03", "2026-01-04")
    night["variants"]["base"]["smoke"]["tensorflow"] = "2.23.0"
    shutil.copytree(NIGHTS, tmp_path / "nights")
    (tmp_path / "nights" / "night-4.json").write_text(json.dumps(night))
    proc = run_tfbuild("compare", "--history", str(tmp_path / "nights"))
    assert proc.returncode == 0, proc.stderr
    assert "4 nights, 2026-01-01 to 2026-01-04" in proc.stdout
    assert f"* 2026-01-04 night-4: base: TensorFlow {before} -> 2.23.0" in proc.stdout


def test_history_in_markdown_is_the_table_in_a_text_block() -> None:
    table = run_tfbuild("compare", "--history", str(NIGHTS))
    markdown = run_tfbuild("compare", "--history", str(NIGHTS), "--format", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout == "```text\n" + table.stdout + "```\n"


def test_brief_is_for_the_terminal_report_only() -> None:
    for fmt in ("json", "markdown", "html"):
        assert refused("compare", str(AA), "--brief", "--format", fmt) == (
            f"tfbuild: --brief shortens the terminal report; --format {fmt} shows it whole"
        )
    proc = run_tfbuild("compare", str(AA), "--brief")
    assert proc.returncode == 0, proc.stderr


def test_output_writes_the_report_to_a_file_plain_and_at_a_fixed_width(tmp_path: Path) -> None:
    """-o: nothing on standard output, `wrote FILE` on stderr; a table in the file is plain
    text 120 columns wide whatever the terminal's width (no colour escapes even when colour is
    forced, no padded line ends); only the install command is left whole, for copy and
    paste."""
    report = tmp_path / "report.txt"
    env = {"FORCE_COLOR": "1", "COLUMNS": "60"}
    proc = run_tfbuild("compare", str(AA), "-o", str(report), env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr == f"wrote {report}\n"
    text = report.read_text()
    assert "\x1b[" not in text and "Keep the baseline stock:default" in text
    lines = text.splitlines()
    assert not [line for line in lines if line.endswith(" ")]
    wide = [line for line in lines if len(line) > 120]
    assert len(wide) == 1 and wide[0].startswith("echo 'tensorflow-cpu==")
    assert max(len(line) for line in lines if line not in wide) == 120
    again = tmp_path / "wide.txt"
    assert run_tfbuild("compare", str(AA), "-o", str(again), env={"COLUMNS": "200"}).returncode == 0
    assert again.read_text() == text


def test_replay_looks_first_at_the_recorded_min_rounds_or_the_one_given() -> None:
    design = document(AA)["session"]["design"]
    assert design["kind"] == "sequential"
    proc = run_tfbuild("replay", str(AA), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (replayed,) = json.loads(proc.stdout)
    assert replayed["file"] == str(AA)
    assert replayed["session"] == document(AA)["session"]["id"]
    assert replayed["recorded"]["schedule"][0] == design["min_rounds"]
    assert replayed["replayed"]["schedule"][0] == design["min_rounds"]
    later = json.loads(
        run_tfbuild("replay", str(AA), "--min-rounds", "7", "--format", "json").stdout
    )
    assert later[0]["replayed"]["schedule"][0] == 7
    assert "Invalid value for '--min-rounds': 1 is not in the range x>=2." in (
        run_tfbuild("replay", str(AA), "--min-rounds", "1").stderr
    )


def test_replay_of_a_fixed_design_says_there_is_nothing_to_replay() -> None:
    fixed = RESULTS / "null-6copies-12rounds.json"
    doc = document(fixed)
    assert doc["session"]["design"]["kind"] == "fixed"
    proc = run_tfbuild("replay", str(fixed))
    assert proc.returncode == 9, proc.stderr
    assert proc.stderr == (
        f"tfbuild: session {doc['session']['id']} has a fixed design: it took no looks, so there "
        "is nothing to replay (only sequential sessions stop on their data)\n"
    )


def test_scenarios_runs_those_named_with_the_sessions_asked() -> None:
    proc = run_tfbuild(
        "scenarios", "null-2", "margin-2", "--sessions", "3", "--workers", "1", "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["sessions"] == 3
    assert [s["scenario"] for s in doc["scenarios"]] == ["null-2", "margin-2"]
    for scenario in doc["scenarios"]:
        assert scenario["sessions"] == 3
        assert scenario["right"] + scenario["wrong"] + scenario["inconclusive"] == 3


def test_scenarios_from_an_earlier_run_show_what_it_wrote(tmp_path: Path) -> None:
    saved = FIXTURES / "scenarios.json"
    out = tmp_path / "again.json"
    proc = run_tfbuild("scenarios", "--from", str(saved), "--format", "json", "-o", str(out))
    assert proc.returncode == 0 and proc.stderr == f"wrote {out}\n", proc.stderr
    assert json.loads(out.read_text()) == json.loads(saved.read_text())


def test_scenarios_refuse_an_unknown_name_and_a_file_that_is_no_scenarios_run(
    tmp_path: Path,
) -> None:
    said = refused("scenarios", "null-3")
    assert said.startswith("tfbuild: unknown scenario 'null-3'; known: null-2, null-6, ")
    schema = json.loads((FIXTURES / "scenarios.json").read_text())["schema"]
    assert refused("scenarios", "--from", str(RESULTS / "aa-run.json")) == (
        f"tfbuild: --from {RESULTS / 'aa-run.json'}: a scenarios run of schema "
        f"'tfbuild.results/2', where this tfbuild reads {schema!r}: run the scenarios again"
    )
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    assert refused("scenarios", "--from", str(broken)).startswith(
        f"tfbuild: --from {broken}: not a scenarios run ("
    )


def given(*args: str) -> CompareArguments:
    """The options `compare` receives from this command line (click parses it, its cascade
    resolves it)."""
    with compare.make_context("compare", list(args)) as ctx:
        resolve_options(ctx)
        return options_record(CompareArguments, ctx.params)


def test_compare_reads_its_options_into_one_record(tmp_path: Path) -> None:
    """RESULTS and --against as files, and as typed; the percentages as fractions."""
    settings = CompareSettings.of(
        given(str(AA), "--against", str(RESULTS), "--margin", "3%", "--fail-above", "2%",
              "--requirements", str(tmp_path / "r.txt"), "--weight", "gru-keras=2")
    )  # fmt: skip
    assert settings.results == (AA,) and settings.results_given == (str(AA),)
    assert AA in settings.against and settings.against_given == (str(RESULTS),)
    assert settings.margin == pytest.approx(0.03) and settings.fail_above == pytest.approx(0.02)
    assert settings.requirements == tmp_path / "r.txt" and settings.weights == ("gru-keras=2",)
    assert (settings.fmt, settings.brief, settings.wheels_url) == ("table", False, None)


def test_compare_names_the_first_mistake_in_the_order_its_options_are_read(tmp_path: Path) -> None:
    """--margin, then RESULTS, then --against, then --fail-above, and --brief with another
    format last: each line below corrects the mistake named on the line before."""
    missing = str(tmp_path / "missing.json")
    later = ["--fail-above", "y", "--brief", "--format", "json"]
    for args, said in [
        ([missing, "--margin", "x", "--against", missing, *later], "--margin 'x': "),
        ([missing, "--against", missing, *later], f"RESULTS {missing!r}: no results there"),
        ([str(AA), "--against", missing, *later], f"--against {missing!r}: no results there"),
        ([str(AA), *later], "--fail-above 'y': expected a percentage"),
        ([str(AA), "--brief", "--format", "json"], "--brief shortens the terminal report; "
                                                   "--format json shows it whole"),
    ]:  # fmt: skip
        with pytest.raises(UsageError) as refused:
            CompareSettings.of(given(*args))
        assert str(refused.value).startswith(said), args


def test_history_refuses_the_options_of_one_comparison_and_reads_no_other() -> None:
    history = HistorySettings.of(given(str(NIGHTS), "--history", "--margin", "x"))
    assert history.results == tuple(sorted(NIGHTS.glob("*.json"))) and history.fmt == "table"
    for extra in (["--against", str(AA)], ["--requirements", "r.txt"]):
        with pytest.raises(UsageError, match="belong to one comparison"):
            HistorySettings.of(given(str(NIGHTS), "--history", *extra))


def test_scenarios_are_those_named_in_that_order_or_all() -> None:
    assert [s.name for s in named_scenarios(["margin-2", "null-2"])] == ["margin-2", "null-2"]
    assert named_scenarios([]) == SCENARIOS
    with pytest.raises(UsageError, match=r"^unknown scenario 'null-3'; known: null-2, null-6, "):
        named_scenarios(["null-2", "null-3"])


def test_a_saved_scenarios_run_is_read_back_only_from_a_run_of_this_schema(tmp_path: Path) -> None:
    """The run is handed on as its document (--format json prints it as read); a file that is
    no JSON, JSON that is no object, and a run of another schema are refused, naming it."""
    saved = FIXTURES / "scenarios.json"
    found = saved_scenarios(saved)
    assert found.document == json.loads(saved.read_text())
    assert json.loads(found.text("json")) == found.document
    assert "null-2" in found.text("markdown") and "null-2" in found.text("table")
    broken, listed = tmp_path / "broken.json", tmp_path / "list.json"
    broken.write_text("{")
    listed.write_text("[1]")
    with pytest.raises(UsageError, match=f"^--from {broken}: not a scenarios run \\("):
        saved_scenarios(broken)
    with pytest.raises(UsageError, match=f"^--from {listed}: a scenarios run of schema None, "):
        saved_scenarios(listed)
    with pytest.raises(
        UsageError, match=r"of schema 'tfbuild\.results/2', where this tfbuild reads"
    ):
        saved_scenarios(RESULTS / "aa-run.json")
