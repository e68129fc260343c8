"""The user's own model as a benchmark: the code that runs inside a runtime, next to payload.py.

Like the payload it imports only the standard library, numpy and tensorflow, never tfbuild. A
workload is a SavedModel directory (one of its signatures), a Keras model file (.keras, .h5) or
a Python script that defines

    setup()        -> state   (optional; called once, not timed)
    step(state)    -> result  (one unit of work; a result with .numpy() is waited for)
    ITEMS = 32                (optional: items one step handles, for items/s; default 1)

A model is loaded once per process (the time is recorded, not timed) and called on the same
inputs every time: generated from its input signature with a fixed seed, or read from the .npz
file the user gives, checked against the signature first. Every process does the same work: one
first call (traced where the model is a Python function), WARMUP calls, SAMPLES timed samples of
`calls` calls each (throughput; CALLS unless the session says otherwise), then LATENCY_FACTOR
times as many calls timed one by one (latency percentiles, recorded as calls per second so that,
like every benchmark, higher is faster).

A SavedModel signature can also be run in another form, made here with the build's own
TensorFlow before anything is timed (FORMS): `optimized`, the signature frozen to constants
and put through TensorFlow's graph optimizer (grappler) ahead of time, run as a graph function;
`litert`, the frozen signature converted by the build's TFLiteConverter (float32, no
quantization) and run by LiteRT's interpreter (the ai-edge-litert package) with its default
delegate, XNNPACK, and the tuning's threads; `litert-int8`, the same quantized to int8 weights
and activations, the workload's inputs its representative data. A form's outputs on the inputs
are compared with the as-given signature's before it is used (`compare_outputs`); outside the
tolerances it is refused with the figures (FormMismatch), as is a form this build or model
cannot take (FormRefused).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

WORKLOAD_VERSION = 1
THROUGHPUT = "workload"
PERCENTILES = (50, 90, 99)
LATENCY = tuple(f"workload-p{p}" for p in PERCENTILES)
CALLS = 50
SAMPLES = 3
WARMUP = 2
LATENCY_FACTOR = 4
INPUT_SEED = 20170405
INT_HIGH = 10  # generated integer inputs lie in [0, 10): valid ids for any embedding table
FORMS = ("as-given", "optimized", "litert", "litert-int8")


class InputMismatch(Exception):
    """The inputs the user asked for do not fit the model: the same for every build."""


class LoadFailure(Exception):
    """This build cannot load or call the model (a Keras 3 file under TF 2.14, an op it lacks)."""


def _forms() -> Any:
    """workload_forms.py, beside this file (a package module on the host, a sibling file in a
    runtime)."""
    try:
        from . import workload_forms  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        import workload_forms  # type: ignore[import-not-found,no-redef,unused-ignore]
    return workload_forms


class Spec:
    """One input of the model: its name, shape (None for an unknown dimension) and dtype."""

    def __init__(self, name: str, shape: tuple[int | None, ...] | None, dtype: Any) -> None:
        self.name, self.shape, self.dtype = name, shape, dtype  # shape None: unknown rank

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.name} ({self.dtype.name}, unknown rank)"
        dims = ", ".join("None" if d is None else str(d) for d in self.shape)
        return f"{self.name} ({self.dtype.name}, ({dims}{',' if len(self.shape) == 1 else ''}))"

    def fits(self, shape: tuple[int, ...]) -> bool:
        if self.shape is None:
            return True
        return len(shape) == len(self.shape) and all(
            d is None or d == s for d, s in zip(self.shape, shape, strict=True)
        )


class Model:
    """A loaded workload: its inputs, one call on them, and (a SavedModel signature) one call
    of another form of it (FORMS)."""

    def __init__(
        self,
        specs: list[Spec],
        make_call: Callable[[dict[str, Any]], Callable[[], Any]],
        make_form: Callable[[str, dict[str, Any], int], Callable[[], Any]] | None = None,
    ):
        self.specs = specs
        self.make_call = make_call
        self.make_form = make_form


def _dims(shape: Any) -> tuple[int | None, ...] | None:
    """A TensorShape or a tuple as dimensions (None for an unknown one); None: unknown rank."""
    try:
        dims = tuple(shape)
    except (TypeError, ValueError):  # TensorShape(None) cannot be iterated
        return None
    return tuple(None if d is None else int(d) for d in dims)


def _savedmodel(tf: Any, path: str, signature: str, jit: bool) -> Model:
    try:
        loaded = tf.saved_model.load(path)
    except Exception as exc:
        raise LoadFailure(f"tf.saved_model.load failed: {type(exc).__name__}: {exc}") from exc
    signatures = dict(loaded.signatures)
    if signature not in signatures:
        names = ", ".join(sorted(signatures)) or "none"
        raise InputMismatch(f"the SavedModel has no signature {signature!r} (it has: {names})")
    fn = signatures[signature]
    _, kwargs = fn.structured_input_signature
    specs = [Spec(name, _dims(spec.shape), spec.dtype) for name, spec in sorted(kwargs.items())]

    def make_call(inputs: dict[str, Any]) -> Callable[[], Any]:
        tensors = {k: tf.constant(v) for k, v in inputs.items()}
        if not jit:
            return lambda: fn(**tensors)
        compiled: Callable[[], Any] = tf.function(lambda: fn(**tensors), jit_compile=True)
        return compiled  # the signature's graph, compiled by XLA as one function

    def make_form(form: str, inputs: dict[str, Any], threads: int) -> Callable[[], Any]:
        forms = _forms()
        call: Callable[[], Any]
        if form == "optimized":
            call = forms.optimized(tf, fn, inputs)
        else:
            call = forms.litert(tf, fn, loaded, inputs, threads, int8=form == "litert-int8")
        return call

    model = Model(specs, make_call, make_form)
    model.keep = loaded  # type: ignore[attr-defined]  # the signature needs its object alive
    return model


def _keras(tf: Any, path: str, jit: bool) -> Model:
    try:
        model = tf.keras.models.load_model(path, compile=False)
    except Exception as exc:
        raise LoadFailure(
            f"tf.keras.models.load_model failed: {type(exc).__name__}: {exc}".strip()
        ) from exc
    inputs = getattr(model, "inputs", None)
    if not inputs:
        raise InputMismatch(
            "the Keras model does not say its inputs (a subclassed model that was never "
            "built): save it with an Input layer, or give a script workload"
        )
    specs = []
    for i, tensor in enumerate(inputs):
        name = str(getattr(tensor, "name", "") or f"input_{i}").split(":")[0]
        specs.append(Spec(name, _dims(tensor.shape), tf.as_dtype(tensor.dtype)))

    def make_call(values: dict[str, Any]) -> Callable[[], Any]:
        tensors = [tf.constant(values[s.name]) for s in specs]
        args = tensors[0] if len(tensors) == 1 else tensors
        call = tf.function(lambda x: model(x, training=False), jit_compile=jit or None)
        return lambda: call(args)

    return Model(specs, make_call)


def _script(path: str) -> tuple[Callable[[], Any], float]:
    spec = importlib.util.spec_from_file_location("tfbuild_workload", path)
    if spec is None or spec.loader is None:
        raise InputMismatch(f"{path} cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise LoadFailure(f"importing the script failed: {type(exc).__name__}: {exc}") from exc
    step = getattr(module, "step", None)
    if not callable(step):
        raise InputMismatch(
            f"{Path(path).name} defines no step(state): a script workload defines step(state) "
            "doing one unit of work, and optionally setup() returning the state and ITEMS "
            "(items per step)"
        )
    setup = getattr(module, "setup", None)
    try:
        state = setup() if callable(setup) else None
    except Exception as exc:
        raise LoadFailure(f"setup() failed: {type(exc).__name__}: {exc}") from exc
    items = getattr(module, "ITEMS", 1)
    if not isinstance(items, (int, float)) or isinstance(items, bool) or items <= 0:
        raise InputMismatch(f"{Path(path).name}: ITEMS must be a positive number (got {items!r})")
    return (lambda: step(state)), float(items)


def _shape(spec: Spec, given: dict[str, list[int]], batch: int) -> tuple[int, ...]:
    if spec.name in given:
        shape = tuple(int(d) for d in given[spec.name])
        if not spec.fits(shape):
            raise InputMismatch(
                f"--shape {spec.name}={','.join(map(str, shape))} does not fit the model's input "
                f"{spec.describe()}"
            )
        return shape
    if spec.shape is None:
        raise InputMismatch(
            f"input {spec.describe()}: give its shape with --shape {spec.name}=D1,D2,... or "
            "its values with --inputs FILE.npz"
        )
    dims: list[int] = []
    for i, d in enumerate(spec.shape):
        if d is not None:
            dims.append(int(d))
        elif i == 0:
            dims.append(batch)
        else:
            raise InputMismatch(
                f"input {spec.describe()} has an unknown dimension {i}: give its shape with "
                f"--shape {spec.name}="
                + ",".join(str(batch) if j == 0 else "N" for j in range(len(spec.shape)))
            )
    return tuple(dims)


def generated(
    np: Any, specs: list[Spec], given: dict[str, list[int]], batch: int
) -> dict[str, Any]:
    """Inputs drawn with a fixed seed from each input's shape and dtype."""
    rng = np.random.default_rng(INPUT_SEED)
    names = {s.name for s in specs}
    for name in given:
        if name not in names:
            inputs = ", ".join(s.describe() for s in specs) or "none"
            raise InputMismatch(f"--shape {name}=...: the model has no input {name!r} ({inputs})")
    open_batch = any(s.name not in given and s.shape and s.shape[0] is None for s in specs)
    if batch != 1 and not open_batch:
        raise InputMismatch(
            f"--batch {batch}: no input leaves its first dimension open for it ("
            + ", ".join(s.describe() for s in specs)
            + "); leave --batch out, or give the shapes with --shape"
        )
    values = {}
    for spec in specs:
        shape = _shape(spec, given, batch)
        dtype = spec.dtype
        if dtype.is_floating:
            values[spec.name] = rng.standard_normal(shape).astype(dtype.as_numpy_dtype)
        elif dtype.is_integer:
            values[spec.name] = rng.integers(0, INT_HIGH, size=shape).astype(dtype.as_numpy_dtype)
        elif dtype.is_bool:
            values[spec.name] = rng.integers(0, 2, size=shape).astype(bool)
        else:
            raise InputMismatch(
                f"input {spec.describe()} cannot be generated: give its values with "
                "--inputs FILE.npz (one array per input, by name)"
            )
    return values


def from_file(np: Any, specs: list[Spec], path: str) -> dict[str, Any]:
    """The arrays of an .npz file, one per input by name, checked against the inputs."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except Exception as exc:  # not an .npz, damaged, or object arrays (pickles are refused)
        raise InputMismatch(
            f"--inputs {path}: cannot be read ({type(exc).__name__}: {exc})"
        ) from exc
    names = ", ".join(s.describe() for s in specs)
    for spec in specs:
        if spec.name not in arrays:
            raise InputMismatch(
                f"--inputs {path}: no array for input {spec.name!r} (inputs: {names})"
            )
        array = arrays[spec.name]
        if not spec.fits(tuple(array.shape)):
            raise InputMismatch(
                f"--inputs {path}: array {spec.name!r} has shape {tuple(array.shape)}, which does "
                f"not fit the input {spec.describe()}"
            )
        text = spec.dtype.name == "string" and array.dtype.kind in "SU"  # bytes or str arrays
        if not text and array.dtype != spec.dtype.as_numpy_dtype:
            raise InputMismatch(
                f"--inputs {path}: array {spec.name!r} is {array.dtype}, the input is "
                f"{spec.dtype.name} ({spec.describe()})"
            )
    extra = sorted(set(arrays) - {s.name for s in specs})
    if extra:
        raise InputMismatch(
            f"--inputs {path}: array {extra[0]!r} is no input of the model (inputs: {names})"
        )
    return {s.name: arrays[s.name] for s in specs}


def _sync(result: Any) -> None:
    """Wait for a call's result: the first tensor of it is copied to numpy."""
    if isinstance(result, dict):
        result = next(iter(result.values()), None)
    elif isinstance(result, (list, tuple)):
        result = result[0] if result else None
    if hasattr(result, "numpy"):
        result.numpy()


class Prepared:
    """A workload ready to run: one call, the items it handles, what was fed to it, and (a form
    other than as-given) its outputs' check against the as-given form's."""

    def __init__(
        self,
        call: Callable[[], Any],
        items: float,
        inputs: list[dict[str, Any]],
        form: dict[str, Any] | None = None,
    ):
        self.call, self.items, self.inputs, self.form = call, items, inputs, form


def prepare(np: Any, tf: Any, spec: dict[str, Any]) -> Prepared:
    """Load the workload and make its call, in the form `spec` asks for (checked against the
    as-given form first); raises InputMismatch, LoadFailure, FormRefused or FormMismatch."""
    kind, path, jit = spec["kind"], spec["path"], bool(spec.get("jit"))
    form = spec.get("form") or "as-given"
    if form != "as-given":
        _forms().refused(form, kind, jit)
    if kind == "script":
        call, items = _script(path)
        return Prepared(call, items, [])
    if kind == "savedmodel":
        model = _savedmodel(tf, path, spec.get("signature") or "serving_default", jit)
    else:
        model = _keras(tf, path, jit)
    if spec.get("inputs"):
        values = from_file(np, model.specs, spec["inputs"])
    else:
        values = generated(np, model.specs, spec.get("shapes") or {}, int(spec.get("batch") or 1))
    fed = [
        {"name": s.name, "shape": list(values[s.name].shape), "dtype": s.dtype.name}
        for s in model.specs
    ]
    # items a call: the batch the inputs carry (the largest first dimension among them)
    items = float(max((v.shape[0] for v in values.values() if v.ndim), default=1))
    try:
        call = model.make_call(values)
    except Exception as exc:
        raise LoadFailure(f"calling the model failed: {type(exc).__name__}: {exc}") from exc
    if form == "as-given" or model.make_form is None:
        return Prepared(call, items, fed)
    forms = _forms()
    try:
        made = model.make_form(form, values, _threads(spec))
    except (forms.FormRefused, forms.FormMismatch):
        raise
    except Exception as exc:  # the as-given form runs: what failed is making this one
        raise forms.FormRefused(
            f"making the {form} form failed: {type(exc).__name__}: {exc}"
        ) from exc
    made, checked = forms.checked(np, tf, spec, form, call, made)
    return Prepared(made, items, fed, checked)


def _threads(spec: dict[str, Any]) -> int:
    """The threads a form's interpreter runs with: the tuning's intra-op threads, else every
    CPU this process may use (as TensorFlow's own default)."""
    return int(spec.get("threads") or len(os.sched_getaffinity(0)))


def _failed(exc: Exception, spec: dict[str, Any]) -> dict[str, Any]:
    """What went wrong in preparing or first calling the workload, by kind: the user's inputs,
    this build's loading, or the form asked for (with its check's figures)."""
    if isinstance(exc, InputMismatch):
        return {"error": str(exc), "kind": "inputs"}
    if isinstance(exc, LoadFailure):
        return {"error": str(exc), "kind": "load"}
    forms = _forms() if (spec.get("form") or "as-given") != "as-given" else None
    if forms is not None and isinstance(exc, forms.PackageMissing):
        return {"error": str(exc), "kind": "form", "missing": exc.package}
    if forms is not None and isinstance(exc, forms.FormRefused):
        return {"error": str(exc), "kind": "form"}
    if forms is not None and isinstance(exc, forms.FormMismatch):
        return {"error": str(exc), "kind": "form-mismatch", "form": exc.check}
    return {"error": f"the first call failed: {type(exc).__name__}: {exc}", "kind": "load"}


def export(np: Any, tf: Any, spec: dict[str, Any], out: str) -> dict[str, Any]:
    """The workload in the form spec asks for (litert) written to `out`, once its outputs on
    the inputs are within the tolerances of the as-given form's: what was fed, the check and
    the file's size; or the error, by kind, and nothing written."""
    try:
        prepared = prepare(np, tf, spec)
        flatbuffer = getattr(prepared.call, "flatbuffer", None)
        if flatbuffer is None:
            raise _forms().FormRefused(
                f"the {spec.get('form') or 'as-given'} form has no file of its own: only "
                "litert is written (the optimized form is made from the SavedModel as it loads)"
            )
    except Exception as exc:
        return _failed(exc, spec)
    Path(out).write_bytes(flatbuffer)
    return {"inputs": prepared.inputs, "form": prepared.form, "bytes": len(flatbuffer)}


def check(np: Any, tf: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """For the smoke test: load, make the inputs and call once; what was fed, or the error."""
    t0 = time.perf_counter()
    try:
        prepared = prepare(np, tf, spec)
        loaded = time.perf_counter()
        _sync(prepared.call())
    except Exception as exc:
        return _failed(exc, spec)
    said = {
        "inputs": prepared.inputs,
        "items": prepared.items,
        "load_s": loaded - t0,
        "first_call_s": time.perf_counter() - loaded,
    }
    return {**said, "form": prepared.form} if prepared.form else said


def measure(
    np: Any, tf: Any, spec: dict[str, Any], checked: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Every workload benchmark of one process: throughput, then the latency percentiles. A
    form's check against the as-given form goes into `checked` (under "form_check") as soon as
    it is made, so a form that fails it is recorded with its figures; a form the model or build
    cannot take says why under "form_refused"."""
    t0 = time.perf_counter()
    try:
        prepared = prepare(np, tf, spec)
    except Exception as exc:
        if isinstance(getattr(exc, "check", None), dict):  # FormMismatch
            checked["form_check"] = exc.check  # type: ignore[attr-defined]
        if isinstance(exc, _forms().FormRefused):  # the same in every process: run no more
            checked["form_refused"] = str(exc)
        raise
    if prepared.form:
        checked["form_check"] = prepared.form
    built = time.perf_counter()
    call, items = prepared.call, prepared.items
    calls = int(spec.get("calls") or CALLS)
    _sync(call())
    traced = time.perf_counter()
    for _ in range(WARMUP):
        result = call()
    _sync(result)
    warm = time.perf_counter()
    samples = []
    for _ in range(SAMPLES):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(calls):
            result = call()
        _sync(result)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        samples.append({"wall_s": wall, "cpu_s": cpu, "throughput": items * calls / wall})
    common = {"build_s": built - t0, "trace_s": traced - built, "warmup_s": warm - traced}
    out = {
        THROUGHPUT: {
            "unit": "items/s",
            "iterations": calls,
            "warmup_iterations": WARMUP,
            "samples": samples,
            **common,
        }
    }
    times = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(LATENCY_FACTOR * calls):
        start = time.perf_counter()
        _sync(call())
        times.append(time.perf_counter() - start)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    times.sort()
    for p, name in zip(PERCENTILES, LATENCY, strict=True):
        rank = max(1, -(-p * len(times) // 100))  # nearest rank
        latency = times[rank - 1]
        out[name] = {
            "unit": f"calls/s (1/p{p} latency)",
            "iterations": LATENCY_FACTOR * calls,
            "warmup_iterations": WARMUP,
            "samples": [{"wall_s": wall, "cpu_s": cpu, "throughput": 1.0 / latency}],
            "latency_s": latency,
            **common,
        }
    return out


def main(argv: list[str]) -> int:
    """workload_payload.py --export SPEC.json OUT RESULT.json: `export`, its answer written to
    RESULT.json (tfbuild export runs it with the interpreter of a runtime)."""
    import json

    if len(argv) != 5 or argv[1] != "--export":
        print("usage: workload_payload.py --export SPEC.json OUT RESULT.json", file=sys.stderr)
        return 2
    import numpy as np
    import tensorflow as tf

    spec = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
    said = export(np, tf, spec, argv[3])
    Path(argv[4]).write_text(json.dumps(said), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
