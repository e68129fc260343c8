"""The stand-in TensorFlow (tests/support/standin_tf.py) held to the real one: the payload run on
each, as a runtime runs it (tfbuild.runtime.base.run_payload), for the benchmarks the engine's
tests run on the stand-in, measures every benchmark without an error, applies the thread
settings it is told, and records the same fields in the same places. A payload change that
calls what the stand-in lacks fails here, not as a puzzle in those tests. (What the stand-in
allows and TensorFlow refuses, such as thread settings after the first op, only the real half
of this test and the tests on real TensorFlow can catch.)"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.standin_tf import VERSION

from tfbuild.runtime.base import PAYLOAD, local_env, run_payload
from tfbuild.runtime.records import PayloadConfig

pytestmark = [pytest.mark.tf, pytest.mark.slow]

CONFIG = PayloadConfig(benchmarks=("matmul-pinned", "input-pinned"), intra_op=1, inter_op=1)


def fields(value: Any) -> Any:
    """Where a result records what, without the figures: a dict's keys (each with its value's
    fields), a list's first item's fields, and the kind of every other value (a number, a
    string, a bool, none)."""
    if isinstance(value, dict):
        return {k: fields(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [fields(value[0])] if value else []
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def measured(python: str, env: dict[str, str]) -> dict[str, Any]:
    outcome = run_payload([python, str(PAYLOAD)], CONFIG, local_env(env), 600)
    assert outcome.returncode == 0 and outcome.result is not None, outcome.stderr_tail
    return outcome.result


def test_the_standin_records_what_tensorflow_records(
    standin: tuple[Path, Path], tf_python: Path, tmp_path: Path
) -> None:
    wheel, _ = standin
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "standin")
    on_standin = measured(sys.executable, {"PYTHONPATH": str(tmp_path / "standin")})
    on_tensorflow = measured(str(tf_python), {})

    assert on_standin["smoke"]["tensorflow"] == VERSION != on_tensorflow["smoke"]["tensorflow"]
    for result in (on_standin, on_tensorflow):
        assert result["smoke"]["probe_ok"] is True
        assert (result["threads"]["intra_op"], result["threads"]["inter_op"]) == (1, 1)
        assert set(result["benchmarks"]) == set(CONFIG.benchmarks)
        for entry in result["benchmarks"].values():
            assert "error" not in entry, entry.get("traceback")
            assert len(entry["samples"]) == 3 and all(s["throughput"] > 0 for s in entry["samples"])
    # The smoke test's facts of a build differ in what they hold; the stand-in has no oneDNN
    # to report on, as a build without TensorFlow's port module reports none.
    assert on_standin["smoke"]["onednn"] is None
    assert on_standin["smoke"].keys() == on_tensorflow["smoke"].keys()
    del on_standin["smoke"], on_tensorflow["smoke"]
    assert fields(on_standin) == fields(on_tensorflow)
