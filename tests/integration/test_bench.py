"""`tfbuild bench` end to end with real TensorFlow wheels from the package index; the tests of
the engine alone (a session killed and resumed, a build that fails its import beside one that
runs) on the stand-in TensorFlow (support/standin_tf.py)."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cext import build_wheel, init_disassembly, instruction_this_cpu_lacks, numpy1_wheel
from support.cli import run_tfbuild
from support.docker import containers, inspected

from tfbuild.resources import data_path
from tfbuild.results.rules import CURRENT_RULES
from tfbuild.sequential import look_schedule

pytestmark = [pytest.mark.tf, pytest.mark.slow]

SCHEMA = json.loads(data_path("schemas/results.schema.json").read_text())
TF = "tensorflow-cpu==2.21.0"
ONE_BLAS_THREAD = {"OPENBLAS_NUM_THREADS": "1"}
"""For sessions on the stand-in TensorFlow pinned to one CPU (--cpus): numpy's BLAS on one
thread. numpy starts a BLAS thread per CPU when it loads, in the zygote, before the payload pins
the process; two BLAS threads on one CPU made a stand-in process take 2.9 s instead of 0.2 s."""


def measured_every_benchmark(runs: list[dict[str, Any]]) -> bool:
    """Every benchmark of every run has samples and no error (a run whose benchmark failed is
    still a run that ended well: its process exited 0)."""
    entries = [entry for run in runs for entry in run["benchmarks"].values()]
    return bool(entries) and all("error" not in e and e["samples"] for e in entries)


@pytest.fixture(scope="module")
def workspace(tf_workspace: Path) -> Path:
    """Store and runtime cache shared with the other TensorFlow tests: TF is installed once."""
    return tf_workspace


def write_matrix(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "matrix.yaml"
    path.write_text(text)
    return path


def bench(workspace: Path, matrix: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_tfbuild("bench", *bench_args(workspace, matrix), *args, timeout=1800)


def bench_args(workspace: Path, matrix: Path) -> list[str]:
    return [
        "--matrix",
        str(matrix),
        "--store",
        str(workspace / "wheels"),
        "--cache-dir",
        str(workspace / "cache"),
        "--results",
        str(matrix.parent / "results"),
    ]


def only_results(matrix: Path) -> tuple[Path, dict[str, Any]]:
    (path,) = (matrix.parent / "results").glob("*.json")
    document = json.loads(path.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    return path, document


def test_quick_bench_two_tunings(workspace: Path) -> None:
    """The quick preset (the matrix's, capped at four rounds so the test does not depend on
    how fast this machine is) with --min-rounds: a sequential session that looks at its
    data, then `tfbuild compare` on its results in every format."""
    matrix = write_matrix(
        workspace / "quick",
        f"""\
variants:
  - {{name: tf, source: pypi, requirement: "{TF}"}}
tunings:
  - {{name: default}}
  - {{name: single-thread, intra_op: 1, inter_op: 1, env: {{OMP_NUM_THREADS: "1"}}}}
suite:
  benchmarks: [matmul-pinned, input-pinned]
  presets:
    quick: {{budget: 5m per config, resolve: 10%, max_rounds: 4}}
""",
    )
    proc = bench(
        workspace, matrix, "--quick", "--min-rounds", "3", "--host-key", "ci-pool",
        "--weight", "input-pinned=0.5",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    path, doc = only_results(matrix)
    session = doc["session"]
    assert session["complete"] is True and session["preset"] == "quick"
    assert session["host_key"] == "ci-pool"
    assert session["design"] == {
        "kind": "sequential",
        "min_rounds": 3,
        "max_rounds": 4,
        "budget_s": 900.0,  # 5 min for each of the two configs and the A/A control
        "resolve": 0.10,
        "decisions": CURRENT_RULES,
    }
    assert doc["baseline"]["aa_config"] == "tf:default~aa"
    assert doc["suite"]["weights"] == {"input-pinned": 0.5}  # what the looks weighed
    keys = {"tf:default", "tf:single-thread", "tf:default~aa"}
    assert len(doc["order"]) >= 3 and all(set(order) == keys for order in doc["order"][:3])
    assert all({"tf:default", "tf:default~aa"} <= set(order) for order in doc["order"])
    scheduled = [n for n in look_schedule(3, 4) if n <= len(doc["order"])]
    assert [look["round"] for look in doc["looks"]] == scheduled and scheduled
    stop = session["stop"]
    assert stop["reason"] in ("resolved", "max_rounds") and stop["round"] == len(doc["order"])
    assert f"stopped: {stop['message']}" in proc.stdout
    assert len(doc["runs"]) == sum(map(len, doc["order"]))
    assert all(run["status"] == "ok" for run in doc["runs"])
    for run in doc["runs"]:
        assert set(run["benchmarks"]) == set(doc["suite"]["benchmarks"])
        assert 0 < run["import_s"] < run["payload_s"] < run["wall_s"]
        for name, entry in run["benchmarks"].items():
            assert "error" not in entry, (name, entry.get("error"))
            assert len(entry["samples"]) == doc["suite"]["samples"][name] == 3
            assert all(s["throughput"] > 0 and s["cpu_s"] > 0 for s in entry["samples"])
            assert entry["trace_s"] > 0 and entry["build_s"] >= 0
        if run["config"] == "tf:single-thread":
            threads = run["threads"]
            assert (threads["intra_op"], threads["inter_op"]) == (1, 1)
            assert threads["env"] == {"OMP_NUM_THREADS": "1"}
    assert "one process, mean seconds: start and exit" in proc.stdout
    smoke = doc["variants"]["tf"]["smoke"]
    assert smoke["tensorflow"] == "2.21.0" and smoke["probe_ok"] is True
    manifest = doc["variants"]["tf"]["manifest"]
    assert manifest["name"].replace("_", "-") == "tensorflow-cpu"
    assert len(manifest["sha256"]) == 64 and manifest["index_url"]
    assert "A/A control" in proc.stdout and "tf:single-thread" in proc.stdout

    # ...and `tfbuild compare` on those real results, in every format, and gated on itself
    table = run_tfbuild("compare", str(path))
    assert table.returncode == 0, table.stderr
    assert "tf:single-thread" in table.stdout and "Use this" in table.stdout
    report = run_tfbuild("compare", str(path), "--format", "json")
    (host,) = json.loads(report.stdout)["hosts"]
    assert host["host"] == "ci-pool"
    assert {e["config"] for e in host["ranking"]} == {"tf:default", "tf:single-thread"}
    assert host["looks"] == doc["looks"] and host["replay"] == []  # replayed on its weights
    assert host["weights"] == {"matmul-pinned": 1.0, "input-pinned": 0.5}
    html = matrix.parent / "report.html"
    assert run_tfbuild("compare", str(path), "--format", "html", "-o", str(html)).returncode == 0
    assert html.read_text().count("data:image/svg+xml;base64,") == 2
    # ...and gated against older results of the same machine class, made from these with
    # one config 50x as fast (the new results are a regression beyond any noise four rounds of
    # a loaded machine show: at 4x, one benchmark's Holm p was 0.056 on a CI machine running
    # four test workers on two cores) or 0.8x (an improvement); the other configs' data the same
    for scale, code in ((50.0, 10), (0.8, 0)):
        old = matrix.parent / f"older-{scale}.json"
        old.write_text(json.dumps(scaled(doc, "tf:single-thread", scale)))
        gate = run_tfbuild("compare", str(path), "--against", str(old), "--fail-above", "5%")
        assert gate.returncode == code, gate.stdout + gate.stderr
        said = gate.stdout + gate.stderr
        regressed = re.findall(r"tf:single-thread (\S+) -\d+\.\d% \(slower than 5% allows", said)
        assert set(regressed) == (set(doc["suite"]["benchmarks"]) if code else set()), said


def scaled(doc: dict[str, Any], config: str, factor: float) -> dict[str, Any]:
    """A copy of a results document, as another session: `config`'s throughputs times
    `factor`."""
    other: dict[str, Any] = copy.deepcopy(doc)
    other["session"]["id"] = f"{doc['session']['id']}-older"
    for run in other["runs"]:
        if run["config"] == config:
            for entry in run["benchmarks"].values():
                for sample in entry["samples"]:
                    sample["throughput"] *= factor
    return other


def killed_at(argv: list[str], results: Path, enough: Callable[[dict[str, Any]], bool]) -> bool:
    """Run `tfbuild ARGV` and SIGKILL it once its results file shows `enough`; whether it was
    killed (False: it finished first). A reader never sees a half-written file."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tfbuild", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **ONE_BLAS_THREAD},
    )
    deadline = time.monotonic() + 900
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            files = list(results.glob("*.json"))
            if files:
                try:
                    seen = json.loads(files[0].read_text())
                except ValueError:  # pragma: no cover - atomic writes make this unreachable
                    pytest.fail("a reader saw a half-written results file")
                if enough(seen):
                    os.killpg(proc.pid, signal.SIGKILL)
                    break
            time.sleep(0.05)
    finally:
        if proc.poll() is None and time.monotonic() >= deadline:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert time.monotonic() < deadline, "the session neither finished nor got far enough"
    return proc.returncode == -signal.SIGKILL


def test_killed_session_keeps_finished_runs_and_resumes(
    standin: tuple[Path, Path], tmp_path: Path
) -> None:
    """SIGKILL in the middle of round 2, before the session's first look (after round 2) can
    end it: --resume keeps every run, finishes the interrupted round with its recorded order,
    takes the look there and goes on. Killed again in round 3, after that look, when the
    look did not end the session (it can: a config put out by the look's 1.5 % selection
    error, the two tunings doing the same work), the second --resume keeps the look too and
    runs to the end. Every stop the design allows passes. (On the stand-in TensorFlow: what is
    tested is the engine's, and a process takes 0.2 s.)"""
    wheel, workspace = standin
    matrix = write_matrix(
        tmp_path / "kill",
        f"""\
variants:
  - {{name: tf, source: wheel, path: {wheel}}}
tunings:
  - {{name: default}}
  - {{name: quiet, env: {{TF_CPP_MIN_LOG_LEVEL: "1"}}}}
suite:
  benchmarks: [matmul-pinned, input-pinned]
  min_rounds: 2
  max_rounds: 4
  resolve: 0.1%
""",
    )
    results = matrix.parent / "results"
    started = ["bench", *bench_args(workspace, matrix), "--cpus", "0"]
    assert killed_at(started, results, lambda seen: len(seen["runs"]) >= 4)
    path, doc = only_results(matrix)
    assert doc["session"]["complete"] is False and doc["looks"] == []
    kept = doc["runs"]
    assert 4 <= len(kept) < 6 and all(run["status"] == "ok" for run in kept)
    assert len(doc["order"]) == 2 and all(run["threads"]["affinity"] == [0] for run in kept)

    resume = ["bench", "--resume", str(path), "--store", str(workspace / "wheels"),
              "--cache-dir", str(workspace / "cache")]  # fmt: skip
    again = killed_at(resume, results, lambda seen: len(seen["runs"]) >= 7)
    _, middle = only_results(matrix)
    assert middle["runs"][: len(kept)] == kept and middle["order"][:2] == doc["order"]
    assert middle["looks"][0]["round"] == 2
    if again:
        assert middle["session"]["complete"] is False
        finished = run_tfbuild(*resume, env=ONE_BLAS_THREAD, timeout=1800)
        assert finished.returncode == 0, finished.stderr[-3000:]
    else:  # the look after round 2 ended the session: a config put out
        assert middle["session"]["stop"]["round"] == 2
        assert middle["looks"][0]["eliminated"]
    _, done = only_results(matrix)
    assert done["session"]["complete"] is True
    assert done["runs"][: len(middle["runs"])] == middle["runs"]
    assert done["looks"][: len(middle["looks"])] == middle["looks"]
    assert done["order"][: len(middle["order"])] == middle["order"]
    rounds = len(done["order"])
    assert [look["round"] for look in done["looks"]] == [
        n for n in look_schedule(2, 4) if n <= rounds
    ]
    pairs = [(run["round"], run["config"]) for run in done["runs"]]
    assert len(pairs) == len(set(pairs)) == sum(map(len, done["order"]))
    assert done["session"]["stop"]["reason"] in ("max_rounds", "resolved")
    assert done["session"]["stop"]["round"] == rounds
    assert all(run["status"] == "ok" and run["threads"]["affinity"] == [0] for run in done["runs"])
    assert measured_every_benchmark(done["runs"])
    replayed = run_tfbuild("compare", str(path), "--format", "json")
    assert json.loads(replayed.stdout)["hosts"][0]["replay"] == []


def test_import_failure_is_recorded_and_others_run(
    standin: tuple[Path, Path], tmp_path: Path
) -> None:
    """A build compiled against NumPy 1.x whose requirements let pip install NumPy 2 (as
    intel-tensorflow 2.14 does): its smoke test fails to import it and says what to add; the
    other variant (the stand-in TensorFlow) runs. The build is a toy `tensorflow` with a C
    extension built against NumPy 1.26's headers (support.cext.numpy1_wheel): the failure is
    NumPy's own, as with the real wheel, without its 250 MB."""
    standin_wheel, workspace = standin
    wheel = numpy1_wheel(tmp_path)
    matrix = write_matrix(
        tmp_path / "import",
        f"""\
variants:
  - {{name: tf, source: wheel, path: {standin_wheel}}}
  - {{name: numpy1-build, source: wheel, path: {wheel}}}
suite: {{benchmarks: [matmul-pinned], rounds: 1}}
""",
    )
    proc = bench(workspace, matrix)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, doc = only_results(matrix)
    (failure,) = doc["failures"]
    assert failure["variant"] == "numpy1-build" and failure["stage"] == "smoke"
    assert failure["kind"] == "import"
    assert failure["reason"] == (
        "TensorFlow failed to import: it was built against NumPy 1.x and NumPy 2 is installed; "
        'add constraints: ["numpy<2"] to this variant'
    )
    assert failure["configs"] == ["numpy1-build:default"]
    assert {run["config"] for run in doc["runs"]} == {"tf:default", "tf:default~aa"}
    assert all(run["status"] == "ok" for run in doc["runs"])
    assert measured_every_benchmark(doc["runs"])
    assert "failed numpy1-build: smoke: TensorFlow failed to import" in proc.stdout


def test_sigill_is_explained(workspace: Path, tmp_path: Path) -> None:
    name, flag, statement, shows = instruction_this_cpu_lacks()
    wheel = build_wheel(
        tmp_path,
        package="tensorflow",
        version="0.0.1",
        cflags=[flag] if flag else [],
        statement=statement,
        requires=["numpy"],
    )
    # The fixture is what it claims: the instruction is in the module's init code.
    assert re.search(shows, init_disassembly(wheel, "tensorflow")), f"no {name} instruction"
    matrix = write_matrix(
        tmp_path / "m",
        f"variants:\n  - {{name: needs-{name.replace('_', '-')}, source: wheel, path: {wheel}}}\n",
    )
    if name != "ud2":
        # The audit sees the instruction in the module's init code and refuses the wheel
        # before installing it...
        refused = bench(workspace, matrix, "--rounds", "1")
        assert refused.returncode == 11, refused.stderr[-3000:]
        (result,) = list((matrix.parent / "results").glob("*.json"))
        failure = json.loads(result.read_text())["failures"][0]
        assert failure["stage"] == "inspect"
        assert f"will crash here: needs {name.upper()}" in failure["reason"]
        result.unlink()
    # ...and with --force it is installed, run, and dies with SIGILL.
    proc = bench(workspace, matrix, "--rounds", "1", "--force")
    assert proc.returncode == 11, proc.stderr[-3000:]
    assert "no config could run" in proc.stderr
    _, doc = only_results(matrix)
    (failure,) = doc["failures"]
    assert failure["kind"] == "sigill" and failure["signal"] == signal.SIGILL
    assert failure["reason"] == (
        "this build uses CPU instructions this machine lacks (killed by SIGILL, signal 4)"
    )
    assert doc["runs"] == [] and doc["session"]["complete"] is True


@pytest.mark.docker
def test_quick_bench_in_runtime_containers(workspace: Path, base_image: str) -> None:
    """tensorflow-cpu from the index, installed into a runtime image and measured in
    containers without network, as a non-root user: forked from zygote containers, a new one
    for each of a config's first LIVE processes, each recorded with its runs (the fresh path in
    containers: test_remote_engine)."""
    matrix = write_matrix(
        workspace / "docker",
        f"""\
defaults:
  base_images: {{build: "{base_image}", runtime: "{base_image}"}}
variants:
  - {{name: tf, source: pypi, requirement: "{TF}"}}
suite: {{benchmarks: [gru-static, matmul-pinned]}}
""",
    )
    with inspected("org.tfbuild=zygote") as seen:
        proc = bench(
            workspace, matrix, "--rounds", "2", "--runtime", "docker", "--processes", "forked"
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, doc = only_results(matrix)
    assert doc["suite"]["processes"] == "forked"
    runtime = doc["variants"]["tf"]["runtime"]
    assert runtime["kind"] == "docker" and runtime["image"].startswith("tfbuild/runtime:")
    # what pip installed into the image, as its report there says, each file by its sha256
    packages = {p["name"].lower().replace("_", "-"): p for p in runtime["packages"]}
    assert packages["tensorflow-cpu"]["sha256"] == doc["variants"]["tf"]["artifact"]["sha256"]
    assert packages["numpy"]["version"] == doc["variants"]["tf"]["smoke"]["numpy"]
    assert all(len(p["sha256"] or "") == 64 for p in packages.values()), packages
    # How the benchmark containers were confined, as the engine reports it; they carry the
    # session's id (other tests' sessions run meanwhile).
    session = doc["session"]["id"]
    ours = [a for a in seen.values() if a["Config"]["Labels"].get("org.tfbuild.session") == session]
    # Each config's two processes (the baseline's and its A/A copy's) came from two of its
    # LIVE zygotes, one container each, and every run names the one it came from.
    zygotes: dict[str, set[str]] = {run["config"]: set() for run in doc["runs"]}
    for run in doc["runs"]:
        zygotes[run["config"]].add(run["zygote"])
    assert all(len(ids) == 2 for ids in zygotes.values()), zygotes
    assert len(ours) == sum(map(len, zygotes.values())) == 4, "not one container per zygote"
    for attrs in ours:
        config, limits = attrs["Config"], attrs["HostConfig"]
        assert config["User"] == "10001:10001" and config["Image"] == runtime["image"]
        assert limits["NetworkMode"] == "none" and limits["CapDrop"] == ["ALL"]
        assert "no-new-privileges" in limits["SecurityOpt"]
        assert limits["ReadonlyRootfs"] is True and "/tmp" in limits["Tmpfs"]
        assert 0 < limits["PidsLimit"] <= 4096
        mounts = {m["Destination"]: m for m in attrs["Mounts"]}
        assert set(mounts) == {"/io", "/io/traces"}  # and the build's saved training steps:
        assert mounts["/io/traces"]["RW"] is False  # read-only, in the volume made once
        assert mounts["/io/traces"]["Name"].startswith("tfbuild-traces-")
    assert len(doc["runs"]) == 4 and all(run["status"] == "ok" for run in doc["runs"])
    for run in doc["runs"]:
        assert all(
            s["throughput"] > 0 for entry in run["benchmarks"].values() for s in entry["samples"]
        )
    assert containers(f"org.tfbuild.session={session}", stopped=True) == []
