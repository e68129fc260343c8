"""The fixed benchmark suite: names, what each one measures, and in which unit.

Any change to what a benchmark does bumps SUITE_VERSION, so results of different suites are
never compared with each other. The code that runs the suite lives in ``payload.py``; a test
checks that both agree on the names.
"""

from __future__ import annotations

from dataclasses import dataclass

SUITE_VERSION = 4


@dataclass(frozen=True)
class Benchmark:
    name: str
    unit: str
    description: str


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("gru-keras", "examples/s", "seed-000 GRU model, Keras GRU layer, one SGD step"),
        Benchmark(
            "gru-static", "examples/s", "hand-built GRU cell, 20 steps unrolled in one graph"
        ),
        Benchmark("gru-dynamic", "examples/s", "hand-built GRU cell run by a symbolic loop"),
        Benchmark("matmul-fed", "GFLOP/s", "y = m.x + b, 1000x1000 fp32, fed from numpy per call"),
        Benchmark("matmul-pinned", "GFLOP/s", "y = m.x + b with m, x, b, y resident as variables"),
        Benchmark("input-fed", "steps/s", "minibatches fed from numpy every step"),
        Benchmark(
            "input-pinned", "steps/s", "minibatches sliced from a dataset held as a constant"
        ),
    )
}

TRAINED = ("gru-keras", "gru-static", "gru-dynamic")
"""The benchmarks that train a model: each build traces their training steps once and saves
them (payload.save_traces), and every process loads them instead of tracing them again."""


@dataclass(frozen=True)
class Contrast:
    """Two benchmarks of the suite that do the same work two ways, in the same unit: their
    ratio within one config is the experiment of a seed write-up."""

    name: str
    faster_if: str
    than: str
    seed: str


CONTRASTS: tuple[Contrast, ...] = (
    Contrast(
        "hand-built GRU, unrolled, vs the Keras GRU layer",
        "gru-static",
        "gru-keras",
        "seed 000: the hand-built GRU ran 1.4x faster than GRUCell + dynamic_rnn",
    ),
    Contrast(
        "hand-built GRU, symbolic loop vs unrolled",
        "gru-dynamic",
        "gru-static",
        "seed 000: static_rnn instead of dynamic_rnn for a speed boost",
    ),
    Contrast(
        "matmul, operands resident as variables vs fed from numpy",
        "matmul-pinned",
        "matmul-fed",
        "seed 004: on a GPU, over 70 % of the time went to copying operands",
    ),
    Contrast(
        "minibatches sliced from a constant vs fed from numpy",
        "input-pinned",
        "input-fed",
        "seed 003: on a GPU, keep the dataset resident and slice it",
    ),
)
