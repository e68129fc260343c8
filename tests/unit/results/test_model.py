"""The results model: a variant's runtime is held as the runtime's own record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.env import FIXTURES

from tfbuild.errors import ResultsError


def test_a_variants_runtime_is_the_runtimes_record_written_back_as_recorded(
    tmp_path: Path,
) -> None:
    """Every committed session (both schema versions, and a calibration's) holds its runtimes
    as RuntimeRecords and writes each back key for key, in its place; a runtime without the
    kind --resume makes again is refused by its place."""
    import gzip

    from tfbuild.results import calibration
    from tfbuild.results.codec import load, to_json
    from tfbuild.runtime.records import RuntimeRecord

    checked = 0
    for path in sorted((FIXTURES / "results").glob("*.json*")):
        raw = path.read_bytes()
        document = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
        is_calibration = path.name.startswith("calibration")
        results = calibration.load(path).session if is_calibration else load(path)
        written = to_json(results)["variants"]
        for name, variant in document["variants"].items():
            runtime = (results.variants or {})[name].runtime
            assert isinstance(runtime, RuntimeRecord) and runtime.kind == "local", name
            assert json.dumps(written[name]["runtime"]) == json.dumps(variant["runtime"])
            checked += 1
    assert checked > 20
    document = json.loads((FIXTURES / "results" / "aa-run.json").read_text())
    del document["variants"]["stock"]["runtime"]["kind"]
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(document))
    with pytest.raises(ResultsError, match=r"variants\.stock: missing 'kind'"):
        load(damaged)
