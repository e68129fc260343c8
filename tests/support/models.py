"""Real models for `--workload` tests, made by real TensorFlow in a runtime's interpreter: a GRU
text classifier in the shape of seed 000's model (embedding, GRU, dense head), saved as a
SavedModel (its serving signature with a dynamic batch dimension, and a second signature with
two inputs) and as a .keras file; and a script workload."""

from __future__ import annotations

import subprocess
from pathlib import Path

VOCAB, EMBED, HIDDEN, SEQ, CLASSES = 200, 16, 32, 12, 4

MAKE = f"""
import sys
import numpy as np
import tensorflow as tf

out = sys.argv[1]
tf.keras.utils.set_random_seed(0)
tokens = tf.keras.Input(shape=({SEQ},), dtype="int32", name="tokens")
x = tf.keras.layers.Embedding({VOCAB}, {EMBED})(tokens)
x = tf.keras.layers.GRU({HIDDEN})(x)
logits = tf.keras.layers.Dense({CLASSES})(x)
model = tf.keras.Model(tokens, logits)
model.save(out + "/gru.keras")


class Served(tf.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    @tf.function(input_signature=[tf.TensorSpec([None, {SEQ}], tf.int32, name="tokens")])
    def serve(self, tokens):
        return {{"logits": self.model(tokens, training=False)}}

    @tf.function(
        input_signature=[
            tf.TensorSpec([None, {SEQ}], tf.int32, name="tokens"),
            tf.TensorSpec([None, None], tf.float32, name="scale"),
        ]
    )
    def scaled(self, tokens, scale):
        return {{"logits": self.model(tokens, training=False) * scale[:, :1]}}


served = Served(model)
tf.saved_model.save(
    served, out + "/gru-savedmodel",
    signatures={{"serving_default": served.serve, "scaled": served.scaled}},
)
print("made", tf.__version__)
"""

SCRIPT = f"""
import numpy as np
import tensorflow as tf

ITEMS = 8


def setup():
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.standard_normal(({HIDDEN}, {HIDDEN})).astype(np.float32))
    x = tf.constant(rng.standard_normal((ITEMS, {HIDDEN})).astype(np.float32))
    return tf.function(lambda: tf.reduce_sum(tf.matmul(x, w)))


def step(state):
    return state()
"""


def make_models(tf_python: Path, folder: Path) -> dict[str, Path]:
    """gru.keras, gru-savedmodel/ and matmul.py in `folder`, made by `tf_python`."""
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [str(tf_python), "-c", MAKE, str(folder)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (folder / "matmul.py").write_text(SCRIPT)
    return {
        "keras": folder / "gru.keras",
        "savedmodel": folder / "gru-savedmodel",
        "script": folder / "matmul.py",
    }
