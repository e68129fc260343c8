"""`tfbuild bench --workload` with real TensorFlow: a GRU text classifier made in the test (saved
as a SavedModel and as a .keras file) and a script, measured in fresh processes, ranked by
`compare`; inputs generated, given, or refused with the tensor named; a build that cannot load
the model fails alone; sessions of different work are never compared."""

from __future__ import annotations

import errno
import json
import subprocess
import textwrap
import uuid
from pathlib import Path
from typing import Any

import docker
import jsonschema
import numpy as np
import pytest
from support.cli import run_tfbuild
from support.models import SEQ, make_models

from tfbuild import engine, files
from tfbuild.bench.workload import WorkloadRequest, digest_of, payload_spec, resolve
from tfbuild.config.values import XLA_AUTO_FLAGS
from tfbuild.resources import data_path
from tfbuild.runtime.base import PAYLOAD, local_env
from tfbuild.runtime.container import workload_volume

pytestmark = [pytest.mark.tf, pytest.mark.slow]

SCHEMA = json.loads(data_path("schemas/results.schema.json").read_text())
MATRIX = """\
variants:
  - {name: stock, source: pypi, requirement: "tensorflow-cpu==2.21.0"}
  - name: stock-2.14
    source: pypi
    requirement: "tensorflow-cpu==2.14.1"
    constraints: ["numpy<2"]
tunings:
  - {name: default}
  - {name: single-thread, intra_op: 1, inter_op: 1, env: {OMP_NUM_THREADS: "1"}}
suite:
  benchmarks: [gru-keras]  # what --with-suite runs beside the workload
"""
LATENCY = ("workload-p50", "workload-p90", "workload-p99")


@pytest.fixture(scope="module")
def models(tf_python: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return make_models(tf_python, tmp_path_factory.mktemp("models"))


def bench(
    workspace: Path, folder: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "matrix.yaml").write_text(MATRIX)
    proc = run_tfbuild(
        "bench",
        "--matrix", str(folder / "matrix.yaml"),
        "--store", str(workspace / "wheels"),
        "--cache-dir", str(workspace / "cache"),
        "--results", str(folder / "results"),
        "--runtime", "local",
        "--rounds", "2",
        "--seed", "7",
        *args,
        timeout=1800,
    )  # fmt: skip
    found = sorted((folder / "results").glob("*.json"))
    document = json.loads(found[-1].read_text()) if found else None
    if document is not None:
        jsonschema.Draft202012Validator(SCHEMA).validate(document)
    return proc, document


def values(document: dict[str, Any], config: str, bench: str) -> list[dict[str, Any]]:
    return [
        run["benchmarks"][bench]
        for run in document["runs"]
        if run["config"] == config and run["status"] == "ok"
    ]


def test_a_savedmodel_is_ranked_on_throughput_and_latency(
    tf_workspace: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    """Its serving signature has a dynamic batch dimension: --batch fills it. Every process
    records items/s (batch x calls / seconds) and p50 <= p90 <= p99 latency; `compare` ranks
    the configs on all four and says what work was measured."""
    proc, document = bench(
        tf_workspace, tmp_path / "sm", "--workload", str(models["savedmodel"]), "--batch", "4",
        "--calls", "20", "--only", "stock:*",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document is not None
    assert "workload stock: loaded in" in proc.stderr + proc.stdout
    suite = document["suite"]
    assert suite["benchmarks"] == ["workload", *LATENCY]
    workload = suite["workload"]
    assert workload["kind"] == "savedmodel" and workload["signature"] == "serving_default"
    assert workload["digest"] == digest_of(models["savedmodel"])
    assert (workload["batch"], workload["calls"]) == (4, 20)
    for config in ("stock:default", "stock:single-thread", "stock:default~aa"):
        throughput = values(document, config, "workload")
        assert len(throughput) == 2
        for entry in throughput:
            assert entry["iterations"] == 20 and len(entry["samples"]) == 3
            for s in entry["samples"]:
                assert s["throughput"] == pytest.approx(4 * 20 / s["wall_s"])
        for run in range(2):
            p50, p90, p99 = (values(document, config, b)[run] for b in LATENCY)
            assert p50["iterations"] == 80
            speeds = [e["samples"][0]["throughput"] for e in (p50, p90, p99)]
            assert speeds[0] >= speeds[1] >= speeds[2] > 0  # calls/s: 1 / latency
    path = next((tmp_path / "sm" / "results").glob("*.json"))
    report = run_tfbuild("compare", str(path))
    assert report.returncode == 0, report.stderr
    assert f"Workload: savedmodel {models['savedmodel']} (sha256 {workload['digest'][:12]})" in (
        " ".join(report.stdout.split())
    )
    for name in ("workload", *LATENCY):
        assert any(line.startswith(f"{name} ") for line in report.stdout.splitlines()), name
    figures = json.loads(run_tfbuild("compare", str(path), "--format", "json").stdout)
    ranked = {e["config"] for e in figures["hosts"][0]["ranking"]}
    assert {"stock:default", "stock:single-thread"} <= ranked


@pytest.mark.usefixtures("tf_214_python")
def test_a_keras_file_under_a_build_that_cannot_load_it_fails_that_build_alone(
    tf_workspace: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    """A Keras 3 .keras file: TensorFlow 2.14 (Keras 2) cannot load it, so that variant fails
    with the loader's words and 2.21 is measured; the suite runs beside it (--with-suite)."""
    proc, document = bench(
        tf_workspace, tmp_path / "keras", "--workload", str(models["keras"]), "--with-suite",
        "--only", "stock:default", "--only", "stock-2.14:default",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document is not None
    (failure,) = document["failures"]
    assert failure["variant"] == "stock-2.14" and failure["stage"] == "smoke"
    assert failure["reason"].startswith("cannot run the workload: tf.keras.models.load_model")
    assert len(failure["reason"]) < 400  # the loader's whole message is kept beside it
    assert failure["kind"] == "workload"
    assert failure["message"].startswith("tf.keras.models.load_model failed: ")
    assert document["variants"]["stock"]["status"] == "ready"
    assert document["suite"]["benchmarks"] == ["gru-keras", "workload", *LATENCY]
    (entry, *_) = values(document, "stock:default", "workload")
    assert entry["samples"][0]["throughput"] > 0
    inputs = json.loads(json.dumps(document["suite"]["workload"]))
    assert inputs["kind"] == "keras" and inputs["signature"] is None


def test_a_script_workload_and_different_work_never_compared(
    tf_workspace: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    """setup() once, step(state) timed, ITEMS items a step; then `compare` and the regression
    gate refuse to put this session beside one of another workload (the same script at another
    --calls: this session's record with the fields such a session writes otherwise)."""
    proc, document = bench(
        tf_workspace, tmp_path / "script", "--workload", str(models["script"]),
        "--calls", "20", "--only", "stock:default",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document is not None
    for entry in values(document, "stock:default", "workload"):
        for s in entry["samples"]:
            assert s["throughput"] == pytest.approx(8 * 20 / s["wall_s"])  # ITEMS = 8
    # Another session of the same script at --calls 10: this one's results as that session
    # writes them (its own id, 10 calls a step, each process's iterations).
    mine = next((tmp_path / "script" / "results").glob("*.json"))
    theirs = tmp_path / "other" / "results" / "other.json"
    theirs.parent.mkdir(parents=True)
    other = json.loads(mine.read_text())
    other["session"]["id"] = f"{other['session']['id']}-other"
    other["suite"]["workload"]["calls"] = 10
    for run in other["runs"]:
        for entry in run["benchmarks"].values():
            entry["iterations"] = 10
    theirs.write_text(json.dumps(other))
    mixed = run_tfbuild("compare", str(mine), str(theirs))
    assert mixed.returncode == 9, mixed.stderr
    assert "measured different work and are not compared" in mixed.stderr
    assert "20 calls" in mixed.stderr and "10 calls" in mixed.stderr
    gate = run_tfbuild("compare", str(mine), "--against", str(theirs))
    assert gate.returncode == 10, gate.stdout + gate.stderr
    said = " ".join((gate.stdout + gate.stderr).split())
    assert "nothing compared: 1 old result file(s) measured other work" in said
    assert "no old results from" not in said
    # among old results of both kinds, the gate keeps those of the same work and says so
    mixed_old = run_tfbuild("compare", str(mine), "--against", str(theirs), "--against", str(mine))
    said = " ".join((mixed_old.stdout + mixed_old.stderr).split())
    assert mixed_old.returncode == 0, said
    assert "1 old result file(s) measured other work and are not compared" in said


def test_a_script_without_step_is_refused_before_benchmarking(
    tf_workspace: Path, tmp_path: Path
) -> None:
    script = tmp_path / "nostep.py"
    script.write_text("def setup():\n    return 1\n")
    proc, document = bench(
        tf_workspace, tmp_path / "nostep", "--workload", str(script), "--only", "stock:default"
    )
    assert proc.returncode == 15, proc.stderr[-3000:]
    assert "nostep.py defines no step(state)" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert document is None  # nothing was measured, and nothing is left to resume


@pytest.mark.parametrize(
    ("arrays", "message"),
    [
        (
            {"token": np.zeros((2, SEQ), np.int32)},
            "no array for input 'tokens' (inputs: tokens (int32, (None, 12)))",
        ),
        (
            {"tokens": np.zeros((2, SEQ + 1), np.int32)},
            "array 'tokens' has shape (2, 13), which does not fit the input tokens (int32, "
            "(None, 12))",
        ),
        (
            {"tokens": np.zeros((2, SEQ), np.float64)},
            "array 'tokens' is float64, the input is int32",
        ),
    ],
)
def test_inputs_that_do_not_fit_the_signature_name_the_tensor(
    tf_workspace: Path, models: dict[str, Path], tmp_path: Path, arrays: dict[str, Any],
    message: str,
) -> None:  # fmt: skip
    npz = tmp_path / "inputs.npz"
    np.savez(npz, **arrays)
    proc, _ = bench(
        tf_workspace, tmp_path / "inputs", "--workload", str(models["savedmodel"]),
        "--inputs", str(npz), "--only", "stock:default",
    )  # fmt: skip
    assert proc.returncode == 15, proc.stderr[-3000:]
    assert f"--inputs {npz}: {message}" in " ".join(proc.stderr.split())


def test_a_signature_with_an_open_dimension_needs_its_shape(
    tf_workspace: Path, models: dict[str, Path], tmp_path: Path
) -> None:
    """The `scaled` signature's second input is (None, None): the batch fills the first
    dimension, the second must be given; with --shape it runs, on the given inputs too."""
    proc, _ = bench(
        tf_workspace, tmp_path / "open", "--workload", str(models["savedmodel"]),
        "--signature", "scaled", "--only", "stock:default",
    )  # fmt: skip
    assert proc.returncode == 15, proc.stderr[-3000:]
    assert "input scale (float32, (None, None)) has an unknown dimension 1: give its shape " in (
        " ".join(proc.stderr.split())
    )
    assert "--shape scale=1,N" in proc.stderr
    proc, document = bench(
        tf_workspace, tmp_path / "shaped", "--workload", str(models["savedmodel"]),
        "--signature", "scaled", "--batch", "3", "--shape", "scale=3,5", "--calls", "10",
        "--only", "stock:default",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document is not None
    assert "inputs scale float32 (3,5), tokens int32 (3,12)" in proc.stderr + proc.stdout
    missing, _ = bench(
        tf_workspace, tmp_path / "nosig", "--workload", str(models["savedmodel"]),
        "--signature", "serve", "--only", "stock:default",
    )  # fmt: skip
    assert missing.returncode == 15, missing.stderr[-3000:]
    assert "the SavedModel has no signature 'serve' (it has: scaled, serving_default)" in (
        missing.stderr
    )
    for wrong, said in (
        (["--shape", "scal=3,5"], "--shape scal=...: the model has no input 'scal'"),
        (["--batch", "4", "--shape", "scale=4,5", "--shape", "tokens=4,12"], "--batch 4: no input"),
    ):
        proc, _ = bench(
            tf_workspace, tmp_path / "wrong", "--workload", str(models["savedmodel"]),
            "--signature", "scaled", *wrong, "--only", "stock:default",
        )  # fmt: skip
        assert proc.returncode == 15 and said in proc.stderr, proc.stderr[-3000:]


PROBE = """\
    import socket
    from pathlib import Path


    FILES = ["data/scale.txt"]


    def setup():
        beside = Path(__file__).parent / FILES[0]
        found = [f"read {FILES[0]}: {beside.read_text().strip()}"]
        for target in (Path(__file__), Path(__file__).with_name("new-file"), beside):
            try:
                target.write_text("changed")
                found.append(f"write {target.name}: allowed")
            except OSError as exc:
                found.append(f"write {target.name}: {type(exc).__name__} errno {exc.errno}")
        try:
            socket.create_connection(("pypi.org", 443), timeout=5).close()
            found.append("network: reached pypi.org")
        except OSError as exc:
            found.append(f"network: {type(exc).__name__}")
        raise RuntimeError("; ".join(found))


    def step(state):
        return None
"""


@pytest.mark.docker
def test_in_a_container_the_model_is_read_only_and_there_is_no_network(
    tf_workspace: Path, models: dict[str, Path], base_image: str, tmp_path: Path
) -> None:
    """A script that reads the file its FILES names beside it, tries to change both, add a
    file beside them and reach the index reports what the container let it do (by failing
    with it, so the reason is recorded); then the SavedModel is measured in containers like
    any benchmark."""
    probe = tmp_path / "probe.py"
    probe.write_text(textwrap.dedent(PROBE))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "scale.txt").write_text("2.5\n")
    folder = tmp_path / "docker"
    folder.mkdir()
    (folder / "matrix.yaml").write_text(
        f'defaults:\n  base_images: {{build: "{base_image}", runtime: "{base_image}"}}\n' + MATRIX
    )
    common = [
        "--matrix", str(folder / "matrix.yaml"),
        "--store", str(tf_workspace / "wheels"), "--cache-dir", str(tf_workspace / "cache"),
        "--runtime", "docker", "--rounds", "2", "--only", "stock:default",
    ]  # fmt: skip
    proc = run_tfbuild(
        "bench", *common, "--results", str(folder / "probe"), "--workload", str(probe),
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 11, proc.stderr[-3000:]  # nothing could run: the probe failed
    (path,) = (folder / "probe").glob("*.json")
    (failure,) = json.loads(path.read_text())["failures"]
    reason = failure["reason"]
    assert reason.startswith("cannot run the workload: setup() failed: RuntimeError: "), reason
    erofs = f"OSError errno {errno.EROFS}"  # the volume is mounted read-only
    assert f"read data/scale.txt: 2.5; write probe.py: {erofs}" in reason, reason
    assert f"write new-file: {erofs}" in reason, reason
    assert f"write scale.txt: {erofs}" in reason, reason
    assert "network: " in reason and "reached" not in reason, reason
    proc = run_tfbuild(
        "bench", *common, "--results", str(folder / "model"),
        "--workload", str(models["savedmodel"]), "--calls", "10",
        timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = (folder / "model").glob("*.json")
    document = json.loads(path.read_text())
    assert document["variants"]["stock"]["runtime"]["kind"] == "docker"
    runs = [r for r in document["runs"] if r["status"] == "ok"]
    assert len(runs) == 4
    assert all(r["benchmarks"]["workload"]["samples"][0]["throughput"] > 0 for r in runs)
    name, data, _ = workload_volume(
        payload_spec(resolve(WorkloadRequest(path=models["savedmodel"])))
    )
    volumes = docker.from_env().volumes
    volume = volumes.get(name)  # filled by the session, left for the next
    try:
        assert volume.attrs["Labels"] == {"org.tfbuild": "workload"}
        assert not engine.filled_volume(name, base_image, data, {"org.tfbuild": "workload"})
    finally:
        volume.remove()
        volumes.get(workload_volume(payload_spec(resolve(WorkloadRequest(path=probe))))[0]).remove()


@pytest.mark.docker
def test_a_workload_volume_cut_short_is_filled_again(base_image: str) -> None:
    """A volume of the workload's name without the marker written last (a fill that was cut
    short) is filled again; a filled one is taken as it is."""
    name = f"tfbuild-workload-test-{uuid.uuid4().hex[:12]}"
    volumes = docker.from_env().volumes
    volumes.create(name, labels={"org.tfbuild": "workload"})
    data = files.tar_of({}, {"model/saved_model.pb": b"pb"})
    try:
        assert engine.filled_volume(name, base_image, data, {"org.tfbuild": "workload"})
        assert not engine.filled_volume(name, base_image, data, {"org.tfbuild": "workload"})
        mount = engine.Mount("/w", name)
        spec = engine.ContainerSpec(base_image, ("true",), "test", mounts=(mount,))
        with engine.container(spec) as c:
            assert engine.read_file(c, "/w/model/saved_model.pb") == b"pb"
            assert engine.read_file(c, f"/w/{engine.FILLED}") == b""
    finally:
        volumes.get(name).remove()


@pytest.mark.parametrize(
    ("xla", "env", "compiled"),
    [(None, {}, False), ("jit", {}, True), ("auto", {"TF_XLA_FLAGS": XLA_AUTO_FLAGS}, True)],
)
def test_an_xla_tuning_compiles_the_suite_and_the_workload(
    tf_python: Path, models: dict[str, Path], tmp_path: Path, xla: str | None,
    env: dict[str, str], compiled: bool,
) -> None:  # fmt: skip
    """The payload as a benchmark process runs it, under a tuning's XLA mode (its config and
    the environment the plan gives it): TensorFlow itself says when XLA compiled a cluster."""
    for name, config in {
        "suite": {"benchmarks": ["matmul-pinned"], "xla": xla},
        "keras": {
            "benchmarks": [],
            "xla": xla,
            "workload": {"kind": "keras", "path": str(models["keras"]), "batch": 2, "calls": 5},
        },
    }.items():
        (tmp_path / "config.json").write_text(json.dumps(config))
        proc = subprocess.run(
            [str(tf_python), str(PAYLOAD), str(tmp_path / "config.json"), str(tmp_path / "r")],
            capture_output=True, text=True, timeout=600, check=False,
            env={**local_env(env), "TF_CPP_MIN_LOG_LEVEL": "0"},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads((tmp_path / "r").read_text())
        entries = result["benchmarks"]
        assert entries and all("samples" in e for e in entries.values()), (name, entries)
        assert ("Compiled cluster using XLA" in proc.stderr) is compiled, (name, xla)
        if xla == "auto":
            assert result["threads"]["env"]["TF_XLA_FLAGS"] == XLA_AUTO_FLAGS
