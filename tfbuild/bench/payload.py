"""tfbuild benchmark suite, version 4: the code that runs inside a runtime (venv or container).

Imports only the standard library, numpy and tensorflow, and never tfbuild: the file is copied
into the runtime and run as ``python payload.py CONFIG.json RESULT.json`` (or forked by
zygote.py, its parent having imported TensorFlow). The tuning's environment variables are set
before TensorFlow starts; thread pool sizes from the config are applied before the first op.

Every benchmark has fixed shapes, seeds, warm-up, iterations and samples, identical for every
build. A change to any of them is a new suite version (tfbuild.config.suite.SUITE_VERSION, where
the suite's names are too), so results of different suites are never compared. Version 2 timed
less work per process than version 1, version 3 half the steps per sample of version 2 (on a
shared machine the spread between processes dominates, so more, cheaper processes buy more
precision per second: `tfbuild calibrate`). Version 4 times
the same graphs as version 3, but each build traces its training steps once (`payload.py
--save-traces FOLDER`) and every process loads them instead of tracing them again. Each process
records where its time went: import, building, tracing, warm-up, timed samples.

The experiments come from:
- gru-*: "TensorFlow Speed: Build from Source and Hand-Built GRU" (library GRU layer vs a
  hand-built cell, unrolled statically or run by a symbolic loop);
- matmul-*: "theano and the curse of GpuFromHost" (y = m.x + b fed from the host every call vs
  resident in device memory, assigned in place);
- input-*: pinning a dataset in device memory and slicing minibatches by index, vs feeding them.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Iterations in one timed sample and timed samples per process, fixed for every build so that
# every build does the same work (chosen with `tfbuild calibrate`, see docs/reference.md).
ITERATIONS = {
    "gru-keras": 4,
    "gru-static": 4,
    "gru-dynamic": 4,
    "matmul-fed": 3,
    "matmul-pinned": 3,
    "input-fed": 50,
    "input-pinned": 50,
}
SAMPLES = {name: 3 for name in ITERATIONS}
# Untimed steps after the first call (which traces the tf.function and is timed on its own).
WARMUP_STEPS = 2
# The seed-000 model.
VOCAB, EMBED, HIDDEN, SEQ, DENSE, BATCH = 1000, 64, 192, 20, 96, 32
LEARNING_RATE, MOMENTUM = 0.05, 0.8
GRU_BATCHES = 8
# The seed-004 matmul and the seed-003 dataset.
N = 1000
ROWS, COLS, MINIBATCH = 8192, 256, 256
SEED = 20170404
ENV_RECORDED = (
    *("OMP_NUM_THREADS", "MKL_NUM_THREADS", "KMP_BLOCKTIME", "KMP_AFFINITY", "KMP_HW_SUBSET"),
    *("OMP_PROC_BIND", "OMP_PLACES", "TF_ENABLE_ONEDNN_OPTS", "TF_DISABLE_MKL", "LD_PRELOAD"),
    *("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"),
    "TF_XLA_FLAGS",
)

Step = Callable[[], Any]


JIT_COMPILE: dict[str, bool | None] = {"value": None}
"""True under a tuning with `xla: jit` (set from the config before any benchmark is built)."""


def _graph(tf: Any) -> Callable[[Callable[..., Any]], Any]:
    """A decorator: the function as a TensorFlow graph function, traced without autograph.
    Autograph rewrites a function's Python control flow over tensors into graph ops; these
    functions have none (the unrolled loop runs over a Python range, the symbolic one is
    tf.scan), so their graphs are the same op for op without it (a test compares them on real
    TensorFlow), and each process traces about 0.2 s faster. Under `xla: jit` XLA compiles
    each one."""
    return functools.partial(tf.function, autograph=False, jit_compile=JIT_COMPILE["value"])


class TimedStep:
    """One benchmark, built in a TensorFlow process: a step function and the work it does."""

    def __init__(self, step: Step, work: float, unit: str, sync: Step) -> None:
        self.step = step
        self.work = work  # units of `unit` per iteration, before dividing by seconds
        self.unit = unit
        self.sync = sync  # waits for the last step's results; called once per sample


def _gru_data(np: Any, tf: Any) -> tuple[list[Any], list[Any]]:
    rng = np.random.default_rng(SEED)
    inputs = [
        tf.constant(rng.integers(0, VOCAB, size=(BATCH, SEQ), dtype=np.int32))
        for _ in range(GRU_BATCHES)
    ]
    labels = [
        tf.constant(rng.integers(0, VOCAB, size=(BATCH,), dtype=np.int32))
        for _ in range(GRU_BATCHES)
    ]
    return inputs, labels


def _glorot(np: Any, rng: Any, shape: tuple[int, int]) -> Any:
    limit = (6.0 / (shape[0] + shape[1])) ** 0.5
    return rng.uniform(-limit, limit, size=shape).astype(np.float32)


def _sgd_momentum(tf: Any, np: Any, variables: list[Any]) -> tuple[list[Any], Callable[..., None]]:
    """SGD with momentum (Keras semantics: v = m*v - lr*g; w += v), the same for every model:
    its velocities and the update."""
    velocities = [tf.Variable(np.zeros(v.shape, dtype=np.float32)) for v in variables]

    def apply(grads: list[Any]) -> None:
        for var, vel, grad in zip(variables, velocities, grads, strict=True):
            vel.assign(MOMENTUM * vel - LEARNING_RATE * tf.convert_to_tensor(grad))
            var.assign_add(vel)

    return velocities, apply


def _trainer(np: Any, tf: Any, forward: Callable[[Any], Any], variables: list[Any]) -> Any:
    """A model's training step as a tf.Module (its step function, the model's variables and
    the optimiser's), to run here or to save with this build's TensorFlow (save_traces)."""
    velocities, apply = _sgd_momentum(tf, np, variables)

    @_graph(tf)
    def train_step(x: Any, y: Any) -> Any:
        with tf.GradientTape() as tape:
            logits = forward(x)
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits)
            )
        apply(tape.gradient(loss, variables))
        return loss

    module = tf.Module()
    module.train_step, module.weights, module.velocities = train_step, variables, velocities
    return module


def _train_benchmark(np: Any, tf: Any, trainer: Any) -> TimedStep:
    """Steps of a trainer (traced here, or loaded: a restored function needs its module kept)."""
    inputs, labels = _gru_data(np, tf)
    state: dict[str, Any] = {"i": 0, "loss": None}

    def step() -> None:
        i = state["i"] = (state["i"] + 1) % GRU_BATCHES
        state["loss"] = trainer.train_step(inputs[i], labels[i])

    return TimedStep(step, BATCH, "examples/s", lambda: float(state["loss"]))


class _HandBuiltGru:
    """The seed-000 cell: r, z and the candidate from weights on concatenated [x, h]."""

    def __init__(self, np: Any, tf: Any) -> None:
        rng = np.random.default_rng(SEED + 1)
        size = EMBED + HIDDEN
        self.tf = tf
        self.embedding = tf.Variable(rng.uniform(-0.05, 0.05, (VOCAB, EMBED)).astype(np.float32))
        self.wr = tf.Variable(_glorot(np, rng, (size, HIDDEN)))
        self.wz = tf.Variable(_glorot(np, rng, (size, HIDDEN)))
        self.w = tf.Variable(_glorot(np, rng, (size, HIDDEN)))
        self.br = tf.Variable(np.ones(HIDDEN, dtype=np.float32))
        self.bz = tf.Variable(np.ones(HIDDEN, dtype=np.float32))
        self.b = tf.Variable(np.zeros(HIDDEN, dtype=np.float32))
        self.w1 = tf.Variable(_glorot(np, rng, (HIDDEN, DENSE)))
        self.b1 = tf.Variable(np.zeros(DENSE, dtype=np.float32))
        self.w2 = tf.Variable(_glorot(np, rng, (DENSE, VOCAB)))
        self.b2 = tf.Variable(np.zeros(VOCAB, dtype=np.float32))
        self.h0 = tf.zeros((BATCH, HIDDEN))

    @property
    def variables(self) -> list[Any]:
        return [
            self.embedding,
            self.wr,
            self.wz,
            self.w,
            self.br,
            self.bz,
            self.b,
            self.w1,
            self.b1,
            self.w2,
            self.b2,
        ]

    def cell(self, x: Any, h: Any) -> Any:
        tf = self.tf
        xh = tf.concat([x, h], axis=1)
        r = tf.sigmoid(tf.matmul(xh, self.wr) + self.br)
        z = tf.sigmoid(tf.matmul(xh, self.wz) + self.bz)
        candidate = tf.tanh(tf.matmul(tf.concat([x, r * h], axis=1), self.w) + self.b)
        return z * h + (1.0 - z) * candidate

    def head(self, h: Any) -> Any:
        tf = self.tf
        hidden = tf.nn.relu(tf.matmul(h, self.w1) + self.b1)
        return tf.matmul(hidden, self.w2) + self.b2

    def static(self, tokens: Any) -> Any:
        embedded = self.tf.nn.embedding_lookup(self.embedding, tokens)
        h = self.h0
        for t in range(SEQ):  # unrolled when traced: 20 copies of the cell in one graph
            h = self.cell(embedded[:, t, :], h)
        return self.head(h)

    def dynamic(self, tokens: Any) -> Any:
        tf = self.tf
        embedded = tf.transpose(tf.nn.embedding_lookup(self.embedding, tokens), [1, 0, 2])
        states = tf.scan(lambda h, x: self.cell(x, h), embedded, initializer=self.h0)
        return self.head(states[-1])


def keras_trainer(np: Any, tf: Any) -> Any:
    tf.keras.utils.set_random_seed(SEED)
    model = tf.keras.Sequential(
        [
            tf.keras.layers.Embedding(VOCAB, EMBED),
            tf.keras.layers.GRU(HIDDEN),
            tf.keras.layers.Dense(DENSE, activation="relu"),
            tf.keras.layers.Dense(VOCAB),
        ]
    )
    model(tf.zeros((BATCH, SEQ), dtype=tf.int32))
    return _trainer(np, tf, lambda x: model(x, training=True), model.trainable_variables)


def static_trainer(np: Any, tf: Any) -> Any:
    gru = _HandBuiltGru(np, tf)
    return _trainer(np, tf, gru.static, gru.variables)


def dynamic_trainer(np: Any, tf: Any) -> Any:
    gru = _HandBuiltGru(np, tf)
    return _trainer(np, tf, gru.dynamic, gru.variables)


TRAINERS = {
    "gru-keras": keras_trainer,
    "gru-static": static_trainer,
    "gru-dynamic": dynamic_trainer,
}
"""The benchmarks whose traced step a build saves once (save_traces) for its processes to load."""


def _trained(make: Callable[[Any, Any], Any]) -> Callable[[Any, Any], TimedStep]:
    return lambda np, tf: _train_benchmark(np, tf, make(np, tf))


def save_traces(np: Any, tf: Any, folder: Path) -> None:
    """Trace each training step for the GRU inputs' shapes (without running it: the saved
    variables hold their initial values) and save it as a SavedModel under `folder`."""
    specs = (tf.TensorSpec((BATCH, SEQ), tf.int32), tf.TensorSpec((BATCH,), tf.int32))
    for name, make in TRAINERS.items():
        module = make(np, tf)
        module.train_step.get_concrete_function(*specs)
        tf.saved_model.save(module, str(folder / name))


def _loaded(np: Any, tf: Any, name: str, traces: str) -> TimedStep:
    """A GRU benchmark from its saved training step (the graph save_traces traced: no Python
    is traced again)."""
    return _train_benchmark(np, tf, tf.saved_model.load(f"{traces}/{name}"))


MATMUL_FLOP = 2.0 * N**3 + N**2  # multiply-adds, then the bias


@functools.cache  # the fed and the pinned matmul read the same arrays: drawn once a process
def _matmul_inputs(np: Any) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(SEED + 2)
    return tuple(rng.standard_normal((N, N)).astype(np.float32) for _ in range(3))


def matmul_fed(np: Any, tf: Any) -> TimedStep:
    m, x, b = _matmul_inputs(np)

    @_graph(tf)
    def affine(m: Any, x: Any, b: Any) -> Any:
        return tf.matmul(m, x) + b

    state: dict[str, Any] = {}

    def step() -> None:
        state["y"] = affine(m, x, b).numpy()  # in from numpy, back to numpy, every call

    return TimedStep(step, MATMUL_FLOP / 1e9, "GFLOP/s", lambda: state["y"][0, 0])


def matmul_pinned(np: Any, tf: Any) -> TimedStep:
    m, x, b = (tf.Variable(a) for a in _matmul_inputs(np))
    y = tf.Variable(np.zeros((N, N), dtype=np.float32))

    @_graph(tf)
    def update() -> None:
        y.assign(tf.matmul(m, x) + b)  # nothing crosses between numpy and TF per call

    return TimedStep(update, MATMUL_FLOP / 1e9, "GFLOP/s", lambda: float(y[0, 0]))


@functools.cache  # the same for both input benchmarks: drawn once a process
def _input_arrays(np: Any) -> tuple[Any, Any, tuple[int, ...]]:
    rng = np.random.default_rng(SEED + 3)
    data = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    weights = _glorot(np, rng, (COLS, COLS))
    order = tuple(int(i) for i in rng.permutation(ROWS // MINIBATCH))
    return data, weights, order


def draw_inputs(np: Any) -> None:
    """Draw the inputs made with numpy alone (no TensorFlow op runs): a zygote draws them once,
    and every process it forks finds them drawn."""
    _matmul_inputs(np)
    _input_arrays(np)


def _input_data(np: Any, tf: Any) -> tuple[Any, Any, tuple[int, ...]]:
    data, weights, order = _input_arrays(np)
    return data, tf.Variable(weights), order


def input_fed(np: Any, tf: Any) -> TimedStep:
    data, weights, order = _input_data(np, tf)
    batches = [data[i * MINIBATCH : (i + 1) * MINIBATCH] for i in order]

    @_graph(tf)
    def score(batch: Any) -> Any:
        return tf.reduce_sum(tf.square(tf.matmul(batch, weights)))

    state: dict[str, Any] = {"i": 0, "out": 0.0}

    def step() -> None:
        state["i"] = (state["i"] + 1) % len(batches)
        state["out"] = score(batches[state["i"]]).numpy()  # a numpy minibatch fed every step

    return TimedStep(step, 1.0, "steps/s", lambda: state["out"])


def input_pinned(np: Any, tf: Any) -> TimedStep:
    data, weights, order = _input_data(np, tf)
    resident = tf.constant(data)
    indexes = [tf.constant(i, dtype=tf.int32) for i in order]

    @_graph(tf)
    def score(ix: Any) -> Any:
        batch = tf.slice(resident, [ix * MINIBATCH, 0], [MINIBATCH, -1])
        return tf.reduce_sum(tf.square(tf.matmul(batch, weights)))

    state: dict[str, Any] = {"i": 0, "out": 0.0}

    def step() -> None:
        state["i"] = (state["i"] + 1) % len(indexes)
        state["out"] = score(indexes[state["i"]]).numpy()  # only the index goes in

    return TimedStep(step, 1.0, "steps/s", lambda: state["out"])


BUILDERS: dict[str, Callable[[Any, Any], TimedStep]] = {
    **{name: _trained(make) for name, make in TRAINERS.items()},
    "matmul-fed": matmul_fed,
    "matmul-pinned": matmul_pinned,
    "input-fed": input_fed,
    "input-pinned": input_pinned,
}


def warm_up(bench: TimedStep) -> tuple[float, float]:
    """The first call (tracing) and the warm-up steps: seconds each took."""
    t0 = time.perf_counter()
    bench.step()
    bench.sync()
    t1 = time.perf_counter()
    for _ in range(WARMUP_STEPS):
        bench.step()
    bench.sync()
    return t1 - t0, time.perf_counter() - t1


def measure(bench: TimedStep, iterations: int, samples: int) -> dict[str, Any]:
    """First call (tracing), warm-up steps, then `samples` timed runs of `iterations` steps."""
    trace_s, warmup_s = warm_up(bench)
    timed: list[dict[str, float]] = []
    for _ in range(samples):
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(iterations):
            bench.step()
        bench.sync()
        wall1, cpu1 = time.perf_counter(), time.process_time()
        wall = wall1 - wall0
        timed.append(
            {"wall_s": wall, "cpu_s": cpu1 - cpu0, "throughput": bench.work * iterations / wall}
        )
    return {
        "unit": bench.unit,
        "iterations": iterations,
        "trace_s": trace_s,
        "warmup_s": warmup_s,
        "warmup_iterations": WARMUP_STEPS,
        "samples": timed,
    }


def step_times(bench: TimedStep, steps: int) -> dict[str, Any]:
    """Calibration: the first call, the warm-up, then every step timed on its own."""
    trace_s, warmup_s = warm_up(bench)
    clock = time.perf_counter
    times = []
    last = clock()
    for _ in range(steps):
        bench.step()
        now = clock()
        times.append(round(now - last, 7))  # 0.1 us: far below the noise, half the digits
        last = now
    bench.sync()
    return {
        "unit": bench.unit,
        "work": bench.work,
        "trace_s": trace_s,
        "warmup_s": warmup_s,
        "steps_s": times,
    }


def _onednn_enabled() -> bool | None:
    """TensorFlow's own answer (an internal function, so looked up defensively)."""
    for module in (
        "tensorflow.python.util._pywrap_util_port",
        "tensorflow.python._pywrap_util_port",
    ):
        try:
            port = __import__(module, fromlist=["IsMklEnabled"])
            return bool(port.IsMklEnabled())
        except (ImportError, AttributeError):
            continue
    return None


def smoke(np: Any, tf: Any) -> dict[str, Any]:
    info = tf.sysconfig.get_build_info()
    keras_version = keras_distribution = None
    try:  # keras, keras-nightly (2.22.0rc0 depends on it) or tf-keras: whichever is `keras`
        from importlib import metadata

        providers = metadata.packages_distributions().get("keras") or []
        keras_distribution = providers[0] if providers else None
        keras_version = metadata.version(keras_distribution) if keras_distribution else None
    except Exception:  # keras is not always a separate distribution
        keras_version = None
    probe = tf.reduce_sum(tf.matmul(tf.ones((4, 4)), tf.ones((4, 4)))).numpy()
    return {
        "tensorflow": tf.__version__,
        "git_version": getattr(tf.version, "GIT_VERSION", None),
        "build_info": {
            str(k): v if isinstance(v, (bool, int, float, str)) else str(v)
            for k, v in dict(info).items()
        },
        "onednn": _onednn_enabled(),
        "numpy": np.__version__,
        "keras": keras_version,
        "keras_distribution": keras_distribution,
        "python": platform.python_version(),
        "probe_ok": float(probe) == 64.0,
        "cuda_build": bool(tf.test.is_built_with_cuda()),
        "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
    }


def threads_in_force(tf: Any) -> dict[str, Any]:
    affinity = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {
        "intra_op": tf.config.threading.get_intra_op_parallelism_threads(),
        "inter_op": tf.config.threading.get_inter_op_parallelism_threads(),
        "env": {k: os.environ[k] for k in ENV_RECORDED if k in os.environ},
        "affinity": affinity,
    }


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data), encoding="utf-8")
    tmp.replace(path)


def _workload(np: Any, tf: Any, config: dict[str, Any], result: dict[str, Any]) -> None:
    """The user's model (workload_payload.py, shipped beside this file): checked once in the
    smoke test, measured in a benchmark process; its errors are recorded, never raised."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import workload_payload as wp  # type: ignore[import-not-found]  # beside this file

    threads = config.get("intra_op")  # a form's interpreter (litert) runs with the tuning's
    spec = {**config["workload"], "jit": config.get("xla") == "jit", "threads": threads}
    if config.get("check_workload"):
        result["workload_check"] = wp.check(np, tf, spec)
        return
    t0 = time.perf_counter()
    try:
        entries = wp.measure(np, tf, spec, result)
    except Exception as exc:
        error = {
            "error": f"{type(exc).__name__}: {exc}".strip()[:2000],
            "traceback": traceback.format_exc()[-4000:],
        }
        entries = {name: dict(error) for name in (wp.THROUGHPUT, *wp.LATENCY)}
    for entry in entries.values():
        entry["total_s"] = time.perf_counter() - t0
    result["benchmarks"].update(entries)


def main(argv: list[str]) -> int:
    if argv[1] == "--save-traces":  # payload.py --save-traces FOLDER [jit]
        import numpy as np
        import tensorflow as tf

        JIT_COMPILE["value"] = True if argv[3:] == ["jit"] else None
        save_traces(np, tf, Path(argv[2]))
        return 0
    started_at = time.time()
    started = time.perf_counter()
    config = json.loads(Path(argv[1]).read_text(encoding="utf-8"))
    out_path = Path(argv[2])
    if config.get("cpus"):
        # Pinned before TensorFlow starts, so its thread pools inherit the affinity.
        os.sched_setaffinity(0, config["cpus"])
    result: dict[str, Any] = {
        "pid": os.getpid(),
        "parent": os.getppid(),
        "forked": "tensorflow" in sys.modules,  # a zygote's child: its parent imported it
        "started_at": started_at,
        "benchmarks": {},
    }
    import numpy as np
    import tensorflow as tf

    result["import_s"] = time.perf_counter() - started
    JIT_COMPILE["value"] = True if config.get("xla") == "jit" else None
    if config.get("intra_op"):
        tf.config.threading.set_intra_op_parallelism_threads(int(config["intra_op"]))
    if config.get("inter_op"):
        tf.config.threading.set_inter_op_parallelism_threads(int(config["inter_op"]))
    tf.random.set_seed(SEED)
    t0 = time.perf_counter()
    result["smoke"] = smoke(np, tf)
    result["smoke_s"] = time.perf_counter() - t0
    result["threads"] = threads_in_force(tf)
    _write(out_path, result)
    calibrate = config.get("calibrate") or {}
    for name in config.get("benchmarks", ()):
        t0 = time.perf_counter()
        try:
            traces = config.get("traces") if name in TRAINERS else None
            bench = _loaded(np, tf, name, traces) if traces else BUILDERS[name](np, tf)
            built = time.perf_counter()
            if calibrate:
                entry = step_times(bench, int(calibrate[name]))
            else:
                entry = measure(bench, ITERATIONS[name], SAMPLES[name])
            entry["build_s"] = built - t0
        except Exception as exc:  # recorded per benchmark; the others still run
            entry = {
                "error": f"{type(exc).__name__}: {exc}".strip()[:2000],
                "traceback": traceback.format_exc()[-4000:],
            }
        entry["total_s"] = time.perf_counter() - t0
        result["benchmarks"][name] = entry
        _write(out_path, result)
    if config.get("workload"):
        _workload(np, tf, config, result)
        _write(out_path, result)
    result["payload_s"] = time.perf_counter() - started
    result["finished_at"] = time.time()
    _write(out_path, result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip TensorFlow's interpreter teardown (thread pools, atexit handlers): the result is
    # written, and teardown is time no benchmark measures.
    os._exit(code)
