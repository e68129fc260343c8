"""Other forms of a SavedModel signature, made and checked inside a runtime, next to
workload_payload.py (standard library, numpy, tensorflow and, for `litert`, LiteRT's
interpreter package ai-edge-litert; never tfbuild).

- `optimized`: the signature frozen to constants (convert_variables_to_constants_v2) and put
  through grappler's default passes ahead of time (remapping, which makes the fused CPU
  kernels, among them), run as a pruned graph function.
- `litert`: the frozen signature converted by the build's own tf.lite.TFLiteConverter (float32,
  no quantization), run by LiteRT's interpreter with its default delegate (XNNPACK) and the
  tuning's threads. Converting without freezing first keeps resource variables nothing
  initialises: the interpreter then returns NaN with no error, which is why this never does.
- `litert-int8` (asked for by name only): the same conversion quantized to int8 weights and
  activations (float32 inputs and outputs), the workload's inputs the representative data the
  converter calibrates the activations' ranges on. Its outputs are meant to differ: the check
  holds it to the same tolerances unless the user loosens them, and its figures are reported
  beside its speed.

Before a form is used its outputs on the workload's inputs are compared with the as-given
signature's (`compare_outputs`); outside the tolerances it is refused with the figures.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

ATOL, RTOL = 1e-4, 1e-3
"""A form's output element may differ from the as-given form's by ATOL + RTOL x |as-given|."""
KNOWN = ("optimized", "litert", "litert-int8")


def refused(form: str, kind: str, jit: bool) -> None:
    """Raise FormRefused where the workload cannot be run in `form` whatever the build."""
    if form not in KNOWN:
        raise FormRefused(f"unknown form {form!r} (known: as-given, {', '.join(KNOWN)})")
    if kind != "savedmodel":
        raise FormRefused(f"the {form} form is made from a SavedModel signature, not a {kind}")
    if jit:
        raise FormRefused(f"the {form} form cannot run under an XLA (jit) tuning: use another")


def checked(
    np: Any,
    tf: Any,
    spec: dict[str, Any],
    form: str,
    given: Callable[[], Any],
    made: Callable[[], Any],
) -> tuple[Callable[[], Any], dict[str, Any]]:
    """The form's call and its check against the as-given call on the same inputs, with what
    made it; raises FormRefused where the form fails to run, FormMismatch where its outputs
    are outside the tolerances (spec's atol and rtol, else ATOL and RTOL)."""
    reference = outputs_of(np, given())
    try:
        got = outputs_of(np, made())
    except Exception as exc:
        raise FormRefused(
            f"the {form} form failed on the inputs: {type(exc).__name__}: {exc}"
        ) from exc
    result = compare_outputs(
        np, reference, got, float(spec.get("atol", ATOL)), float(spec.get("rtol", RTOL))
    )
    result.update(form=form, **versions(tf, form))
    if not result["ok"]:
        raise FormMismatch(_mismatch(form, result), result)
    return made, result


class FormRefused(Exception):
    """This build or model cannot take the form asked for (an op LiteRT lacks, a TensorFlow
    without the converter, no interpreter in the runtime): the same on every run."""


class PackageMissing(FormRefused):
    """The runtime lacks the package that runs the form (`package`, its distribution name)."""

    def __init__(self, message: str, package: str) -> None:
        super().__init__(message)
        self.package = package


class FormMismatch(Exception):
    """The form's outputs differ from the as-given form's beyond the tolerances: `check` holds
    the figures (compare_outputs)."""

    def __init__(self, message: str, check: dict[str, Any]) -> None:
        super().__init__(message)
        self.check = check


def frozen(tf: Any, fn: Any, inputs: dict[str, Any]) -> Any:
    """The signature traced at the shapes of the workload's inputs (a recurrent layer's tensor
    lists need them static to convert), its variables made constants: what both other forms
    start from."""
    try:
        from tensorflow.python.framework.convert_to_constants import (
            convert_variables_to_constants_v2,
        )
    except ImportError as exc:
        raise FormRefused(f"TensorFlow {tf.__version__} cannot freeze a signature: {exc}") from exc
    specs = {k: tf.TensorSpec(v.shape, tf.as_dtype(v.dtype), name=k) for k, v in inputs.items()}
    try:
        static = tf.function(fn).get_concrete_function(**specs)
        return convert_variables_to_constants_v2(static)
    except Exception as exc:
        raise FormRefused(f"freezing the signature failed: {type(exc).__name__}: {exc}") from exc


def _output_names(fn: Any) -> list[str]:
    """The signature's output names in the order of its flat outputs."""
    outputs = fn.structured_outputs
    if isinstance(outputs, dict):
        return sorted(str(k) for k in outputs)
    count = len(outputs) if isinstance(outputs, (list, tuple)) else 1
    return [f"output_{i}" for i in range(count)]


def optimized(tf: Any, fn: Any, inputs: dict[str, Any]) -> Callable[[], Any]:
    """The frozen signature through grappler's default passes ahead of time (remapping, which
    makes the fused CPU kernels, among them), run as a pruned graph function."""
    from tensorflow.core.protobuf import config_pb2
    from tensorflow.python.grappler import tf_optimizer
    from tensorflow.python.training import saver

    made = frozen(tf, fn, inputs)
    fetches = [t.name for t in made.outputs]
    meta = saver.export_meta_graph(graph_def=made.graph.as_graph_def(), graph=made.graph)
    meta.collection_def["train_op"].node_list.value.extend(fetches)  # what grappler keeps
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.min_graph_nodes = -1  # however small the graph
    try:
        graph_def = tf_optimizer.OptimizeGraph(config, meta)
    except Exception as exc:
        raise FormRefused(f"grappler failed on the graph: {type(exc).__name__}: {exc}") from exc
    wrapped = tf.compat.v1.wrap_function(
        lambda: tf.compat.v1.import_graph_def(graph_def, name=""), []
    )
    graph = wrapped.graph
    pruned = wrapped.prune(
        [graph.get_tensor_by_name(t.name) for t in made.inputs],
        [graph.get_tensor_by_name(name) for name in fetches],
    )
    args = [tf.constant(inputs[name]) for name in sorted(inputs)]  # the flat inputs' order
    keys = _output_names(fn)
    return lambda: dict(zip(keys, pruned(*args), strict=True))


def litert(
    tf: Any, fn: Any, keep: Any, inputs: dict[str, Any], threads: int, int8: bool = False
) -> Callable[[], Any]:
    """The frozen signature converted by this TensorFlow's TFLiteConverter (float32, no
    quantization; `int8`: int8 weights and activations, calibrated on `inputs`), run by
    LiteRT's interpreter with `threads` threads and its default delegate (XNNPACK)."""
    made = frozen(tf, fn, inputs)
    converter_class = getattr(getattr(tf, "lite", None), "TFLiteConverter", None)
    if converter_class is None:
        raise FormRefused(f"TensorFlow {tf.__version__} has no tf.lite.TFLiteConverter")
    try:
        from ai_edge_litert.interpreter import (  # type: ignore[import-not-found,unused-ignore]
            Interpreter,
        )
    except ImportError as exc:
        raise PackageMissing(
            f"LiteRT's interpreter (ai-edge-litert) is not installed: {exc}", "ai-edge-litert"
        ) from exc
    converter = converter_class.from_concrete_functions([made], keep)
    if int8:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        flat = [inputs[name] for name in sorted(inputs)]  # the frozen function's argument order
        converter.representative_dataset = lambda: iter([flat])
    try:
        flatbuffer = converter.convert()
    except Exception as exc:
        raise FormRefused(f"the LiteRT converter refused the model: {_unsupported(exc)}") from exc
    # The converted model's one signature names its inputs as the frozen function's arguments
    # (the workload's input names) and its outputs output_0, output_1, ... in the order of
    # the frozen function's flat outputs, which _output_names gives the signature's names of.
    # Read from an interpreter of its own: a signature runner holds on to the tensors, which
    # the one that runs must be free to resize.
    try:
        runner = Interpreter(model_content=flatbuffer).get_signature_runner()
    except ValueError as exc:
        raise FormRefused(f"the converted model has no signature to run: {exc}") from exc
    keys = _output_names(fn)
    ins, outs = runner.get_input_details(), runner.get_output_details()

    def key_of(name: str) -> str:
        if name in keys:
            return name
        head, _, k = name.rpartition("_")
        if head == "output" and k.isdigit() and int(k) < len(keys):
            return keys[int(k)]
        raise FormRefused(f"the converted model's output {name!r} is none of {keys}")

    if set(ins) != set(inputs) or len(outs) != len(keys):
        raise FormRefused(
            f"the converted model's inputs {sorted(ins)} and {len(outs)} output(s) are not the "
            f"signature's {sorted(inputs)} and {len(keys)}"
        )
    interpreter = Interpreter(model_content=flatbuffer, num_threads=threads)
    for name, detail in ins.items():
        if tuple(detail["shape"]) != inputs[name].shape:
            interpreter.resize_tensor_input(detail["index"], list(inputs[name].shape))
    interpreter.allocate_tensors()
    feeds = [(detail["index"], inputs[name]) for name, detail in ins.items()]
    outputs = [(key_of(name), detail["index"]) for name, detail in outs.items()]

    def call() -> dict[str, Any]:
        for index, value in feeds:
            interpreter.set_tensor(index, value)
        interpreter.invoke()
        return {key: interpreter.get_tensor(index) for key, index in outputs}

    call.flatbuffer = flatbuffer  # type: ignore[attr-defined]  # what `export` writes
    return call


def _unsupported(exc: Exception) -> str:
    """The converter's words, shortened to the ops it lacks where it names them, else to the
    first op it failed on and why."""
    text = " ".join(str(exc).split())
    listed = re.search(
        r"(?:TF Select ops|Flex ops|custom ops)[^:]*: ([\w, ]+?)(?: Details|$)", text
    )
    if listed:
        return f"ops LiteRT lacks: {listed.group(1).strip().rstrip(',')}"
    failed = re.search(r"'tf\.(\w+)' op (.+?)(?: <unknown>|$)", text)
    if failed:
        return f"op {failed.group(1)}: {failed.group(2)}"
    return text[:500]


def outputs_of(np: Any, result: Any) -> dict[str, Any]:
    """A call's outputs by name, as numpy arrays."""
    if isinstance(result, dict):
        return {str(k): np.asarray(v) for k, v in result.items()}
    if isinstance(result, (list, tuple)):
        return {f"output_{i}": np.asarray(v) for i, v in enumerate(result)}
    return {"output_0": np.asarray(result)}


def compare_outputs(
    np: Any, reference: dict[str, Any], got: dict[str, Any], atol: float, rtol: float
) -> dict[str, Any]:
    """How far a form's outputs are from the as-given form's on the same inputs, per output:
    the largest absolute and relative errors (relative where the as-given value is not 0), the
    elements whose NaN or Inf (with its sign) is not where the as-given form has it, and
    whether the as-given values vary at all (outputs that are all one value make the check
    prove nothing: `uniform`). `ok`: every output there, of the same shape and dtype, NaN and
    Inf where the as-given form has them and nowhere else, each float element within atol +
    rtol x |as-given| and each integer or boolean one equal."""
    found = []
    for name in sorted(set(reference) | set(got)):
        entry: dict[str, Any] = {"output": name}
        found.append(entry)
        if name not in reference or name not in got:
            entry.update(ok=False, missing="as-given" if name not in reference else "form")
            continue
        ref, out = np.asarray(reference[name]), np.asarray(got[name])
        entry.update(shape=list(ref.shape), dtype=str(ref.dtype))
        if out.shape != ref.shape or out.dtype != ref.dtype:
            entry.update(ok=False, form_shape=list(out.shape), form_dtype=str(out.dtype))
            continue
        if ref.dtype.kind not in "biuf":  # strings, objects, complex: compared as they are
            entry.update(max_abs=None, max_rel=None, nonfinite=0, ok=bool(np.array_equal(ref, out)),
                         varies=bool(ref.size and np.unique(ref).size > 1))  # fmt: skip
            continue
        exact = ref.dtype.kind in "biu"  # integers and booleans: equal, or wrong
        ref, out = ref.astype(np.float64), out.astype(np.float64)
        finite = np.isfinite(ref)
        both = finite & np.isfinite(out)
        diff, scale = np.abs(out[both] - ref[both]), np.abs(ref[both])
        entry["max_abs"] = float(diff.max()) if diff.size else 0.0
        nonzero = scale > 0  # a relative error means nothing where the as-given value is 0
        entry["max_rel"] = float((diff[nonzero] / scale[nonzero]).max()) if nonzero.any() else 0.0
        same_specials = (np.isnan(ref) == np.isnan(out)) & (
            np.where(np.isinf(ref), ref, 0) == np.where(np.isinf(out), out, 0)
        )
        entry["nonfinite"] = int(np.count_nonzero(~same_specials))
        entry["varies"] = bool(finite.any() and np.ptp(ref[finite]) > 0)
        within = bool(np.all(diff == 0)) if exact else bool(np.all(diff <= atol + rtol * scale))
        entry["ok"] = within and entry["nonfinite"] == 0
    return {
        "atol": atol,
        "rtol": rtol,
        "ok": all(e["ok"] for e in found),
        "uniform": not any(e.get("varies") for e in found),
        "outputs": found,
    }


def _mismatch(form: str, check: dict[str, Any]) -> str:
    """Why a form failed its check, in words, with the figures."""
    said = []
    for e in check["outputs"]:
        if e["ok"]:
            continue
        if "missing" in e:
            whose = "as-given" if e["missing"] == "as-given" else form
            said.append(f"{e['output']}: missing from the {whose} form")
        elif "form_shape" in e:
            said.append(
                f"{e['output']}: {e['form_dtype']} {tuple(e['form_shape'])}, not "
                f"{e['dtype']} {tuple(e['shape'])}"
            )
        elif e["max_abs"] is None:
            said.append(f"{e['output']}: other values")
        else:
            nonfinite = (
                f", {e['nonfinite']} NaN/Inf the as-given form does not have there"
                if e["nonfinite"]
                else ""
            )
            said.append(
                f"{e['output']}: max abs error {e['max_abs']:.3g}, max rel error "
                f"{e['max_rel']:.3g}{nonfinite}"
            )
    return (
        f"the {form} form's outputs differ from the as-given form's ("
        + "; ".join(said)
        + f"; allowed {check['atol']:g} + {check['rtol']:g} x |as-given|)"
    )


def versions(tf: Any, form: str) -> dict[str, Any]:
    """What made and runs the form: the TensorFlow that froze (and converted) it, and for
    litert the interpreter's package and version."""
    made = {"tensorflow": str(tf.__version__)}
    if not form.startswith("litert"):
        return made
    from importlib.metadata import PackageNotFoundError, version

    try:
        interpreter: str | None = version("ai-edge-litert")
    except PackageNotFoundError:  # LiteRT imported from elsewhere than an installed package
        interpreter = None
    return {**made, "interpreter": "ai-edge-litert", "interpreter_version": interpreter}
