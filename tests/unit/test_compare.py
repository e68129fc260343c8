"""`tfbuild compare`: golden outputs, the regression gate, several hosts, and the HTML report."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shlex
import shutil
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, require, run_tfbuild
from synthetic import assert_coherent_tiers, config_entry, session, write

from tfbuild.compare import Session, analyse_host, load_sessions

GOLDEN = FIXTURES / "results"
REAL = GOLDEN / "session-2x2-10rounds.json"
UPDATE = bool(os.environ.get("TFBUILD_UPDATE_GOLDEN"))


def compare(*args: str, cwd: Path = GOLDEN) -> subprocess.CompletedProcess[str]:
    return run_tfbuild("compare", *args, cwd=cwd, env={"COLUMNS": "120"})


@pytest.mark.parametrize(
    ("fmt", "golden"), [("table", "golden.table.txt"), ("markdown", "golden.md")]
)
def test_golden_output(fmt: str, golden: str) -> None:
    """The report of a real 10-round session (stock TF vs intel-tensorflow, two tunings).

    Set TFBUILD_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
    """
    proc = compare(REAL.name, "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    path = GOLDEN / golden
    if UPDATE:
        path.write_text(proc.stdout)
    assert proc.stdout == path.read_text()


def test_real_session_findings() -> None:
    """The real 10-round session (suite v1, fixed design) under the current rules: one thread is
    slower, intel 2.14 default is undecided (its interval reaches both sides of the margin), the
    A/A copy is not separated from the baseline, and the baseline stays."""
    doc = json.loads(compare(REAL.name, "--format", "json").stdout)
    assert doc["schema"] == "tfbuild.compare/2"
    (host,) = doc["hosts"]
    ranking = {e["config"]: e for e in host["ranking"]}
    assert ranking["stock:single-thread"]["verdict"] == "slower"
    assert ranking["intel-2.14:single-thread"]["verdict"] == "slower"
    intel = ranking["intel-2.14:default"]
    assert intel["verdict"] == "undecided" and intel["low"] < 1 / 1.02 and intel["high"] > 1.0
    assert host["tiers"][0] == ["intel-2.14:default", "stock:default"]
    assert host["choice"]["config"] == "stock:default"
    assert host["choice"]["sha256"] and host["choice"]["wheel"].endswith(".whl")
    assert host["aa"]["overall"]["verdict"] in ("equivalent", "undecided")
    assert host["detectable"] > host["margins"]["overall"]


def level_differences(
    doc: dict[str, Any],
    config: str,
    reference: tuple[str, ...] = ("stock:default", "stock:default~aa"),
) -> list[float]:
    """Per round: the config's mean log throughput minus the mean of the reference processes
    (the baseline's two), computed here from the raw samples without tfbuild."""
    levels: dict[tuple[str, int], float] = {}
    benches = doc["suite"]["benchmarks"]
    for run in doc["runs"]:
        values = [
            math.log(statistics.median(x["throughput"] for x in run["benchmarks"][b]["samples"]))
            for b in benches
        ]
        levels[(run["config"], run["round"])] = statistics.fmean(values)
    rounds = sorted({r for _, r in levels})
    return [
        levels[(config, r)] - statistics.fmean(levels[(ref, r)] for ref in reference)
        for r in rounds
    ]


def test_one_odd_round_does_not_move_the_answer() -> None:
    """The real session's fourth round has the baseline process 12.5 % slow (the A/A ratio of
    that round). Making that process twice as slow (a stalled process) moves no verdict and no
    estimate by more than 2 %, where the plain mean of the per-round ratios moves every config
    by 3.5 %; the margin stays near the spread of the steady rounds, not of the odd one."""
    doc = json.loads(REAL.read_text())
    aa = level_differences(doc, "stock:default~aa", ("stock:default",))
    assert max(aa) == pytest.approx(0.125, abs=0.01) and aa.index(max(aa)) == 3
    before = analyse_host([Session(REAL, doc)])
    worse = copy.deepcopy(doc)
    for run in worse["runs"]:
        if run["round"] == 3 and run["config"] == "stock:default":
            for entry in run["benchmarks"].values():
                for sample in entry["samples"]:
                    sample["throughput"] *= 0.5
    after = analyse_host([Session(REAL, worse)])
    for e in before.ranking:
        moved = next(x for x in after.ranking if x.config == e.config)
        assert moved.verdict == e.verdict, e.config
        assert moved.ratio == pytest.approx(e.ratio, rel=0.02), e.config
    for config in ("stock:single-thread", "intel-2.14:default", "intel-2.14:single-thread"):
        plain = statistics.fmean(level_differences(worse, config))
        assert plain - statistics.fmean(level_differences(doc, config)) == pytest.approx(
            math.log(2) / 2 / 10
        )
    assert after.margins["overall"] == pytest.approx(before.margins["overall"], rel=0.1)
    steady = [d for i, d in enumerate(aa) if i != 3]
    assert before.margins["overall"] < statistics.stdev(aa) / math.sqrt(2)
    assert before.margins["overall"] == pytest.approx(
        max(0.02, math.expm1(statistics.stdev(steady) / math.sqrt(2))), rel=0.35
    )


def test_tiers_of_a_real_quick_session_on_the_default_matrix() -> None:
    """`tfbuild run --quick` on the default matrix (4 prebuilt variants x 4 tunings, 3 rounds,
    suite v1): with three rounds the intervals are wide, and the report says so rather than
    ranking within noise: few claims, all of them consistent with the verdicts."""
    path = GOLDEN / "session-default-quick.json"
    report = analyse_host([Session(path, json.loads(path.read_text()))])
    assert len(report.ranking) == 16 and report.rounds == 3
    assert_coherent_tiers(report)
    verdicts = {e.config: e.verdict for e in report.ranking}
    assert verdicts["intel-avx512-2.14:single-thread"] == "slower"
    assert "faster" not in verdicts.values()
    assert report.detectable > 0.3


def test_use_this_block_names_env_and_threading(tmp_path: Path) -> None:
    doc = session({"fast:single": 1.3}, seed=2)
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert proc.returncode == 0, proc.stderr
    use = proc.stdout.split("Use this", 1)[1]
    assert (
        "Use fast with tuning single: fast:single is faster than the baseline base:default: 1.3"
        in (use.replace("\n", " "))
    )
    assert "export OMP_NUM_THREADS=1" in use
    assert "tf.config.threading.set_intra_op_parallelism_threads(1)" in use
    assert "pip install wheels/tf2.21-py3.11-fast/fast-2.21.0-py3-none-any.whl" in use


def test_use_this_lines_are_quoted_for_the_shell(tmp_path: Path) -> None:
    """Values from a results file (a shared CI artifact, say) reach the printed shell lines
    only quoted: a list of preloads stays one word, a command substitution stays text."""
    doc = session({"fast:single": 1.3}, seed=2)
    config = next(c for c in doc["configs"] if c["key"] == "fast:single")
    config["env"] = {"LD_PRELOAD": "/a.so /b.so", "X": "$(touch /tmp/pwned)", "A;B": "1"}
    doc["variants"]["fast"]["artifact"]["wheel"] = "w h;eel.whl"
    proc = compare(str(write(tmp_path / "s.json", doc)), "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line and not line.startswith("#")]
    assert [shlex.split(line) for line in lines] == [
        ["pip", "install", "w h;eel.whl"],
        ["export", "LD_PRELOAD=/a.so /b.so"],
        ["export", "X=$(touch /tmp/pwned)"],
    ]


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        (0.7, "no config is shown faster than the baseline base:default beyond the"),
        (1.0, "no config is shown faster than the baseline base:default beyond the"),
    ],
)
def test_use_this_keeps_the_baseline_and_says_why(
    tmp_path: Path, effect: float, expected: str
) -> None:
    doc = session({"other:default": effect}, seed=4)
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert proc.returncode == 0, proc.stderr
    use = proc.stdout.split("Use this", 1)[1]
    reason = " ".join(line.removeprefix("# ") for line in use.splitlines() if line.startswith("#"))
    assert f"Use base with tuning default: {expected}" in reason


def test_sessions_without_seed_pairs_report_no_seed_experiments(tmp_path: Path) -> None:
    """A suite subset with no pair of counterpart benchmarks: every format still renders."""
    path = write(tmp_path / "s.json", session({"fast:single": 1.3}, seed=2))
    titles = {"table": "The seed experiments within", "markdown": "### Seed experiments",
              "html": "<h3>Seed experiments</h3>"}  # fmt: skip
    for fmt, title in titles.items():
        proc = compare(str(path), "--format", fmt, "--output", str(tmp_path / f"out.{fmt}"))
        assert proc.returncode == 0, proc.stderr
        assert title not in (tmp_path / f"out.{fmt}").read_text()


def test_failed_configs_are_listed(tmp_path: Path) -> None:
    doc = session({"ok:default": 1.0}, seed=1)
    doc["configs"].append(config_entry("avx512:default"))
    doc["variants"]["avx512"] = {"definition": {"name": "avx512"}, "status": "failed"}
    doc["failures"].append(
        {
            "variant": "avx512",
            "configs": ["avx512:default"],
            "stage": "plan",
            "reason": "cannot run here: needs AVX512F",
        }
    )
    doc["runs"][3]["status"] = "failed"
    doc["runs"][3]["failure"] = {
        "kind": "sigill",
        "reason": "this build uses CPU instructions "
        "this machine lacks (killed by SIGILL, signal 4)",
    }
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert "failed avx512:default: plan: cannot run here: needs AVX512F" in proc.stdout
    assert "killed by SIGILL, signal 4" in proc.stdout


def test_gate_passes_unchanged_and_fails_slower(tmp_path: Path) -> None:
    old = write(tmp_path / "old.json", session({"v:default": 1.0}, seed=1, session_id="old"))
    same = write(tmp_path / "same.json", session({"v:default": 1.0}, seed=2, session_id="same"))
    proc = compare(str(same), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "REGRESSION" not in proc.stdout
    slower = write(
        tmp_path / "slow.json",
        session({"v:default": {"matmul-pinned": 0.85}}, seed=3, session_id="slow"),
    )
    proc = compare(str(slower), "--against", str(old), "--fail-above", "5%")
    assert proc.returncode == 10
    assert "v:default matmul-pinned -15." in proc.stderr
    assert proc.stdout.count("REGRESSION") == 1
    assert "Traceback" not in proc.stderr


def test_gate_after_a_suite_upgrade_compares_nothing_and_says_why(tmp_path: Path) -> None:
    """Old results of an earlier suite measured other work: a much slower config tonight is
    not a regression against them, and the gate says they were not compared; new results of
    two suites are refused."""
    from tfbuild.bench.suite import SUITE_VERSION

    earlier = session({"v:default": 1.0}, seed=1, session_id="old")
    earlier["suite"]["version"] = SUITE_VERSION - 1
    old = write(tmp_path / "old.json", earlier)
    slower = session({"v:default": {"matmul-pinned": 0.5}}, seed=3, session_id="slow")
    new = write(tmp_path / "slow.json", slower)
    proc = compare(str(new), "--against", str(old), "--format", "markdown")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"old results of suite v{SUITE_VERSION - 1} are not compared" in proc.stdout
    assert "REGRESSION" not in proc.stdout
    proc = compare(str(new), str(old))
    assert proc.returncode == 9 and "results of different suites" in proc.stderr


def test_resume_refuses_a_session_of_another_suite(tmp_path: Path) -> None:
    """A session's runs must all measure the same work: resuming one recorded with another
    suite version is refused before anything runs."""
    from tfbuild.bench.suite import SUITE_VERSION

    doc = session({"v:default": 1.0}, seed=1)
    doc["session"]["complete"] = False
    doc["suite"]["version"] = SUITE_VERSION - 1
    path = write(tmp_path / "results" / "s.json", doc)
    proc = run_tfbuild("bench", "--resume", str(path), cwd=tmp_path)
    assert proc.returncode == 9, proc.stderr
    assert f"recorded with suite v{SUITE_VERSION - 1}, and this tfbuild runs suite" in proc.stderr
    assert "Traceback" not in proc.stderr


ZEN4 = "zen4-epyc-9654.cpuinfo"


def test_gate_pairs_results_by_machine_class(tmp_path: Path) -> None:
    """Hostnames do not split machines (a hosted runner gets a new one every job); the CPU
    does: results of another class are not compared, and that does not fail the gate."""
    old = write(tmp_path / "old.json", session({"v:default": 1.0}, seed=1, hostname="runner-1",
                                               session_id="a"))  # fmt: skip
    renamed = write(
        tmp_path / "renamed.json",
        session({"v:default": 0.8}, seed=2, hostname="runner-2", session_id="b"),
    )
    proc = compare(str(renamed), "--against", str(old), "--format", "json")
    assert proc.returncode == 10, proc.stderr
    assert re.search(
        r"^  v:default gru-keras -(19|2\d)\.\d% \(slower than 5% allows", proc.stderr, re.M
    )
    other = write(
        tmp_path / "other.json",
        session({"v:default": 0.8}, seed=3, cpuinfo=ZEN4, session_id="c"),
    )
    proc = compare(str(other), "--against", str(old), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    against = json.loads(proc.stdout)["against"]
    assert against["changes"] == [] and against["missing"] == []
    assert any("AMD EPYC 9654" in n and "nothing to compare" in n for n in against["notes"])
    proc = compare(str(other), "--against", str(old), "--allow-different-hosts")
    assert proc.returncode == 10, proc.stderr


def test_against_takes_folders_and_patterns_and_pairs_each_class(tmp_path: Path) -> None:
    """Two runner classes tonight against two last night, given as a folder, a quoted pattern
    or files: each class is compared with its own; a second class file is never read as new
    results."""
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    for folder, seed, slow in ((old_dir, 1, 1.0), (new_dir, 5, 0.85)):
        write(folder / "a.json", session({"v:default": 1.0}, seed=seed, session_id=f"a{seed}"))
        write(
            folder / "b.json",
            session({"v:default": slow}, seed=seed + 1, cpuinfo=ZEN4, session_id=f"b{seed}"),
        )
    for spec in (str(old_dir), str(old_dir / "*.json")):
        proc = compare(str(new_dir), "--against", spec, "--format", "json")
        assert proc.returncode == 10, proc.stderr
        doc = json.loads(proc.stdout)
        assert len(doc["hosts"]) == 2
        hosts = {c["host"].split(" / ")[0] for c in doc["against"]["changes"]}
        assert hosts == {
            "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz",
            "AMD EPYC 9654 96-Core Processor",
        }
        regressions = {
            c["host"].split(" / ")[0] for c in doc["against"]["changes"] if c["regression"]
        }
        assert regressions == {"AMD EPYC 9654 96-Core Processor"}
    proc = compare(str(new_dir), "--against", str(tmp_path / "none" / "*.json"))
    assert proc.returncode == 64 and "no results there" in proc.stderr


def test_gate_fails_on_a_config_with_no_results_or_fewer_benchmarks(tmp_path: Path) -> None:
    """A config that crashed in every round, or lost a benchmark, is a failure of the gate with
    a line naming it, not an absence; a config the new matrix dropped is only noted."""
    effects = {"v:default": 1.0, "w:default": 1.0, "gone:default": 1.0}
    old = write(tmp_path / "old.json", session(effects, seed=1, session_id="o"))
    doc = session({"v:default": 1.0, "w:default": 1.0}, seed=2, session_id="n",
                  failing={"w:default": ["gru-keras"]})  # fmt: skip
    for run in doc["runs"]:
        if run["config"] == "v:default":
            run["status"], run["benchmarks"] = "failed", {}
            run["failure"] = {"kind": "sigill", "signal": 4, "reason": "killed by SIGILL"}
    new = write(tmp_path / "new.json", doc)
    proc = compare(str(new), "--against", str(old))
    assert proc.returncode == 10, proc.stderr
    causes = [line.strip() for line in proc.stderr.split("cause(s):\n", 1)[1].splitlines()]
    assert len(causes) == 2, proc.stderr
    assert causes[0].startswith(
        "v:default: no results in the new results (round 1: killed by SIGILL)"
    )
    assert causes[1].startswith("w:default: no result for gru-keras in the new results")
    assert "gone:default: not in the new session's matrix" in proc.stderr
    assert proc.stdout.count("MISSING") == 2
    assert "Traceback" not in proc.stderr


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


def test_not_a_results_file(tmp_path: Path) -> None:
    bad = tmp_path / "host.json"
    bad.write_text(json.dumps({"schema": "tfbuild.host/1"}))
    proc = compare(str(bad))
    assert proc.returncode == 9 and "expected 'tfbuild.results/2'" in proc.stderr


CHECK = """
<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || e.type)), true);
window.addEventListener('load', () => {
  const imgs = Array.from(document.images);
  const broken = imgs.filter(i => !i.complete || i.naturalWidth === 0).length;
  const out = document.createElement('pre');
  out.id = 'tfbuild-check';
  out.textContent = JSON.stringify({images: imgs.length, broken: broken,
                                    errors: window.__errors,
                                    tables: document.querySelectorAll('table').length});
  document.body.appendChild(out);
});
</script>
"""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    require(path is not None, "chromium is not installed (apt-get install chromium)")
    assert path is not None
    return path


def test_html_report_renders_in_chromium(tmp_path: Path) -> None:
    """The HTML report of the real session, loaded in headless Chromium: no errors, every
    chart image decodes. A screenshot is left next to the report for a person to look at."""
    browser = chromium()
    report = tmp_path / "report.html"
    proc = compare(str(REAL), "--format", "html", "--output", str(report))
    assert proc.returncode == 0, proc.stderr
    html = report.read_text()
    assert html.count('src="data:image/png;base64,') == 2
    assert "<script" not in html  # self-contained, static
    assert "<h3>Seed experiments</h3>" in html
    checked = tmp_path / "checked.html"
    checked.write_text(html.replace("<head>", "<head>" + CHECK, 1))
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-quic",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run(
        [browser, *flags, "--virtual-time-budget=5000", "--dump-dom", checked.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    match = re.search(r'<pre id="tfbuild-check">(.*?)</pre>', dom.stdout)
    assert match, dom.stderr[-2000:]
    result = json.loads(match.group(1).replace("&quot;", '"'))
    assert result == {"images": 2, "broken": 0, "errors": [], "tables": result["tables"]}
    assert result["tables"] >= 5  # ranking, per benchmark, seed experiments, host, builds
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [browser, *flags, "--window-size=1280,2400", f"--screenshot={screenshot}", report.as_uri()],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert screenshot.exists() and screenshot.stat().st_size > 50_000


@pytest.mark.parametrize(
    ("name", "stop", "rounds"),
    [("aa-run.json", "max_rounds", 30), ("aa-run-epyc.json.gz", "resolved", 26)],
)
def test_a_real_aa_session_makes_no_claim(name: str, stop: str, rounds: int) -> None:
    """The same build under two names, measured until resolved or to the horizon (an Intel
    Xeon and an AMD EPYC guest): neither the copy nor the A/A control is called faster or
    slower, and neither is put out of the leading tier."""
    report = analyse_host(load_sessions([GOLDEN / name]))
    copy_of = report.estimates[("stock-again:default", "overall")]
    assert copy_of.verdict in ("equivalent", "undecided") and copy_of.low < 1 < copy_of.high
    assert report.aa["overall"].verdict in ("equivalent", "undecided")
    assert report.out == [] and report.replay == [] and report.rounds == rounds
    assert report.stop is not None and report.stop["reason"] == stop
    assert report.choice is not None and report.choice.config == "stock:default"


def test_a_real_session_resolved_to_its_target() -> None:
    """The README's main example (the default matrix with `tfbuild run`, AMD EPYC guest): it
    stopped at a look because the leading tier was resolved to the target, its looks replay
    exactly, the configs put out ran only until their look, and it needed far fewer processes
    than a fixed design resolving the same tier as well."""
    path = GOLDEN / "default-run-epyc.json.gz"
    report = analyse_host(load_sessions([path]))
    assert report.replay == [] and report.design.sequential
    assert report.stop is not None and report.stop["reason"] == "resolved"
    assert report.design.resolve is not None and report.resolution <= report.design.resolve
    assert report.rounds == report.looks[-1]["round"] <= (report.design.horizon or 0)
    assert_coherent_tiers(report)
    runs = load_sessions([path])[0].document["runs"]
    eliminated = {e["config"]: look["round"] for look in report.looks for e in look["eliminated"]}
    for config, round_ in eliminated.items():
        assert sum(r["config"] == config for r in runs) == round_
    assert report.fixed_equivalent is not None
    assert report.processes == len(runs) <= 0.6 * report.fixed_equivalent[1]
    choice = report.choice
    assert choice is not None and choice.config in report.tiers[0]
    chosen = report.estimates[(choice.config, "overall")]
    assert chosen.verdict == "faster" and chosen.low > 1 + report.margins["overall"]


def test_use_this_survives_copy_and_paste() -> None:
    """However narrow the terminal, the wheel path and every command of the "use this" block
    stay whole on their own lines."""
    name = "default-run-epyc.json.gz"
    (host,) = json.loads(compare(name, "--format", "json").stdout)["hosts"]
    commands = host["choice"]["install"]
    assert len(commands[0]) > 120
    proc = run_tfbuild("compare", name, cwd=GOLDEN, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("Use this", 1)[1].splitlines()
    assert f"# wheel: {host['choice']['wheel']}" in lines
    assert all(command in lines for command in commands)
    reason = lines[1 : lines.index(f"# wheel: {host['choice']['wheel']}")]
    assert len(reason) > 1 and all(line.startswith("# ") and len(line) <= 100 for line in reason)


def test_the_real_default_matrix_session() -> None:
    """The README's session (16 configs and the A/A copy, to the horizon of 30 rounds): its
    recorded looks replay exactly, every config put out early ran only until its look, the
    single-thread tunings went first, the tiers agree with the claims, fewer processes ran than
    a fixed design would need, and the baseline stays although it is out of the leading tier
    (what is ahead of it is not shown ahead by more than the margin)."""
    path = GOLDEN / "default-run.json.gz"
    report = analyse_host(load_sessions([path]))
    assert report.replay == [] and report.design.sequential
    assert report.stop is not None and report.stop["reason"] == "max_rounds"
    assert_coherent_tiers(report)
    eliminated = {e["config"]: look["round"] for look in report.looks for e in look["eliminated"]}
    single = {
        f"{v}:single-thread" for v in ("stock", "stock-2.14", "intel-2.14", "intel-avx512-2.14")
    }
    assert single <= set(eliminated)
    assert max(eliminated[c] for c in single) <= min(
        round_ for c, round_ in eliminated.items() if c not in single
    )
    for config, round_ in eliminated.items():
        assert report.estimates[(config, "overall")].rounds == round_
    runs = load_sessions([path])[0].document["runs"]
    for config, round_ in eliminated.items():
        assert sum(r["config"] == config for r in runs) == round_
    assert report.fixed_equivalent is not None
    assert report.processes == len(runs) < report.fixed_equivalent[1]
    assert report.baseline in report.tiers[1]
    assert all(e.verdict != "faster" for e in report.ranking)
    choice = report.choice
    assert choice is not None and choice.config == report.baseline
    assert "out of the leading tier" in choice.reason
