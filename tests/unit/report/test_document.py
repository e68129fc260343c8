"""`compare --format json`: every figure, versioned; per host the alpha split the session was
judged by, the decision with the configs "Keep" bounds, and what a forked session's own data
say of its zygotes (none for fresh processes)."""

from __future__ import annotations

from dataclasses import replace

from support.cli import RESULTS

from tfbuild.analysis.host_report import analyse
from tfbuild.analysis.scenarios import by_name, simulate
from tfbuild.analysis.sessions import load_sessions
from tfbuild.report.document import COMPARE_SCHEMA, compare_json
from tfbuild.results.model import Design


def test_a_fresh_session_has_no_zygotes_and_its_rules_split() -> None:
    doc = compare_json(analyse(load_sessions([RESULTS / "aa-run-epyc.json.gz"])))
    assert doc["schema"] == COMPARE_SCHEMA == "tfbuild.compare/3"
    (host,) = doc["hosts"]
    assert host["zygotes"] is None
    assert host["alpha_split"] == {
        "ranking": 0.025, "selection": 0.015, "benchmarks": 0.005, "experiments": 0.005
    }  # fmt: skip
    assert set(host["decision"]["contenders"]) <= set(host["tiers"][0])


def test_a_forked_session_says_what_its_zygotes_show() -> None:
    scenario = replace(by_name(["null-6"])[0], own=Design(kind="fixed", rounds=12))
    _, report = simulate(scenario, 4)
    (host,) = compare_json([report])["hosts"]
    z = host["zygotes"]
    assert z["zygotes"] >= 6 * 3 and z["most"] == 3 and z["widening"] >= 1.0
    found = z["resemblance"]
    assert 0.0 <= found["rho"] <= found["upper"] <= 1.0 and found["confidence"] == 0.8
    assert abs(sum(host["alpha_split"].values()) - 0.05) < 1e-12
