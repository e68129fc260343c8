"""`tfbuild compare` in an 80-column terminal, for every committed real session: no word is
broken or cut (every token of the 80-column output is a token of the same report laid out at
1000 columns, so a name, a sha256, a -march value or an interval split across lines, or cut
with an ellipsis, fails), no line but the commands to paste is wider than 80, the configs out
of the leading tier are one line per reason (all of them with --all), empty columns are left
out, and the baseline's and the leader's throughput stand beside the ratios."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cli import RESULTS, committed_sessions, run_tfbuild
from support.synthetic import session, write

SESSIONS = committed_sessions()
SEPARATORS = re.compile(r"[\s\u2500-\u257f]+")
CONTINUED = "continued"
"""The title of the per-benchmark table's continuation, which only a narrow layout has."""


def _terminal(path: Path, columns: int, *args: str) -> str:
    proc = run_tfbuild("compare", str(path), *args, env={"COLUMNS": str(columns)})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _tokens(text: str) -> set[str]:
    return {t for t in SEPARATORS.split(text.replace(CONTINUED, "")) if t}


def _figures(path: Path) -> dict[str, object]:
    proc = run_tfbuild("compare", str(path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    (host,) = json.loads(proc.stdout)["hosts"]
    return dict(host)


@pytest.mark.parametrize("name", SESSIONS)
def test_at_80_columns_nothing_is_broken_or_cut(name: str) -> None:
    narrow, wide = _terminal(RESULTS / name, 80), _terminal(RESULTS / name, 1000)
    broken = _tokens(narrow) - _tokens(wide)
    assert not broken, sorted(broken)[:10]
    body, paste = narrow.split("\nUse this\n", 1)
    assert max(len(line) for line in body.splitlines()) <= 80
    host = _figures(RESULTS / name)
    lead = set(host["tiers"][0]) | {host["baseline"]}  # type: ignore[index]
    lines = body.splitlines()
    for config in map(str, lead):
        assert any(re.search(rf"(^|\s){re.escape(config)}(\s|$)", line) for line in lines)
    choice = host["choice"]
    assert isinstance(choice, dict)
    if choice["sha256"]:
        assert f"# sha256: {choice['sha256']}" in paste.splitlines()


@pytest.mark.parametrize("name", ["default-run-epyc.json.gz", "default-run.json.gz"])
def test_out_configs_one_line_per_reason_unless_all(name: str) -> None:
    host = _figures(RESULTS / name)
    ranking = [e["config"] for e in host["ranking"]]  # type: ignore[attr-defined]
    lead = set(host["tiers"][0]) | {host["baseline"]}  # type: ignore[index]
    narrow = _terminal(RESULTS / name, 80)
    head = narrow.split("Out of the leading tier", 1)[0]
    table = re.split(r"\n *#  config", head, maxsplit=1)[1]
    rows = {line.split()[1] for line in table.splitlines()[2:] if line.strip()}
    assert rows == lead
    tier = set(host["tiers"][0])  # type: ignore[index]
    listed = narrow.split("Out of the leading tier", 1)[1].split("Per benchmark")[0]
    listed = " ".join(listed.split())
    for place, config in enumerate(ranking, 1):
        assert (f"#{place} {config} (" in listed) == (config not in tier), config
    everything = _terminal(RESULTS / name, 80, "--all")
    assert "Out of the leading tier (" in everything and "--all lists" not in everything
    assert all(re.search(rf"\s{re.escape(c)}\s", everything) for c in ranking)
    assert not (_tokens(everything) - _tokens(_terminal(RESULTS / name, 1000, "--all")))


def test_flags_column_only_when_a_config_has_flags(tmp_path: Path) -> None:
    clean = write(tmp_path / "clean.json", session({"fast:default": 1.2}, seed=3))
    flagged = write(
        tmp_path / "flagged.json",
        session({"fast:default": 1.2}, seed=3, failing={"fast:default": ["gru-keras"]}),
    )
    head = re.compile(r"^#\s+config\s+vs baseline \[CI\]\s+rounds\s+verdict(\s+flags)?\s*$", re.M)
    found = head.search(_terminal(clean, 80))
    assert found and found.group(1) is None
    found = head.search(_terminal(flagged, 120))
    assert found and found.group(1)


@pytest.mark.parametrize("name", ["default-run-epyc.json.gz", "default-run.json.gz"])
def test_throughput_of_the_baseline_and_the_leader_beside_the_ratios(name: str) -> None:
    host = _figures(RESULTS / name)
    throughput = host["throughput"]
    assert isinstance(throughput, dict)
    leader = next(
        e["config"]
        for e in host["ranking"]  # type: ignore[attr-defined]
        if e["config"] in host["tiers"][0] and e["config"] != host["baseline"]  # type: ignore[index]
    )
    narrow = _terminal(RESULTS / name, 80)
    assert f"(#1 {leader})" in " ".join(narrow.split())
    for bench, unit in host["units"].items():  # type: ignore[attr-defined]
        row = next(line.split() for line in narrow.splitlines() if line.startswith(bench + " "))
        base, best = throughput[host["baseline"]][bench], throughput[leader][bench]
        assert row[2] == unit
        assert abs(float(row[3]) / base - 1) < 5e-4 and abs(float(row[4]) / best - 1) < 5e-4


def test_brief_keeps_the_answer_what_was_measured_and_the_tables_and_leaves_the_rest() -> None:
    """`compare --brief` of a session of model forms: the answer as the full report gives it,
    the workload and each form's errors, the ranking and per-benchmark tables line for line as
    in the full report; not the design, the error control, the looks or 'use this'. Only for
    the terminal: with another format it is refused (exit 64)."""
    path = RESULTS / "forms-mobilenet.json.gz"
    full, brief = _terminal(path, 120), _terminal(path, 120, "--brief")
    lines = brief.splitlines()
    assert lines[0] == full.splitlines()[0] and lines[0].startswith("Use stock:default:litert: ")
    assert set(lines[:-1]) <= set(full.splitlines())  # nothing made up for the short form
    assert any(line.startswith("Form litert of stock: max abs error 1e-09") for line in lines)
    assert any(line.startswith("1  stock:default:litert ") for line in lines)
    assert any(line.startswith("workload-p50   ±5.0%  ms, p50 latency     9.395") for line in lines)
    for left in ("Design:", "Error control:", "Looks (at the scheduled rounds)", "Use this"):
        assert left in full and left not in brief, left
    assert len(lines) < len(full.splitlines()) / 2
    proc = run_tfbuild("compare", str(path), "--brief", "--format", "json")
    assert proc.returncode == 64 and "--brief shortens the terminal report" in proc.stderr
