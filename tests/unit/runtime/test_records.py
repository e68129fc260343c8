"""The records at a runtime's edges: the payload's configuration, written as the payload has
always read it, and a runtime's description, read from results and written back as recorded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from support.env import FIXTURES

from tfbuild.runtime.records import ContainerRecord, PayloadConfig, RuntimeRecord, VenvRecord

RESULTS = sorted((FIXTURES / "results").glob("*.json*"))

SPEC: dict[str, Any] = {
    "kind": "keras",
    "path": "/home/me/m.keras",
    "signature": None,
    "batch": 4,
    "shapes": {"x": [1, 2]},
    "inputs": "/home/me/in.npz",
    "calls": 7,
    "files": [],
}
"""A workload as the payload is told of it (bench.workload.payload_spec)."""

CONTAINER: dict[str, Any] = {
    "kind": "docker",
    "image": "tfbuild/runtime:2b847d217b02ee77-0c5d1f2e3a",
    "image_id": "sha256:" + "f" * 64,
    "base_image": "tfbuild/base:bookworm",
    "wheel": "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl",
    "sha256": "2b847d217b02ee7731ed91431daf3250daa0196c3c94614d23be27232e6e5b6c",
    "network": "none",
    "user": "10001:10001",
    "cpuset": None,
}
"""A container runtime as DockerRuntime.describe has written it into results."""


def ordered(data: dict[str, Any]) -> str:
    """A document as it is written: keys in their order, values as JSON."""
    return json.dumps(data)


def recorded_runtimes() -> list[tuple[str, dict[str, Any]]]:
    """Every variant's runtime in the committed results and calibration files."""
    found = []
    for path in RESULTS:
        raw = path.read_bytes()
        text = gzip.decompress(raw) if path.suffix == ".gz" else raw
        for name, variant in json.loads(text).get("variants", {}).items():
            if "runtime" in variant:
                found.append((f"{path.name}:{name}", variant["runtime"]))
    return found


def test_every_recorded_runtime_reads_and_writes_back_as_it_was_recorded() -> None:
    runtimes = recorded_runtimes()
    assert len(runtimes) > 20 and {r["kind"] for _, r in runtimes} == {"local"}
    for where, data in runtimes:
        record = RuntimeRecord.from_json(data)
        assert record.venv is not None and record.container is None, where
        assert record.kind == "local" and record.wheel.endswith(".whl"), where
        assert ordered(record.to_json()) == ordered(data), where


def test_a_local_runtime_is_its_venv_and_its_wheel() -> None:
    data = recorded_runtimes()[0][1]
    assert RuntimeRecord.from_json(data) == RuntimeRecord(
        kind="local",
        wheel=data["wheel"],
        sha256=data["sha256"],
        venv=VenvRecord(path=data["path"], python=data["python"]),
    )


def test_a_container_runtime_keeps_its_keys_in_place_and_its_nulls() -> None:
    """The image before the wheel, the confinement after it; an image the engine no longer
    has and an unrestricted cpuset are written as null, not left out."""
    record = RuntimeRecord.from_json(CONTAINER)
    assert record.container == ContainerRecord(
        image=CONTAINER["image"],
        image_id=CONTAINER["image_id"],
        base_image="tfbuild/base:bookworm",
        network="none",
        user="10001:10001",
        cpuset=None,
    )
    assert record.venv is None and record.other == {}
    assert ordered(record.to_json()) == ordered(CONTAINER)
    gone = {**CONTAINER, "image_id": None, "cpuset": "0-1"}
    assert ordered(RuntimeRecord.from_json(gone).to_json()) == ordered(gone)


def test_keys_of_another_tfbuild_are_kept() -> None:
    data = {**CONTAINER, "runtime_engine": "podman"}
    record = RuntimeRecord.from_json(data)
    assert record.other == {"runtime_engine": "podman"}
    assert record.to_json() == data


@pytest.mark.parametrize(
    ("data", "missing"),
    [
        ({k: v for k, v in CONTAINER.items() if k != "kind"}, "'kind'"),
        ({k: v for k, v in CONTAINER.items() if k != "user"}, "user"),
    ],
)
def test_a_runtime_without_what_its_kind_writes_is_refused(
    data: dict[str, Any], missing: str
) -> None:
    with pytest.raises((KeyError, TypeError), match=missing):
        RuntimeRecord.from_json(data)


TODAY: dict[str, tuple[PayloadConfig, dict[str, Any]]] = {
    "a config": (
        PayloadConfig(benchmarks=("gru-keras", "matmul-fed"), intra_op=2, inter_op=1, xla="jit"),
        {"benchmarks": ["gru-keras", "matmul-fed"], "intra_op": 2, "inter_op": 1, "xla": "jit",
         "cpus": None},
    ),
    "a config with TensorFlow's defaults": (
        PayloadConfig(benchmarks=("gru-keras",)),
        {"benchmarks": ["gru-keras"], "intra_op": None, "inter_op": None, "xla": None,
         "cpus": None},
    ),
    "a config with a workload": (
        PayloadConfig(benchmarks=(), xla="jit", workload=SPEC),
        {"benchmarks": [], "intra_op": None, "inter_op": None, "xla": "jit", "workload": SPEC,
         "cpus": None},
    ),
    "a calibration process": (
        PayloadConfig(benchmarks=("gru-keras",), calibrate={"gru-keras": 120}),
        {"benchmarks": ["gru-keras"], "intra_op": None, "inter_op": None, "xla": None,
         "calibrate": {"gru-keras": 120}, "cpus": None},
    ),
    "the smoke test": (
        PayloadConfig(smoke_test=True),
        {"benchmarks": [], "intra_op": None, "inter_op": None, "cpus": None},
    ),
    "the smoke test of a workload": (
        PayloadConfig(smoke_test=True, workload=SPEC),
        {"benchmarks": [], "intra_op": None, "inter_op": None, "workload": SPEC,
         "check_workload": True, "cpus": None},
    ),
}  # fmt: skip
"""Each kind of payload process, and the configuration it has been sent (its keys in order)."""


@pytest.mark.parametrize("case", list(TODAY))
def test_the_payload_is_told_what_it_has_always_been_told(case: str) -> None:
    config, expected = TODAY[case]
    assert ordered(config.to_json()) == ordered(expected)
    pinned = config.pinned([0, 1]).to_json()
    assert ordered(pinned) == ordered({**expected, "cpus": [0, 1]})


def test_a_process_pinned_to_no_cpu_is_not_pinned() -> None:
    config = PayloadConfig(benchmarks=("gru-keras",))
    assert config.pinned(()).cpus is None and config.pinned(None).to_json()["cpus"] is None
    assert config.pinned(range(2)).cpus == (0, 1)


def test_the_payload_reads_every_key_it_is_sent() -> None:
    """The payload (which never imports tfbuild) reads each key the configuration writes."""
    payload = (Path(__file__).parents[3] / "tfbuild" / "bench" / "payload.py").read_text()
    everything = PayloadConfig(
        benchmarks=("gru-keras",), xla="jit", workload=SPEC, calibrate={"gru-keras": 1}
    )
    keys = {*everything.to_json(), *PayloadConfig(smoke_test=True, workload=SPEC).to_json()}
    assert {k for k in keys if f'"{k}"' not in payload} == set()
