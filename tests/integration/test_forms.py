"""Model forms made for real inside a runtime (tfbuild/bench/workload_forms.py, run as
workload_payload.py runs it): TensorFlow 2.21's converter and grappler, LiteRT's interpreter
(ai-edge-litert), on SavedModels made here with seeded weights whose outputs vary.

The runtime is the shared stock 2.21 venv; the interpreter package is put beside it on
PYTHONPATH (pip install --target), as a runtime for the litert form will have it installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_tfbuild
from support.env import REPO

pytestmark = [pytest.mark.tf, pytest.mark.slow]

BENCH = REPO / "tfbuild" / "bench"
MAKE_AND_CHECK = """
import json, sys
import numpy as np
import tensorflow as tf
import workload_forms as wf
import workload_payload as wp

out = sys.argv[1]
tf.keras.utils.set_random_seed(3)
image = tf.keras.Input(shape=(16, 16, 3), name="image")
x = tf.keras.layers.Conv2D(8, 3, activation="relu")(image)
x = tf.keras.layers.BatchNormalization()(x)
x = tf.keras.layers.GlobalAveragePooling2D()(x)
model = tf.keras.Model(image, tf.keras.layers.Softmax()(tf.keras.layers.Dense(5)(x)))
rng = np.random.default_rng(3)  # weights that make the outputs differ across inputs and classes
model.set_weights([
    (rng.normal(0, 0.5, w.shape) if w.ndim > 1 else rng.uniform(0.5, 1.5, w.shape)).astype(w.dtype)
    for w in model.get_weights()
])
tf.saved_model.save(model, out + "/cnn")


class Det(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 3, 3], tf.float32, name="x")])
    def serve(self, x):
        return {"det": tf.linalg.det(x)}


det = Det()
tf.saved_model.save(det, out + "/det", signatures={"serving_default": det.serve})


class Two(tf.Module):
    # two inputs, three outputs of three shapes, named so that their sorted order is neither
    # the order they are declared in nor the order the converter numbers them in

    def __init__(self):
        self.w = tf.Variable(np.random.default_rng(5).standard_normal((4, 3)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="zeta"),
                                  tf.TensorSpec([None, 2], tf.float32, name="alpha")])
    def serve(self, zeta, alpha):
        return {"zz_sum": tf.reduce_sum(zeta, 1) * 2.0, "aa_proj": tf.matmul(zeta, self.w),
                "mm_alpha": alpha * 3.0}


two = Two()
tf.saved_model.save(two, out + "/two", signatures={"serving_default": two.serve})

cnn = {"kind": "savedmodel", "path": out + "/cnn", "batch": 2}
said = {
    "litert": wp.check(np, tf, {**cnn, "form": "litert", "threads": 1}),
    "optimized": wp.check(np, tf, {**cnn, "form": "optimized"}),
    "tight": wp.check(np, tf, {**cnn, "form": "litert", "atol": 1e-12, "rtol": 0.0}),
    "det": wp.check(np, tf, {"kind": "savedmodel", "path": out + "/det", "form": "litert"}),
    "int8": wp.check(np, tf, {**cnn, "form": "litert-int8", "threads": 1}),
}
from ai_edge_litert.interpreter import Interpreter

int8 = wp.prepare(np, tf, {**cnn, "form": "litert-int8", "threads": 1, "atol": 1.0, "rtol": 1.0})
tensors = Interpreter(model_content=int8.call.flatbuffer).get_tensor_details()
said["int8-tensors"] = sorted(d["dtype"].__name__ for d in tensors)
for form in ("litert", "optimized"):
    said[f"two-{form}"] = wp.check(
        np, tf, {"kind": "savedmodel", "path": out + "/two", "form": form, "batch": 2}
    )

# The outputs the litert form gave, for the file `tfbuild export` writes to be held to in a
# process that has no TensorFlow and no tfbuild.
prepared = wp.prepare(np, tf, {**cnn, "form": "litert", "threads": 1})
loaded = tf.saved_model.load(out + "/cnn")
fn = loaded.signatures["serving_default"]
(name,) = fn.structured_input_signature[1]
values = wp.generated(np, wp._savedmodel(tf, out + "/cnn", "serving_default", False).specs, {}, 2)
np.save(out + "/inputs.npy", values[name])
np.save(out + "/outputs.npy", next(iter(prepared.call().values())))

# The conversion that skips freezing: straight from the SavedModel, its variables left for an
# interpreter that never initialises them.
naive = Interpreter(model_content=tf.lite.TFLiteConverter.from_saved_model(out + "/cnn").convert())
naive.allocate_tensors()
detail = naive.get_input_details()[0]
naive.resize_tensor_input(detail["index"], list(values[name].shape))
naive.allocate_tensors()
naive.set_tensor(detail["index"], values[name])
naive.invoke()
got = {"output_0": naive.get_tensor(naive.get_output_details()[0]["index"])}
reference = wf.outputs_of(np, fn(**{name: tf.constant(values[name])}))
said["naive"] = wf.compare_outputs(np, reference, got, wf.ATOL, wf.RTOL)
print(json.dumps(said))
"""
OUTSIDE = """
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter

folder = sys.argv[1]
interpreter = Interpreter(model_path=folder + "/model.tflite", num_threads=1)
x = np.load(folder + "/inputs.npy")
detail = interpreter.get_input_details()[0]
interpreter.resize_tensor_input(detail["index"], list(x.shape))
interpreter.allocate_tensors()
interpreter.set_tensor(detail["index"], x)
interpreter.invoke()
got = interpreter.get_tensor(interpreter.get_output_details()[0]["index"])
print(float(np.abs(got - np.load(folder + "/outputs.npy")).max()))
"""


@pytest.fixture(scope="module")
def litert(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ai-edge-litert (and the two of its dependencies TensorFlow's runtime lacks) in a folder
    of its own: the interpreter package the litert form runs with."""
    target = tmp_path_factory.mktemp("litert")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         "ai-edge-litert==2.3.0", "backports.strenum", "tqdm"],
        check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    return target


def run(python: Path, code: str, path: list[Path], *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, path)), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run(
        [str(python), "-c", code, *args],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout.strip().splitlines()[-1]


def bench(
    tf_workspace: Path, tmp_path: Path, workload: str, forms: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    """`tfbuild bench` of stock 2.21 on the workload in the forms named, two rounds of five
    calls, in the local venv every TensorFlow test shares; results in tmp_path/r."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    return run_tfbuild(
        "bench", "--matrix", str(matrix), "--store", str(tf_workspace / "wheels"),
        "--cache-dir", str(tf_workspace / "cache"), "--results", str(tmp_path / "r"),
        "--runtime", "local", "--rounds", "2", "--workload", workload, "--calls", "5",
        "--forms", forms, *extra, timeout=1800,
    )  # fmt: skip


@pytest.fixture(scope="module")
def said(tf_python: Path, litert: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("forms")
    found: dict[str, Any] = json.loads(run(tf_python, MAKE_AND_CHECK, [litert, BENCH], str(folder)))
    found["folder"] = str(folder)
    return found


def test_a_litert_form_is_checked_against_the_signature_and_says_what_made_it(
    said: dict[str, Any],
) -> None:
    form = said["litert"]["form"]
    assert form["ok"] and not form["uniform"]
    (out,) = form["outputs"]
    assert out["shape"] == [2, 5] and out["varies"] and out["nonfinite"] == 0
    assert 0 < out["max_abs"] < 1e-4  # XNNPACK's float kernels: close, never identical here
    assert (form["form"], form["tensorflow"]) == ("litert", "2.21.0")
    assert (form["interpreter"], form["interpreter_version"]) == ("ai-edge-litert", "2.3.0")
    optimized = said["optimized"]["form"]
    assert optimized["ok"] and optimized["form"] == "optimized"
    assert optimized["outputs"][0]["max_abs"] < 1e-5


@pytest.mark.parametrize("form", ["litert", "optimized"])
def test_each_output_of_a_form_is_matched_to_the_signatures_by_name(
    said: dict[str, Any], form: str
) -> None:
    checked = said[f"two-{form}"]["form"]
    assert checked["ok"], checked
    shapes = {o["output"]: o["shape"] for o in checked["outputs"]}
    assert shapes == {"aa_proj": [2, 3], "mm_alpha": [2, 2], "zz_sum": [2]}


def test_a_form_outside_its_tolerance_fails_with_the_figures(said: dict[str, Any]) -> None:
    tight = said["tight"]
    assert tight["kind"] == "form-mismatch" and not tight["form"]["ok"]
    (out,) = tight["form"]["outputs"]
    assert out["max_abs"] == said["litert"]["form"]["outputs"][0]["max_abs"]
    assert tight["error"].startswith("the litert form's outputs differ from the as-given form's")
    assert f"max abs error {out['max_abs']:.3g}" in tight["error"]
    assert "allowed 1e-12 + 0 x |as-given|" in tight["error"]


def test_the_int8_form_is_quantized_and_held_to_the_same_tolerances_unless_loosened(
    said: dict[str, Any],
) -> None:
    """litert-int8 converts with int8 weights and activations (the interpreter's tensors say
    so); its outputs are far from the as-given ones, beyond the float forms' tolerances, so
    unless the user loosens them it fails with the figures and what made it."""
    assert said["int8-tensors"].count("int8") >= 5 and "float32" in said["int8-tensors"]
    int8 = said["int8"]
    assert int8["kind"] == "form-mismatch", int8
    (out,) = int8["form"]["outputs"]
    assert out["max_abs"] > 100 * said["litert"]["form"]["outputs"][0]["max_abs"]
    assert int8["error"].startswith("the litert-int8 form's outputs differ from the as-given")
    assert (int8["form"]["form"], int8["form"]["interpreter_version"]) == ("litert-int8", "2.3.0")


def test_the_conversion_that_skips_freezing_is_caught_by_the_check(said: dict[str, Any]) -> None:
    """Converted straight from the SavedModel, the model keeps variables the interpreter never
    initialises: it runs, with no error, and answers something else."""
    naive = said["naive"]
    assert not naive["ok"] and not naive["uniform"]
    (out,) = naive["outputs"]
    assert out["nonfinite"] > 0 or out["max_abs"] > 0.01, out


def test_an_op_litert_lacks_is_refused_with_its_name(said: dict[str, Any]) -> None:
    assert said["det"] == {
        "error": "the LiteRT converter refused the model: ops LiteRT lacks: MatrixDeterminant",
        "kind": "form",
    }


def test_the_exported_form_gives_the_recorded_outputs_without_tensorflow(
    tf_python: Path, litert: Path, said: dict[str, Any]
) -> None:
    """`tfbuild export --form litert` with the runtime's Python writes model.tflite once its
    outputs agree with the signature's, says its sha256, the check's figures and what made it;
    loaded by LiteRT's interpreter in a process that imports neither TensorFlow nor tfbuild,
    it answers what the form answered in the session's code. A Python without the
    interpreter package is told what to install, and nothing is written."""

    from tfbuild.files import sha256_of

    folder = Path(said["folder"])
    out = folder / "model.tflite"
    args = ("export", "--workload", str(folder / "cnn"), "--batch", "2", "--threads", "1",
            "--python", str(tf_python), "-o", str(out))  # fmt: skip
    missing = run_tfbuild(*args)  # no ai-edge-litert beside this TensorFlow
    assert missing.returncode == 12, missing.stdout + missing.stderr
    assert "pip install ai-edge-litert==2.3.0" in missing.stderr and not out.exists()
    proc = run_tfbuild(*args, env={"PYTHONPATH": str(litert)}, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"Wrote {out}: the litert form, ")
    assert lines[1] == f"sha256: {sha256_of(out)}"
    said_of = " ".join(proc.stdout.split())
    assert "Checked on the inputs inputs float32 (2,16,16,3): max abs error " in said_of, said_of
    assert f"the litert form, {out.stat().st_size / 1e3:.0f} kB" in lines[0]
    assert "Made by TensorFlow 2.21.0's converter; run it with ai-edge-litert 2.3.0" in said_of
    assert [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []
    assert float(run(tf_python, OUTSIDE, [litert], str(folder))) <= 1e-6
    refused = run_tfbuild("export", "--workload", str(folder / "det"), "--python",
                          str(tf_python), "-o", str(folder / "det.tflite"),
                          env={"PYTHONPATH": str(litert)}, timeout=900)  # fmt: skip
    assert refused.returncode == 16, refused.stdout + refused.stderr
    assert "ops LiteRT lacks: MatrixDeterminant" in refused.stderr
    assert not (folder / "det.tflite").exists()
    int8 = run_tfbuild(*args[:-1], str(folder / "int8.tflite"), "--form", "litert-int8",
                       env={"PYTHONPATH": str(litert)}, timeout=900)  # fmt: skip
    assert int8.returncode == 16, int8.stdout + int8.stderr
    assert "the litert-int8 form's outputs differ from the as-given form's" in int8.stderr
    assert not (folder / "int8.tflite").exists()


def test_a_session_ranks_the_forms_of_a_model_in_a_runtime_that_has_their_interpreter(
    tf_workspace: Path, said: dict[str, Any], tmp_path: Path
) -> None:
    """`bench --workload DIR --forms as-given,optimized,litert,litert-int8 --atol 0.05
    --rtol 1`: the build's runtime (a local venv) is installed with LiteRT's interpreter
    beside TensorFlow, resolved by one pip install and recorded with its sha256; every form is
    a config of its own, measured in the same rounds; the results record each config's form
    and the tolerances, and compare lists them apart, the int8 form's errors with it."""
    proc = bench(tf_workspace, tmp_path, f"{said['folder']}/cnn",
                 "as-given,optimized,litert,litert-int8", "--batch", "2", "--atol", "0.05",
                 "--rtol", "1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    (path,) = (tmp_path / "r").glob("*.json")
    document = json.loads(path.read_text())
    forms = {c["key"]: c.get("form", "as-given") for c in document["configs"]}
    assert forms == {"stock:default": "as-given", "stock:default~aa": "as-given",
                     "stock:default:optimized": "optimized",
                     "stock:default:litert": "litert",
                     "stock:default:litert-int8": "litert-int8"}  # fmt: skip
    assert (document["suite"]["workload"]["atol"], document["suite"]["workload"]["rtol"]) == (
        0.05,
        1.0,
    )
    runs = document["runs"]
    assert {r["config"] for r in runs if r["status"] == "ok"} == set(forms), [
        r.get("failure") for r in runs if r["status"] != "ok"
    ]
    packages = {p["name"].lower(): p for p in document["variants"]["stock"]["runtime"]["packages"]}
    assert packages["ai-edge-litert"]["version"] == "2.3.0"
    assert len(packages["ai-edge-litert"]["sha256"]) == 64
    # each process of a form checked it against the as-given outputs before timing it, and
    # its run records the figures and what made it: this TensorFlow, LiteRT's interpreter
    for form in ("optimized", "litert", "litert-int8"):
        checks = [r["form_check"] for r in runs if r["config"] == f"stock:default:{form}"]
        assert len(checks) == 2 and all(c["ok"] and c["form"] == form for c in checks), checks
        assert all(c["tensorflow"] == "2.21.0" and not c["uniform"] for c in checks)
        assert all((c["atol"], c["rtol"]) == (0.05, 1.0) for c in checks)
        worst = max(o["max_abs"] for c in checks for o in c["outputs"])
        assert worst > 1e-3 if form == "litert-int8" else worst < 1e-4, (form, worst)
    assert {c.get("interpreter_version") for r in runs if (c := r.get("form_check"))} == {
        None,
        "2.3.0",
    }  # optimized runs in TensorFlow; litert in ai-edge-litert 2.3.0
    assert not any("form_check" in r for r in runs if r["config"].count(":") == 1)
    shown = run_tfbuild("compare", str(path), env={"COLUMNS": "160"})
    assert shown.returncode == 0, shown.stderr
    assert "stock:default:litert" in shown.stdout and "stock:default:optimized" in shown.stdout
    said_of = " ".join(shown.stdout.split())
    for form in ("optimized", "litert", "litert-int8"):
        assert f"Form {form} of stock: max abs error " in said_of, said_of[:3000]
    assert "within them in all 2 processes; made by TensorFlow 2.21.0's converter, " \
        "ai-edge-litert 2.3.0" in said_of  # fmt: skip
    assert "made by TensorFlow 2.21.0's converter (int8, calibrated on the workload's inputs)" \
        in said_of  # fmt: skip


@pytest.mark.docker
def test_a_container_runtime_makes_and_runs_the_forms_too(
    tf_workspace: Path, said: dict[str, Any], base_image: str, tmp_path: Path
) -> None:
    """The same session in containers (--runtime docker): the runtime image has LiteRT's
    interpreter installed beside TensorFlow, the model is in its read-only volume, and each
    process makes the litert form inside the container, checks it and times it; the results
    say it ran there."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        f'defaults:\n  base_images: {{build: "{base_image}", runtime: "{base_image}"}}\n'
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    )
    proc = run_tfbuild(
        "bench", "--matrix", str(matrix), "--store", str(tf_workspace / "wheels"),
        "--cache-dir", str(tf_workspace / "cache"), "--results", str(tmp_path / "r"),
        "--runtime", "docker", "--rounds", "2", "--workload", f"{said['folder']}/cnn",
        "--calls", "5", "--batch", "2", "--forms", "as-given,litert", timeout=1800,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    (path,) = (tmp_path / "r").glob("*.json")
    document = json.loads(path.read_text())
    runtime = document["variants"]["stock"]["runtime"]
    assert runtime["kind"] == "docker", runtime
    packages = {p["name"].lower(): p["version"] for p in runtime["packages"]}
    assert packages["ai-edge-litert"] == "2.3.0", packages
    runs = document["runs"]
    assert {r["config"] for r in runs if r["status"] == "ok"} == {
        "stock:default", "stock:default~aa", "stock:default:litert"
    }, [r.get("failure") for r in runs if r["status"] != "ok"]  # fmt: skip
    checks = [r["form_check"] for r in runs if r["config"] == "stock:default:litert"]
    assert len(checks) == 2 and all(c["ok"] and c["interpreter_version"] == "2.3.0" for c in checks)
    assert all(c["tensorflow"] == "2.21.0" for c in checks), checks
    assert all(0 < c["outputs"][0]["max_abs"] < 1e-4 for c in checks), checks


def test_a_form_the_model_cannot_take_is_refused_once_and_the_others_go_on(
    tf_workspace: Path, said: dict[str, Any], tmp_path: Path
) -> None:
    """A model with an op LiteRT lacks (a determinant), in a session of the as-given and litert
    forms over two rounds: the litert config's first process says why, in the converter's
    words naming the op; it runs no more, its failure recorded once (stage `form`), while the
    as-given configs run both rounds and are ranked."""
    proc = bench(tf_workspace, tmp_path, f"{said['folder']}/det", "as-given,litert")
    assert proc.returncode == 0, proc.stderr[-4000:]
    told = " ".join((proc.stdout + proc.stderr).split())
    assert "ops LiteRT lacks: MatrixDeterminant; it runs no more" in told, told[-3000:]
    assert "failed stock:default:litert: form: the LiteRT converter refused the model" in told
    (path,) = (tmp_path / "r").glob("*.json")
    document = json.loads(path.read_text())
    runs: dict[str, int] = {}
    for r in document["runs"]:
        runs[r["config"]] = runs.get(r["config"], 0) + 1
    assert runs == {"stock:default": 2, "stock:default~aa": 2, "stock:default:litert": 1}, runs
    (failure,) = document["failures"]
    assert failure["stage"] == "form" and failure["configs"] == ["stock:default:litert"]
    assert "ops LiteRT lacks: MatrixDeterminant" in failure["reason"]
    shown = run_tfbuild("compare", str(path), env={"COLUMNS": "160"})
    assert shown.returncode == 0, shown.stderr
    failed = [line for line in shown.stdout.splitlines() if line.startswith("failed ")]
    assert len(failed) == 1 and "MatrixDeterminant" in failed[0], failed
