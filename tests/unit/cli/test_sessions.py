"""`tfbuild bench`, `run` and `calibrate` up to the point where they would start measuring: the
settings each reads from its options (as the command line parses them), the defaults of the
options only `bench` has, and every check they make before anything is planned, fetched or
written, each a user mistake with its own exit code and one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import RESULTS, debug_said, run_tfbuild
from support.env import REPO

from tfbuild.bench.workload import WorkloadRequest
from tfbuild.cli.options import options_record, resolve_options
from tfbuild.cli.planning import SessionMachine
from tfbuild.cli.sessions import ResumeSettings, SessionArguments, SessionSettings, bench, run
from tfbuild.cli.values import Selection, SuiteRequest
from tfbuild.config.model import Budget
from tfbuild.errors import UsageError

CALIBRATION = RESULTS / "calibration-3configs-10rounds.json.gz"
NO_ENGINE = "unix:///nonexistent/docker.sock"
"""DOCKER_HOST for a command that must find no Docker engine."""
SOURCE_BASELINE = (
    "variants:\n"
    "  - {name: src, source: bazel, cpu_flags: [avx2, fma]}\n"
    "  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
)
"""A matrix whose baseline (its first variant) is a source build."""


@pytest.fixture(autouse=True)
def _no_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The options' environment variables unset, the user's cache in this test's folder."""
    for name in ("TFBUILD_WHEELS", "TFBUILD_RESULTS", "TFBUILD_CACHE_DIR", "TFBUILD_PROCESSES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))


def parsed(command: object, *args: str) -> SessionSettings:
    """The settings of `bench` or `run` from a command line, parsed by the command itself."""
    ctx = command.make_context(command.name, list(args))  # type: ignore[attr-defined]
    with ctx:
        resolve_options(ctx)
        own = ("build_sources", "fmt")  # run's own, not the session's
        given = {k: v for k, v in ctx.params.items() if k not in own}
        return SessionSettings.of(options_record(SessionArguments, given))


def test_bench_settings_hold_every_option_as_given(tmp_path: Path) -> None:
    settings = parsed(
        bench,
        "--matrix", "m.yaml", "--tensorflow", "2.17.1", "--only", "stock:*", "--skip", "x:*",
        "--with", "intel-2023", "--quick", "--seed", "7", "--host-key", "box-1",
        "--cpus", "0", "--runtime", "local", "--container-cpus", "1.5", "--memory", "8g",
        "--store", "s", "--results", "r", "--cache-dir", "c", "--force", "-q",
        "--timeout", "60", "--refresh", "--processes", "fresh", "--weight", "gru-keras=2",
        "--workload", "model", "--batch", "8", "--shape", "x=1,2", "--calls", "20",
        "--forms", "litert,optimized", "--atol", "0.01",
    )  # fmt: skip
    assert settings == SessionSettings(
        matrix=Path("m.yaml"),
        tensorflow="2.17.1",
        selection=Selection(only=("stock:*",), skip=("x:*",), opt_in=("intel-2023",)),
        suite=SuiteRequest(preset="quick"),
        seed=7,
        host_key="box-1",
        machine=SessionMachine(runtime="local", cpus=(0,), container_cpus=1.5, memory="8g"),
        store=Path("s"),
        results_dir=Path("r"),
        cache_dir=Path("c"),
        force=True,
        quiet=True,
        timeout=60.0,
        refresh=True,
        workload=WorkloadRequest(
            path=Path("model"), batch=8, shapes=("x=1,2",), calls=20, atol=0.01
        ),
        with_suite=False,
        processes="fresh",
        weights=("gru-keras=2",),
        forms=("as-given", "litert", "optimized"),
    )


def test_bench_settings_without_options_are_the_documented_defaults(tmp_path: Path) -> None:
    """The store ./wheels, results ./results, the user's cache folder (XDG_CACHE_HOME), the
    suite's own preset, forked processes, half an hour a benchmark process, every config."""
    settings = parsed(bench)
    assert (settings.store, settings.results_dir) == (Path("wheels"), Path("results"))
    assert settings.cache_dir == tmp_path / "xdg" / "tfbuild"
    assert settings.suite == SuiteRequest()
    assert settings.selection == Selection()
    assert settings.machine == SessionMachine(runtime="auto")
    assert (settings.processes, settings.timeout, settings.refresh) == ("forked", 1800.0, False)
    assert (settings.workload, settings.weights, settings.forms) == (None, (), ())
    assert (settings.seed, settings.host_key, settings.force, settings.quiet) == (
        None, None, False, False,
    )  # fmt: skip


def test_run_settings_take_bench_only_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    """`run` has no --timeout, --refresh, --container-cpus or --memory: its settings hold what
    bench would take without them; the environment sets the store and the processes."""
    monkeypatch.setenv("TFBUILD_WHEELS", "/srv/wheels")
    monkeypatch.setenv("TFBUILD_PROCESSES", "fresh")
    settings = parsed(run, "--budget", "1h30m", "--resolve", "4%", "--min-rounds", "3")
    assert settings.suite == SuiteRequest(budget=Budget(5400.0), resolve=0.04, min_rounds=3)
    assert (settings.timeout, settings.refresh) == (1800.0, False)
    assert settings.machine == SessionMachine(runtime="auto")  # no container limits
    assert settings.store == Path("/srv/wheels") and settings.processes == "fresh"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("--quick", "--preset", "full"),
            "--quick is the preset named quick; give --quick or --preset",
        ),
        (
            ("--rounds", "6", "--budget", "1h"),
            "--rounds asks for a fixed design; --budget, "
            "--resolve and --min-rounds are for the sequential one: give one or the other",
        ),
        (("--budget", "soon"), "--budget 'soon': expected a duration like 20m or 1h30m in all"),
        (("--cpus", "a-b"), "--cpus 'a-b': expected a CPU list like 0 or 0,1"),
        (("--host-key", " "), "--host-key"),
        (("--with-suite",), "--with-suite: only with --workload PATH"),
        (
            ("--forms", "litrt"),
            "--forms 'litrt': unknown model form 'litrt'; expected a "
            "comma-separated list of as-given, optimized, litert, litert-int8; did you mean "
            "'litert'?",
        ),
    ],
    ids=[
        "quick-and-preset",
        "rounds-and-budget",
        "budget",
        "cpus",
        "host-key",
        "with-suite",
        "form",
    ],
)
def test_settings_refuse_a_mistaken_option(args: tuple[str, ...], said: str) -> None:
    with pytest.raises(UsageError, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        parsed(bench, *args)


def test_resume_settings_read_only_where_the_session_is_and_goes(tmp_path: Path) -> None:
    ctx = bench.make_context("bench", ["--resume", "old.json", "--store", "s", "--quick", "-q"])
    resolve_options(ctx)
    resuming = ResumeSettings.of(options_record(SessionArguments, ctx.params))
    assert resuming == ResumeSettings(
        results_file=Path("old.json"),
        store=Path("s"),
        cache_dir=tmp_path / "xdg" / "tfbuild",
        results_dir=Path("results"),
        quiet=True,
    )


@pytest.mark.parametrize(
    ("command", "args", "said"),
    [
        (
            "bench",
            ("--quick", "--preset", "full"),
            "tfbuild: --quick is the preset named quick; give --quick or --preset",
        ),
        (
            "bench",
            ("--rounds", "6", "--budget", "1h"),
            "tfbuild: --rounds asks for a fixed "
            "design; --budget, --resolve and --min-rounds are for the sequential one: give one or "
            "the other",
        ),
        (
            "run",
            ("--rounds", "6", "--resolve", "2%"),
            "tfbuild: --rounds asks for a fixed "
            "design; --budget, --resolve and --min-rounds are for the sequential one: give one or "
            "the other",
        ),
        ("bench", ("--batch", "8"), "tfbuild: --batch: only with --workload PATH"),
        ("run", ("--calls", "8"), "tfbuild: --calls: only with --workload PATH"),
    ],
    ids=[
        "bench-quick-and-preset",
        "bench-rounds-and-budget",
        "run-rounds-and-resolve",
        "bench-batch",
        "run-calls",
    ],
)
def test_a_session_refuses_a_mistake_before_anything_is_written(
    tmp_path: Path, command: str, args: tuple[str, ...], said: str
) -> None:
    """Run in an empty folder: exit 64, the one line, and the folder still empty (no
    ./wheels, ./results or cache made)."""
    proc = run_tfbuild(command, *args, cwd=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path)})
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr == said + "\n"
    assert list(tmp_path.iterdir()) == []


def test_run_without_the_baseline_is_refused_before_anything_is_fetched(tmp_path: Path) -> None:
    env = {"DOCKER_HOST": NO_ENGINE, "XDG_CACHE_HOME": str(tmp_path)}
    proc = run_tfbuild("run", "--only", "avx2-fma:default", cwd=tmp_path, env=env)
    assert proc.returncode == 4, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "tfbuild: the selection leaves out the baseline stock:default (matrix.yaml's "
        "`baseline:`), which every config is ranked against: add --only stock:default"
    )
    assert not (tmp_path / "wheels").exists() and not (tmp_path / "results").exists()


def test_debug_says_each_setting_of_the_session_as_it_was_resolved(tmp_path: Path) -> None:
    """run --quick --budget 5m, refused only once its settings are resolved (the selection
    leaves the baseline out): --debug says each suite setting as the session would use it,
    from the option, from the matrix's quick preset, or the design made sequential by
    --budget; the forms from the matrix's default; the options from the command line, the
    environment or the default (the cache folder computed from XDG_CACHE_HOME)."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text((REPO / "matrix.yaml").read_text())
    env = {"DOCKER_HOST": NO_ENGINE, "XDG_CACHE_HOME": str(tmp_path / "xdg"),
           "TFBUILD_RESULTS": str(tmp_path / "r")}  # fmt: skip
    args = ["run", "--quick", "--budget", "5m", "--only", "avx2-fma:default", "--matrix",
            str(matrix)]  # fmt: skip
    proc = run_tfbuild("--debug", *args, cwd=tmp_path, env=env)
    assert proc.returncode == 4, proc.stderr
    said = debug_said(proc.stderr)
    text = matrix.read_text().splitlines()
    line = {k: next(n for n, t in enumerate(text, 1) if t.strip().startswith(k))
            for k in ("min_rounds:", "quick:")}  # fmt: skip
    assert said["suite.budget"] == ("5 min", "option --budget")
    assert said["suite.resolve"] == ("10%", f"matrix {matrix}:{line['quick:']}")  # the preset's
    assert said["suite.min_rounds"] == (
        "3",
        f"matrix {matrix}:{line['min_rounds:']}",
    )  # the suite's
    assert said["suite.max_rounds"][0] == "30"
    assert said["suite.rounds"] == ("none", "default")
    assert said["forms"] == ("as-given", "default")
    assert said["defaults.tensorflow"][1].startswith(f"matrix {matrix}:")
    assert said["--results"] == (str(tmp_path / "r"), "environment TFBUILD_RESULTS")
    assert said["--cache-dir"] == (str(tmp_path / "xdg" / "tfbuild"), "default")
    assert said["--quick"] == ("yes", "option --quick")
    assert proc.stderr.splitlines()[-1].startswith("tfbuild: the selection leaves out")


def test_run_without_a_build_of_the_baseline_has_nothing_to_rank(tmp_path: Path) -> None:
    """The baseline is a source build the store does not hold: without --build, exit 8 with
    the command that builds it; with --build and no Docker engine, exit 5 naming the engine
    asked. Nothing fetched, nothing written."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text(SOURCE_BASELINE)
    env = {"DOCKER_HOST": NO_ENGINE, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    common = ["run", "--matrix", str(matrix), "--store", str(tmp_path / "w"),
              "--results", str(tmp_path / "r")]  # fmt: skip
    proc = run_tfbuild(*common, cwd=tmp_path, env=env)
    assert proc.returncode == 8, proc.stderr
    said = proc.stderr.splitlines()[-1]
    assert said.startswith(
        "tfbuild: Nothing to rank: the baseline src needs a build. Left out the source build "
        "src: it is not in the store, and a run builds only when asked (--build). To build: "
        "`tfbuild build --variant src`, then run again."
    ), said
    proc = run_tfbuild(*common, "--build", cwd=tmp_path, env=env)
    assert proc.returncode == 5, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "tfbuild: Skipped the source variants src: building them needs a Docker engine and "
        f"none answers at {NO_ENGINE}. To include them: install and start Docker "
        "(Debian/Ubuntu: apt-get install docker.io, then start dockerd) or point DOCKER_HOST at "
        "an engine; `tfbuild base-image` puts the base image on it; then run `tfbuild run` "
        "again."
    )
    assert not (tmp_path / "w").exists() and not (tmp_path / "r").exists()


def test_resume_reads_the_results_file_alone(tmp_path: Path) -> None:
    """--resume continues a session as it was recorded: the options that would shape a new
    one (here a conflicting --rounds and --budget) are not read, the file is."""
    missing = tmp_path / "gone.json"
    proc = run_tfbuild("bench", "--resume", str(missing), "--rounds", "6", "--budget", "1h",
                       cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 9, proc.stderr
    assert proc.stderr == f"tfbuild: {missing}: cannot read (No such file or directory)\n"
    proc = run_tfbuild("bench", "--resume", str(CALIBRATION), cwd=tmp_path)
    assert proc.returncode == 9, proc.stderr
    assert proc.stderr.startswith(f"tfbuild: {CALIBRATION}: a calibration file")
    assert "expected a file of schema 'tfbuild.results/2'" in proc.stderr


def test_calibrate_shows_an_earlier_calibration_and_refuses_other_files(tmp_path: Path) -> None:
    shown = run_tfbuild("calibrate", "--report", str(CALIBRATION), "--format", "markdown",
                        cwd=tmp_path)  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("30 processes (intel-2.14:default, stock:default, "
                                   "stock:single-thread; 10 rounds).")  # fmt: skip
    results = RESULTS / "aa-run.json"
    other = run_tfbuild("calibrate", "--report", str(results), cwd=tmp_path)
    assert other.returncode == 9, other.stderr
    assert "expected a file of schema 'tfbuild.calibration/1'" in other.stderr
    missing = run_tfbuild("calibrate", "--report", str(tmp_path / "gone.json"), cwd=tmp_path)
    assert missing.returncode == 64 and "does not exist" in missing.stderr
    rounds = run_tfbuild("calibrate", "--rounds", "1", cwd=tmp_path)
    assert rounds.returncode == 64
    assert "Invalid value for '--rounds': 1 is not in the range 2<=x<=1000." in rounds.stderr
    assert list(tmp_path.iterdir()) == []
