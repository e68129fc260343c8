"""The decision rules: one table keyed by version (results.rules.RULES), which every decision
asks by name; a session decided by rules this tfbuild does not know is refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.analysis.answer import confidence
from tfbuild.analysis.estimates import ALPHA
from tfbuild.errors import ResultsError
from tfbuild.results.model import Design
from tfbuild.results.rules import CURRENT_RULES, RULES, rules
from tfbuild.sequential import look_schedule

COMPARISON = re.compile(r"\b(rules|decisions)\s*(<|>|<=|>=|==|!=)\s*\d|\d\s*(<|<=)\s*\w*\.?rules\b")
"""A decision taken by comparing a rules version with a number."""


def test_the_table_holds_every_version_up_to_the_newest() -> None:
    assert sorted(RULES) == list(range(1, CURRENT_RULES + 1))
    assert all(rules(v).version == v for v in RULES)


def test_no_decision_compares_a_rules_version_with_a_number() -> None:
    found = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for path in sorted((REPO / "tfbuild").rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if COMPARISON.search(line)
    ]
    assert found == []
    assert COMPARISON.search("if setup.rules >= 5:") and COMPARISON.search("3 <= setup.rules < 5")


def test_the_looks_are_scheduled_by_the_sessions_own_rules() -> None:
    """Rules 1 spaced the looks about 35 % apart, later rules about 20 %: a session replays at
    the rounds it looked at."""
    first = Design(kind="sequential", first=3, horizon=30, rules=1).schedule
    later = Design(kind="sequential", first=3, horizon=30, rules=CURRENT_RULES).schedule
    assert first == look_schedule(3, 30, 1.35) == (3, 5, 7, 10, 14, 19, 26, 30)
    assert later == look_schedule(3, 30, 1.2) and len(later) > len(first)


def test_a_session_decided_by_rules_this_tfbuild_does_not_know_is_refused(
    tmp_path: Path,
) -> None:
    document = json.loads((FIXTURES / "results" / "aa-run.json").read_text())
    document["session"]["design"]["decisions"] = CURRENT_RULES + 1
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(document))
    proc = run_tfbuild("compare", str(path))
    assert proc.returncode == ResultsError.exit_code, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert str(path) in line and "Traceback" not in line
    assert (
        f"decided by rules {CURRENT_RULES + 1}, which this tfbuild does not know (it knows "
        f"1-{CURRENT_RULES}); a newer tfbuild wrote it"
    ) in line


def test_every_version_splits_the_same_error_and_the_newest_answers_at_97_5() -> None:
    """Each version splits the report's 5 % between its four families; from rules 6 on, the two
    the answer rests on (the intervals against the baseline, the selection) hold 2.5 % together,
    the share of wrong answers the scenarios are held to."""
    for version in RULES:
        split = rules(version).split
        assert set(split) == {"ranking", "selection", "benchmarks", "experiments"}
        assert abs(sum(split.values()) - ALPHA) < 1e-12
    assert confidence(rules(CURRENT_RULES).split) >= 0.975 - 1e-12
    assert confidence(rules(5).split) == 1 - 0.025 - 0.015
