"""`tfbuild compare`: golden outputs, the regression gate, several hosts, and the HTML report."""

from __future__ import annotations

import copy
import json
import math
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support.cli import RESULTS, compare
from support.synthetic import BASELINE, assert_coherent_tiers, session, write

from tfbuild import stats
from tfbuild.analysis import answering, ranking
from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session, load_sessions
from tfbuild.config.suite import BENCHMARKS as SUITE
from tfbuild.config.suite import CONTRASTS
from tfbuild.results.codec import from_json, load
from tfbuild.results.model import Failure, Results, RunFailure, VariantRecord, config_entry

GOLDEN = RESULTS
REAL = GOLDEN / "session-2x2-10rounds.json"


def test_real_session_findings() -> None:
    """The real 10-round session (suite v1, fixed design) under the current rules: one thread is
    slower, intel 2.14 default is undecided (its interval reaches both sides of the margin), the
    A/A copy is not separated from the baseline, and the baseline stays."""
    doc = json.loads(compare(REAL.name, "--format", "json").stdout)
    assert doc["schema"] == "tfbuild.compare/3"
    (host,) = doc["hosts"]
    ranking = {e["config"]: e for e in host["ranking"]}
    assert ranking["stock:single-thread"]["verdict"] == "slower"
    assert ranking["intel-2.14:single-thread"]["verdict"] == "slower"
    intel = ranking["intel-2.14:default"]
    assert intel["verdict"] == "undecided" and intel["low"] < 1 / 1.02 and intel["high"] > 1.0
    assert host["tiers"][0] == ["intel-2.14:default", "stock:default"]
    assert host["choice"]["config"] == "stock:default"
    assert host["choice"]["sha256"] and host["choice"]["wheel"].endswith(".whl")
    assert host["aa"]["overall"]["verdict"] == "undecided"
    # no config that could be the fastest can be 5 % faster than the baseline: intel's upper
    # bound against it is within the margin, and the answer keeps the baseline
    decision = host["decision"]
    assert decision["kind"] == "keep" and decision["margin"] == 0.05
    assert decision["contenders"] == ["intel-2.14:default"]
    assert intel["high"] <= 1.05


def speed_differences(
    doc: dict[str, Any],
    config: str,
    reference: tuple[str, ...] = ("stock:default", "stock:default~aa"),
) -> list[float]:
    """Per round: the config's mean log throughput minus the mean of the reference processes
    (the baseline's two), computed here from the raw samples without tfbuild."""
    speeds: dict[tuple[str, int], float] = {}
    benches = doc["suite"]["benchmarks"]
    for run in doc["runs"]:
        values = [
            math.log(statistics.median(x["throughput"] for x in run["benchmarks"][b]["samples"]))
            for b in benches
        ]
        speeds[(run["config"], run["round"])] = statistics.fmean(values)
    rounds = sorted({r for _, r in speeds})
    return [
        speeds[(config, r)] - statistics.fmean(speeds[(ref, r)] for ref in reference)
        for r in rounds
    ]


def test_one_odd_round_does_not_move_the_answer() -> None:
    """The real session's fourth round has the baseline process 12.5 % slow (the A/A ratio of
    that round). Making that process twice as slow (a stalled process) moves no verdict and no
    estimate by more than 2 %, where the plain mean of the per-round ratios moves every config
    by 3.5 %; the margin stays near the spread of the steady rounds, not of the odd one."""
    doc = json.loads(REAL.read_text())
    aa = speed_differences(doc, "stock:default~aa", ("stock:default",))
    assert max(aa) == pytest.approx(0.125, abs=0.01) and aa.index(max(aa)) == 3
    before = analyse_host([Session(REAL, from_json(doc))])
    worse = copy.deepcopy(doc)
    for run in worse["runs"]:
        if run["round"] == 3 and run["config"] == "stock:default":
            for entry in run["benchmarks"].values():
                for sample in entry["samples"]:
                    sample["throughput"] *= 0.5
    after = analyse_host([Session(REAL, from_json(worse))])
    for e in before.figures.ranking:
        moved = next(x for x in after.figures.ranking if x.config == e.config)
        assert moved.verdict == e.verdict, e.config
        assert moved.ratio == pytest.approx(e.ratio, rel=0.02), e.config
    for config in ("stock:single-thread", "intel-2.14:default", "intel-2.14:single-thread"):
        plain = statistics.fmean(speed_differences(worse, config))
        assert plain - statistics.fmean(speed_differences(doc, config)) == pytest.approx(
            math.log(2) / 2 / 10
        )
    assert after.method.spreads["overall"] == pytest.approx(
        before.method.spreads["overall"], rel=0.1
    )
    steady = [d for i, d in enumerate(aa) if i != 3]
    assert before.method.spreads["overall"] < statistics.stdev(aa) / math.sqrt(2)
    lower = stats.sd_lower(statistics.stdev(steady), len(steady) - 1)
    assert before.method.spreads["overall"] == pytest.approx(
        max(0.02, math.expm1(lower / math.sqrt(2))), rel=0.35
    )


def test_tiers_of_a_real_quick_session_on_the_default_matrix() -> None:
    """`tfbuild run --quick` on the default matrix (4 prebuilt variants x 4 tunings, 3 rounds,
    suite v1): with three rounds the intervals are wide, and the report says so rather than
    ranking within noise: few claims, all of them consistent with the verdicts, and no answer
    while the A/A control cannot tell the baseline from itself."""
    path = GOLDEN / "session-default-quick.json"
    report = analyse_host([Session(path, load(path))])
    assert len(report.figures.ranking) == 16 and report.measured.rounds == 3
    assert_coherent_tiers(report)
    verdicts = {e.config: e.verdict for e in report.figures.ranking}
    assert verdicts["intel-avx512-2.14:single-thread"] == "slower"
    assert "faster" not in verdicts.values()
    assert report.answer.kind == "inconclusive" and report.decision.held


def test_failed_configs_are_listed(tmp_path: Path) -> None:
    doc = session({"ok:default": 1.0}, seed=1)
    failed = Failure(
        variant="avx512",
        configs=("avx512:default",),
        stage="plan",
        reason="cannot run here: needs AVX512F",
    )
    sigill = RunFailure(
        kind="sigill",
        reason="this build uses CPU instructions this machine lacks (killed by SIGILL, signal 4)",
    )
    runs = list(doc.runs)
    runs[3] = replace(runs[3], status="failed", failure=sigill)
    doc = replace(
        doc.with_variant("avx512", VariantRecord(definition={"name": "avx512"}, status="failed")),
        configs=(*doc.configs, config_entry("avx512:default")),
        failures=(*doc.failures, failed),
        runs=tuple(runs),
    )
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert "failed avx512:default: plan: cannot run here: needs AVX512F" in proc.stdout
    assert "killed by SIGILL, signal 4" in proc.stdout


ZEN4 = "zen4-epyc-9654.cpuinfo"


def test_several_hosts_are_reported_side_by_side(tmp_path: Path) -> None:
    a = write(
        tmp_path / "a.json", session({"v:default": 1.2}, seed=1, hostname="node-a", session_id="a")
    )
    b = write(
        tmp_path / "b.json", session({"v:default": 0.8}, seed=2, cpuinfo=ZEN4, session_id="b")
    )
    a2 = write(
        tmp_path / "a2.json",
        session({"v:default": 1.2}, seed=3, hostname="node-a2", session_id="a2"),
    )
    doc = json.loads(compare(str(a), str(b), str(a2), "--format", "json").stdout)
    hosts = {h["host"].split(" / ")[0].split()[0]: h for h in doc["hosts"]}
    assert set(hosts) == {"Intel(R)", "AMD"}
    assert len(hosts["Intel(R)"]["sessions"]) == 2 and hosts["Intel(R)"]["rounds"] == 20
    verdict = {
        h: next(e for e in d["ranking"] if e["config"] == "v:default")["verdict"]
        for h, d in hosts.items()
    }
    assert verdict == {"Intel(R)": "faster", "AMD": "slower"}


@pytest.mark.parametrize(
    ("name", "stop", "rounds", "verdict"),
    [
        ("aa-run.json", "max_rounds", 30, "undecided"),
        ("aa-run-epyc.json.gz", "resolved", 26, "equivalent"),
    ],
)
def test_a_real_aa_session_makes_no_claim(name: str, stop: str, rounds: int, verdict: str) -> None:
    """The same build under two names, measured until resolved or to the horizon (an Intel
    Xeon and an AMD EPYC guest): neither the copy nor the A/A control is called faster or
    slower, neither is put out of the leading tier, and the baseline is kept (the noisier
    Xeon session cannot call its copy equivalent within the margin, the EPYC one can)."""
    report = analyse_host(load_sessions([GOLDEN / name]))
    copy_of = report.figures.estimates[("stock-again:default", "overall")]
    assert copy_of.verdict == verdict and copy_of.low < 1 < copy_of.high
    assert report.answer.kind == "keep"
    assert report.figures.aa["overall"].verdict == "undecided"
    assert (
        report.figures.out == [] and report.course.replay == [] and report.measured.rounds == rounds
    )
    assert report.course.stop is not None and report.course.stop.reason == stop
    assert report.choice is not None and report.choice.config == "stock:default"


def test_a_real_session_resolved_to_its_target() -> None:
    """The README's main example (the default matrix with `tfbuild run`, AMD EPYC guest): it
    stopped at a look because the leading tier was resolved to the target, its looks replay
    exactly, the configs put out ran only until their look, and it needed far fewer processes
    than a fixed design resolving the same tier as well."""
    path = GOLDEN / "default-run-epyc.json.gz"
    report = analyse_host(load_sessions([path]), power=True)
    assert report.course.replay == [] and report.method.design.sequential
    assert report.course.stop is not None and report.course.stop.reason == "resolved"
    assert (
        report.method.design.resolve is not None
        and report.figures.resolution <= report.method.design.resolve
    )
    assert (
        report.measured.rounds
        == report.course.looks[-1].round
        <= (report.method.design.horizon or 0)
    )
    assert_coherent_tiers(report)
    runs = load_sessions([path])[0].results.runs
    eliminated = {e.config: look.round for look in report.course.looks for e in look.eliminated}
    for config, round_ in eliminated.items():
        assert sum(r.config == config for r in runs) == round_
    assert report.course.fixed_equivalent is not None
    assert report.measured.runs == len(runs) <= 0.6 * report.course.fixed_equivalent[1]
    choice = report.choice
    assert choice is not None and choice.config in report.figures.tiers[0]
    chosen = report.figures.estimates[(choice.config, "overall")]
    assert chosen.verdict == "faster" and chosen.low > 1 + report.method.margins["overall"]


def test_the_real_default_matrix_session() -> None:
    """The README's session (16 configs and the A/A copy, to the horizon of 30 rounds): its
    recorded looks replay exactly, every config put out early ran only until its look, the
    single-thread tunings went first, the tiers agree with the claims, fewer processes ran than
    a fixed design would need, and the baseline stays although it is out of the leading tier
    (what is ahead of it is not shown ahead by more than the margin)."""
    path = GOLDEN / "default-run.json.gz"
    report = analyse_host(load_sessions([path]), power=True)
    assert report.course.replay == [] and report.method.design.sequential
    assert report.course.stop is not None and report.course.stop.reason == "max_rounds"
    assert_coherent_tiers(report)
    eliminated = {e.config: look.round for look in report.course.looks for e in look.eliminated}
    single = {
        f"{v}:single-thread" for v in ("stock", "stock-2.14", "intel-2.14", "intel-avx512-2.14")
    }
    assert single <= set(eliminated)
    assert max(eliminated[c] for c in single) <= min(
        round_ for c, round_ in eliminated.items() if c not in single
    )
    for config, round_ in eliminated.items():
        assert report.figures.estimates[(config, "overall")].rounds == round_
    runs = load_sessions([path])[0].results.runs
    for config, round_ in eliminated.items():
        assert sum(r.config == config for r in runs) == round_
    assert report.course.fixed_equivalent is not None
    assert report.measured.runs == len(runs) < report.course.fixed_equivalent[1]
    assert report.measured.baseline in report.figures.tiers[1]
    assert all(e.verdict != "faster" for e in report.figures.ranking)
    # a config may be faster than the baseline, but none is known to be within the margin of
    # the fastest: the session is inconclusive and the use-this block keeps the baseline
    assert report.answer.kind == "inconclusive" and report.decision.cause == "open"
    choice = report.choice
    assert choice is not None and choice.config == report.measured.baseline
    assert "nothing is decided at the 6.1% margin yet" in choice.reason


def test_only_power_runs_the_planners(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planners (hundreds of simulated sessions each) run when `power` asks for them, and
    only then: an analysis that wants the answer alone (a replay, a scenario) pays for none.
    With them the report gains the fixed design and the budget, and nothing else changes."""
    planned: list[str] = []
    for module, name in ((ranking, "fixed_equivalent"), (answering, "fixed_decided")):
        real = getattr(module, name)

        def spy(*args: Any, _name: str = name, _real: Any = real, **kwargs: Any) -> Any:
            planned.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    sessions = load_sessions([GOLDEN / "default-run.json.gz"])
    plain = analyse_host(sessions)
    assert planned == []
    assert plain.course.fixed_equivalent is None and plain.answer.settle is None
    powered = analyse_host(sessions, power=True)
    assert planned == ["fixed_equivalent", "fixed_decided"]
    assert powered.course.fixed_equivalent is not None and powered.answer.settle is not None
    assert powered.answer.lines[:-1] == plain.answer.lines
    assert powered.answer.lines[-1].startswith("To settle it: about ")
    course = replace(powered.course, fixed_equivalent=None)
    unplanned = replace(powered, course=course, answer=plain.answer)
    assert repr(unplanned) == repr(plain)


def analyse(results: Results) -> HostReport:
    return analyse_host([Session(Path("synthetic.json"), results)])


def test_four_verdicts_from_intervals() -> None:
    """Faster and slower need the whole interval beyond the margin, equivalent the whole
    interval inside it; everything else is undecided, never a tie."""
    report = analyse(
        session(
            {"fast:default": 1.2, "slow:default": 0.8, "same:default": 1.0, "hazy:default": 1.04},
            noise=0.01,
            noise_of={"hazy:default": 0.15},
            rounds=30,
            seed=2,
        )
    )
    verdicts = {e.config: e.verdict for e in report.figures.ranking}
    assert verdicts == {
        BASELINE: "baseline",
        "fast:default": "faster",
        "slow:default": "slower",
        "same:default": "equivalent",
        "hazy:default": "undecided",
    }
    m = report.method.margins[OVERALL]
    for e in (e for e in report.figures.ranking if e.config != BASELINE):
        inside = 1 / (1 + m) < e.low and e.high < 1 + m
        assert (e.verdict == "equivalent") == inside
    assert_coherent_tiers(report)


def test_tiers_are_cut_by_claims_consistent_with_the_verdicts() -> None:
    report = analyse(
        session(
            {"same:default": 1.0, "twin:default": 1.005, "slow:default": 0.8, "fast:default": 1.2},
            noise=0.01,
            rounds=20,
            seed=7,
        )
    )
    assert_coherent_tiers(report)
    assert report.figures.tiers[0] == ["fast:default"]
    assert set(report.figures.tiers[1]) == {
        BASELINE,
        "same:default",
        "twin:default",
        "slow:default",
    }
    assert report.choice is not None and report.choice.config == "fast:default"


def test_seed_experiments_are_measured_within_the_recommended_config() -> None:
    """The hand-built unrolled GRU runs 25 % faster than the Keras layer inside the winning
    config; nothing else differs within it."""
    fast = {"gru-keras": 1.2, "gru-static": 1.5, "gru-dynamic": 1.5}
    report = analyse(session({"fast:default": fast}, benchmarks=tuple(SUITE), seed=6, rounds=20))
    assert report.choice is not None and report.choice.config == "fast:default"
    by_name = {e.benchmark: e for e in report.figures.contrasts}
    assert [c.name for c in CONTRASTS] == list(by_name)
    unrolled = by_name[CONTRASTS[0].name]
    assert unrolled.config == "fast:default" and unrolled.verdict == "faster"
    assert unrolled.low < 1.25 < unrolled.high
    assert [e.verdict for e in report.figures.contrasts[1:]] == ["equivalent"] * 3


def test_the_config_to_use_is_the_one_the_answer_names() -> None:
    """With 3 rounds of 12 configs, one 12 % ahead: the use-this block names what the answer
    does, a config shown faster than the baseline and known within the margin of the fastest
    (its floor), and otherwise keeps the baseline and says nothing is decided yet."""
    effects = {"fast:default": 1.12, "near:default": 1.03}
    effects |= {f"filler{i}:default": 1.0 for i in range(10)}
    for seed in range(10):
        report = analyse(session(effects, noise=0.03, rounds=3, seed=seed))
        choice, decision = report.choice, report.decision
        assert choice is not None
        if decision.kind == "use":
            assert choice.config == decision.config != BASELINE
            assert decision.floors[choice.config] >= 1 / (1 + decision.margin)
            assert choice.config in report.figures.tiers[0]
            assert f"{choice.config} is faster than the baseline {BASELINE} (" in choice.reason
            assert "the fastest config measured or within the 5.0% margin" in choice.reason
        else:
            assert choice.config == BASELINE
            decided = "no config measured is faster than the baseline"
            assert (decided in choice.reason) == (decision.kind == "keep"), choice.reason


def test_a_partly_failing_config_stays_flagged_and_is_never_recommended() -> None:
    """`broken` is 30 % faster on what it measures but fails gru-keras every round: it is
    ranked on the other benchmarks, flagged, kept in the per-benchmark table, and is no
    candidate for the answer (the fastest config that measured everything is), and the
    use-this block names why."""
    benches = ("gru-keras", "matmul-pinned", "input-fed")
    report = analyse(
        session(
            {"broken:default": 1.3, "fast:default": 1.1},
            failing={"broken:default": ["gru-keras"]},
            benchmarks=benches,
            noise=0.01,
            rounds=12,
            seed=3,
        )
    )
    by_config = {e.config: e for e in report.figures.ranking}
    assert by_config["broken:default"].verdict == "faster"
    assert report.problems.flags["broken:default"].missing == ("gru-keras",)
    assert ("broken:default", "matmul-pinned") in report.figures.estimates
    assert ("broken:default", "gru-keras") not in report.figures.estimates
    assert any("broken:default: no results for gru-keras" in w for w in report.problems.warnings)
    choice = report.choice
    assert choice is not None and choice.config == "fast:default"
    assert "broken:default" not in report.decision.floors  # it is no candidate
    assert (
        "broken:default could be faster on what it measured, but no results for gru-keras "
        "(overall over the rest), so it is not a candidate" in choice.reason
    )


def test_per_benchmark_verdicts() -> None:
    report = analyse(
        session({"mixed:default": {"gru-keras": 1.30, "matmul-pinned": 0.75}}, seed=11, rounds=20)
    )
    estimates = report.figures.estimates
    assert estimates[("mixed:default", "gru-keras")].verdict == "faster"
    assert estimates[("mixed:default", "matmul-pinned")].verdict == "slower"
    assert estimates[("mixed:default", "input-fed")].verdict == "equivalent"
    gru = estimates[("mixed:default", "gru-keras")]
    assert gru.low < gru.ratio < gru.high and gru.ratio == pytest.approx(1.30, rel=0.03)


EPYC = GOLDEN / "default-run-epyc.json.gz"
"""The README's session: intel-avx512-2.14:physical-cores ahead by 44 % on the two input
benchmarks, not shown faster on four of the five others."""
AHEAD = "intel-avx512-2.14:physical-cores"
NO_INPUT = {"input-fed": 0.0, "input-pinned": 0.0}


def _overall(report: HostReport, config: str) -> float:
    return report.figures.estimates[(config, OVERALL)].ratio


def test_weights_put_the_answer_on_the_benchmarks_that_resemble_your_model() -> None:
    """`compare --weight`: the overall speed is the benchmarks' weighted mean, so the ratio of
    two configs is about the weighted geometric mean of their per-benchmark ratios; the
    README's "Use" rests on the input benchmarks, and without them it is not shown."""
    doc = json.loads(compare(EPYC.name, "--format", "json").stdout)
    weighed = compare(EPYC.name, "--format", "json", *(f"--weight={b}=0" for b in NO_INPUT))
    (plain,), (host,) = doc["hosts"], json.loads(weighed.stdout)["hosts"]
    assert plain["answer"]["kind"] == "use" and host["answer"]["kind"] != "use"
    assert host["weights"] == {b: NO_INPUT.get(b, 1.0) for b in host["benchmarks"]}
    assert set(plain["weights"].values()) == {1.0}
    for figures in (plain, host):
        ratios = {e["benchmark"]: e["ratio"] for e in figures["estimates"] if e["config"] == AHEAD}
        weights = figures["weights"]
        mean = sum(weights[b] * math.log(ratios[b]) for b in weights) / sum(weights.values())
        assert ratios[OVERALL] == pytest.approx(math.exp(mean), rel=0.005)
    text = " ".join(compare(EPYC.name, *(f"--weight={b}=0" for b in NO_INPUT)).stdout.split())
    assert "(weighted in the overall level: input-fed 0, input-pinned 0; the others 1)" in text


def test_a_session_is_weighed_as_it_recorded_unless_asked_otherwise() -> None:
    """bench and run --weight record the weights: the report, and the looks a replay takes,
    weigh as the session did; an explicit weighting (compare --weight) still wins."""
    results = load(EPYC)
    weighed = replace(results, suite=replace(results.suite, weights=NO_INPUT))
    asked = analyse_host([Session(EPYC, results)], weights=NO_INPUT)
    recorded = analyse_host([Session(EPYC, weighed)])
    plain = analyse_host([Session(EPYC, results)])
    assert _overall(recorded, AHEAD) == _overall(asked, AHEAD) != _overall(plain, AHEAD)
    assert recorded.answer == asked.answer != plain.answer
    assert recorded.method.weights == NO_INPUT
    override = analyse_host([Session(EPYC, weighed)], weights={})
    assert _overall(override, AHEAD) == _overall(plain, AHEAD)
    # the looks the session took are replayed on the speed it was decided on
    assert (
        analyse_host([Session(EPYC, results)], weights=NO_INPUT).course.looks == plain.course.looks
    )


def test_a_sequential_session_looks_at_the_speed_it_records() -> None:
    """The looks of a session with --weight (analysis.looks.SequentialLooks, what bench hands
    its schedule) weigh the benchmarks as recorded: the README session's last look, taken
    again with the input benchmarks left out, no longer has the leader ahead by 14 %."""
    from tfbuild.analysis.looks import SequentialLooks

    results = load(EPYC)
    last = (results.looks or ())[-1]
    for weights, low, high in (({}, 1.10, 1.20), (NO_INPUT, 1.0, 1.10)):
        again = replace(results, suite=replace(results.suite, weights=weights))
        look = SequentialLooks(forecast=False).look(again, last.active, last.round, last.elapsed_s)
        ratio = look.estimates[AHEAD].ratio
        assert low < ratio < high, (weights, ratio)
