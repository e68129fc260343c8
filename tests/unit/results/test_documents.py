"""tfbuild's JSON documents as files: written whole (gzip when the name says so), read back,
and a document that is not the one asked for named for what it seems to be."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tfbuild.errors import ResultsError
from tfbuild.results.documents import read_json, schema_of, write_json

DOCUMENT = {"schema": "tfbuild.results/2", "runs": [{"round": 0}], "note": "päckchen"}


@pytest.mark.parametrize("name", ["session.json", "session.json.gz"])
def test_a_document_is_read_back_as_written(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    write_json(path, DOCUMENT)
    raw = path.read_bytes()
    text = gzip.decompress(raw) if name.endswith(".gz") else raw
    assert json.loads(text) == DOCUMENT and text.endswith(b"\n")
    assert read_json(path, "tfbuild.results/2") == DOCUMENT
    assert schema_of(path) == "tfbuild.results/2"
    assert [p.name for p in tmp_path.iterdir()] == [name]  # no temporary file left beside it


@pytest.mark.parametrize(
    ("document", "said"),
    [
        ({"schema": "tfbuild.calibration/1"}, "a calibration file (tfbuild.calibration/1"),
        ({"schema": "tfbuild.compare/1"}, "the output of `tfbuild compare --format json`"),
        ({"schema": "tfbuild.results/9"}, "results of another tfbuild version"),
        ({"version": "1.0", "metadata": {}, "benchmarks": []}, "it looks like pyperf's JSON"),
        ({"results": [{"command": "sleep 1"}]}, "it looks like hyperfine's --export-json"),
        ([1, 2], "a JSON list, not an object"),
        ({"a": 1}, 'no "schema" key; its keys: a'),
    ],
)
def test_another_document_is_named_for_what_it_is(
    tmp_path: Path, document: object, said: str
) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ResultsError) as raised:
        read_json(path, "tfbuild.results/2")
    message = str(raised.value)
    assert message.startswith(f"{path}: ") and said in message
    assert "expected a file of schema 'tfbuild.results/2' (what `tfbuild bench`" in message


def test_an_unreadable_file_says_why(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(
        ResultsError, match=r"broken\.json\.gz: not a JSON results file \(Not a gzipped file"
    ):
        read_json(broken, "tfbuild.results/2")
    assert schema_of(broken) is None and schema_of(tmp_path / "absent.json") is None
    with pytest.raises(ResultsError, match=r"absent\.json: cannot read \(No such file"):
        read_json(tmp_path / "absent.json", "tfbuild.results/2")
