"""The payload traces its graph functions without autograph, which makes every benchmark process
cheaper: checked here on real TensorFlow that each benchmark's traced graph (and every function
in its library) is the same op for op as with autograph, so the work a suite version measures
is unchanged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tfbuild.config.suite import BENCHMARKS, TRAINED
from tfbuild.runtime.base import PAYLOAD

pytestmark = [pytest.mark.tf, pytest.mark.slow]

# Runs inside the TensorFlow venv: every benchmark built and traced twice, once by the
# payload's own decorator and once by plain tf.function (autograph on); prints, per benchmark,
# a description of each traced graph that names no node (names carry counters).
SCRIPT = r"""
import collections, importlib.util, json, sys
import numpy as np
import tensorflow as tf

spec = importlib.util.spec_from_file_location("payload", sys.argv[1])
payload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(payload)
own = payload._graph
made = []


def recorded(decorator):
    def wrap(fn):
        f = decorator(fn)
        made.append(f)
        return f
    return wrap


def shape(graph_def):
    nodes = collections.Counter(
        (n.op, len(n.input), tuple(sorted(k for k in n.attr if not k.startswith("_"))))
        for n in graph_def.node
    )
    return sorted([list(k) + [v] for k, v in nodes.items()], key=repr)


def describe(f):
    (concrete,) = f._list_all_concrete_functions()
    graph_def = concrete.graph.as_graph_def()
    library = sorted(
        (shape(tf.compat.v1.GraphDef(node=fn.node_def)) for fn in graph_def.library.function),
        key=repr,
    )
    return {"graph": shape(graph_def), "library": library, "autograph": f._autograph}


out = {}
ways = {"payload": lambda tf: recorded(own(tf)), "autograph": lambda tf: recorded(tf.function)}
for way, decorator in ways.items():
    payload._graph = decorator
    for name in payload.ITERATIONS:
        made.clear()
        bench = payload.BUILDERS[name](np, tf)
        bench.step()
        bench.sync()
        out.setdefault(name, {})[way] = [describe(f) for f in made]
print(json.dumps(out))
"""


def test_graphs_are_the_same_without_autograph(tf_python: Path) -> None:
    proc = subprocess.run(
        [str(tf_python), "-c", SCRIPT, str(PAYLOAD)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    graphs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(graphs) == list(BENCHMARKS)
    for name, ways in graphs.items():
        mine, theirs = ways["payload"], ways["autograph"]
        assert [f["autograph"] for f in mine] == [False], name
        assert [f["autograph"] for f in theirs] == [True], name
        assert [f["graph"] for f in mine] == [f["graph"] for f in theirs], name
        assert [f["library"] for f in mine] == [f["library"] for f in theirs], name
    # The GRU training steps are the graphs worth checking: hundreds of ops each, with the
    # gradient's functions in the library (the scan's loop bodies among them).
    sizes = {n: sum(c[-1] for c in ways["payload"][0]["graph"]) for n, ways in graphs.items()}
    assert sizes["gru-static"] > 1000 and sizes["gru-keras"] > 100, sizes
    assert graphs["gru-dynamic"]["payload"][0]["library"], "the scan's functions are missing"


# Runs inside the TensorFlow venv: each training step traced here, and the same step saved by
# the payload (save_traces, as a runtime does once per build) and loaded (as every process
# does); prints the description of both graphs (the `shape`/`describe` above).
LOADED = (
    SCRIPT[: SCRIPT.index("out = {}")]
    + r"""
import pathlib, tempfile
folder = pathlib.Path(tempfile.mkdtemp())
payload.save_traces(np, tf, folder)
specs = (tf.TensorSpec((payload.BATCH, payload.SEQ), tf.int32),
         tf.TensorSpec((payload.BATCH,), tf.int32))
out = {}
for name, make in payload.TRAINERS.items():
    traced = make(np, tf).train_step.get_concrete_function(*specs)
    restored = tf.saved_model.load(str(folder / name)).train_step
    (loaded,) = restored._list_all_concrete_functions()
    out[name] = {way: describe_concrete(f) for way, f in (("traced", traced), ("loaded", loaded))}
print(json.dumps(out))
"""
)
LOADED = LOADED.replace(
    "def describe(f):\n    (concrete,) = f._list_all_concrete_functions()\n",
    "def describe_concrete(concrete):\n",
).replace('    return {"graph": shape(graph_def), "library": library, "autograph": f._autograph}',
          '    return {"graph": shape(graph_def), "library": library}')  # fmt: skip


def test_a_loaded_training_step_is_the_traced_graph(tf_python: Path) -> None:
    """Suite version 4 times the graphs version 3 did: each GRU training step a process loads
    (saved once per build) is the step traced in the process, op for op, and every function it
    calls (the loops' bodies and their gradients) is one of the traced step's. The traced
    library also keeps the loop bodies as they were before the gradient rewrote them, which
    nothing calls."""
    proc = subprocess.run(
        [str(tf_python), "-c", LOADED, str(PAYLOAD)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    graphs = json.loads(proc.stdout.strip().splitlines()[-1])
    assert list(graphs) == list(TRAINED)
    for name, ways in graphs.items():
        traced, loaded = ways["traced"], ways["loaded"]
        assert loaded["graph"] == traced["graph"], name
        assert all(f in traced["library"] for f in loaded["library"]), name
        assert bool(loaded["library"]) == (name != "gru-static"), name  # unrolled: no loop
