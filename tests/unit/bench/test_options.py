"""What a session records about where it ran (paths below its folder relative), and what it
tells each benchmark process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfbuild.bench.options import payload_config
from tfbuild.bench.workload import payload_spec
from tfbuild.files import portable
from tfbuild.results.model import ConfigEntry, Workload, config_entry


def test_results_record_paths_below_the_session_folder_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel in the project's store is recorded as the user types it there (and as the
    "use this" block prints it); a path elsewhere stays absolute."""
    monkeypatch.chdir(tmp_path)
    wheel = tmp_path / "wheels" / "tf2.21-py3.11-stock" / "tf.whl"
    assert portable(wheel) == "wheels/tf2.21-py3.11-stock/tf.whl"
    assert portable(Path("/srv/store/tf.whl")) == "/srv/store/tf.whl"


def test_a_config_is_told_the_suites_benchmarks_its_threads_and_the_workload() -> None:
    """What a benchmark process of a config is sent, key for key as it has always been: the
    workload's own benchmarks are the workload's part, not the suite's."""
    entry = ConfigEntry(key="v:jit", variant="v", tuning="jit", intra_op=2, inter_op=1, xla="jit")
    told = payload_config(("gru-keras", "workload", "workload-p50", "matmul-fed"), entry)
    assert json.dumps(told.to_json()) == json.dumps(
        {
            "benchmarks": ["gru-keras", "matmul-fed"],
            "intra_op": 2,
            "inter_op": 1,
            "xla": "jit",
            "cpus": None,
        }
    )
    workload = Workload(kind="keras", path="/m.keras", digest="d" * 64, version=1, calls=7)
    with_model = payload_config(("workload",), config_entry("v:default"), workload).to_json()
    assert list(with_model) == ["benchmarks", "intra_op", "inter_op", "xla", "workload", "cpus"]
    assert with_model["benchmarks"] == [] and with_model["workload"] == payload_spec(workload)
