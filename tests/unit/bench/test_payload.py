"""The benchmark payload that runs inside a runtime: what it imports, and that it agrees with the
suite."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tfbuild.bench import payload
from tfbuild.config import suite
from tfbuild.runtime.base import PAYLOAD, WORKLOAD_FORMS, WORKLOAD_PAYLOAD
from tfbuild.runtime.forked import ZYGOTE


def test_payload_and_suite_agree() -> None:
    assert tuple(suite.BENCHMARKS) == tuple(payload.ITERATIONS)
    assert set(payload.ITERATIONS) == set(payload.BUILDERS) == set(payload.SAMPLES)
    assert tuple(payload.TRAINERS) == suite.TRAINED
    for contrast in suite.CONTRASTS:  # a ratio of throughputs needs one unit for both ways
        faster_if, than = suite.BENCHMARKS[contrast.faster_if], suite.BENCHMARKS[contrast.than]
        assert faster_if.unit == than.unit, contrast


@pytest.mark.parametrize(
    ("shipped", "beside"),
    [
        (PAYLOAD, {"workload_payload"}),
        (WORKLOAD_PAYLOAD, {"workload_forms"}),
        (WORKLOAD_FORMS, {"ai_edge_litert"}),  # LiteRT's interpreter, for the litert form
        (ZYGOTE, {"payload"}),
    ],
)
def test_payload_imports_only_stdlib_numpy_tensorflow(shipped: Path, beside: set[str]) -> None:
    """The files shipped into a runtime import nothing of tfbuild; the payload imports the
    workload part, and that the model forms' part, each shipped beside it."""
    tree = ast.parse(shipped.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom):  # `from . import x`: x must be shipped beside
            imported |= {alias.name for alias in node.names}
    allowed = set(sys.stdlib_module_names) | {"numpy", "tensorflow", "__future__"} | beside
    assert imported <= allowed, imported - allowed
