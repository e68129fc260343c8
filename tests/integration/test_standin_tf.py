"""The stand-in TensorFlow (tests/support/standin_tf.py) held to the real one: the payload run on
each, for the benchmarks the engine's tests run on the stand-in, records the same things, key
for key and type for type, and does what it was told (its thread settings, its samples). A
payload change that calls what the stand-in lacks fails here, not as a puzzle in those tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.standin_tf import VERSION, standin_wheel

from tfbuild.runtime.base import PAYLOAD
from tfbuild.runtime.records import PayloadConfig

pytestmark = [pytest.mark.tf]

BENCHMARKS = ("matmul-pinned", "input-pinned")


def shape(value: Any) -> Any:
    """What a recorded value is, without its figures: a dict's keys (each with its value's
    shape), a list's length and its first item's shape, else the kind of value."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [len(value), shape(value[0]) if value else None]
    if isinstance(value, bool) or value is None:
        return type(value).__name__
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def payload(python: str, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """The payload's result for BENCHMARKS on one intra-op and one inter-op thread, run as the
    runtimes run it (python payload.py CONFIG RESULT)."""
    folder.mkdir()
    config = PayloadConfig(benchmarks=BENCHMARKS, intra_op=1, inter_op=1)
    (folder / "config.json").write_text(json.dumps(config.to_json()))
    proc = subprocess.run(
        [python, str(PAYLOAD), str(folder / "config.json"), str(folder / "result.json")],
        capture_output=True, text=True, timeout=600, env={**os.environ, **env}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads((folder / "result.json").read_text())
    return result


def test_the_standin_records_what_tensorflow_records(tf_python: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(standin_wheel(tmp_path / "wheel")) as archive:
        archive.extractall(tmp_path / "standin")
    standin = payload(
        sys.executable, tmp_path / "on-standin", {"PYTHONPATH": str(tmp_path / "standin")}
    )
    real = payload(str(tf_python), tmp_path / "on-tensorflow", {"TF_CPP_MIN_LOG_LEVEL": "3"})

    assert standin["smoke"]["tensorflow"] == VERSION != real["smoke"]["tensorflow"]
    for result in (standin, real):
        assert result["smoke"]["probe_ok"] is True
        assert (result["threads"]["intra_op"], result["threads"]["inter_op"]) == (1, 1)
        assert set(result["benchmarks"]) == set(BENCHMARKS)
        for entry in result["benchmarks"].values():
            assert "error" not in entry, entry.get("traceback")
            assert entry["samples"] and all(s["throughput"] > 0 for s in entry["samples"])
    # the smoke test says the same things of both; what the stand-in has not (Keras, oneDNN,
    # a build's facts) it says it has not, as a build without them does
    assert standin["smoke"].keys() == real["smoke"].keys()
    assert standin["smoke"]["keras"] is standin["smoke"]["onednn"] is None
    assert standin.pop("smoke")["build_info"] and real.pop("smoke")["build_info"]
    assert shape(standin) == shape(real)
