"""The host profile's JSON document: round trip, and a saved profile that is not one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tfbuild.errors import HostProfileError
from tfbuild.machine.detect import detect
from tfbuild.machine.profile import load_profile


def test_json_round_trip(tmp_path: Path) -> None:
    profile = detect()
    saved = tmp_path / "host.json"
    saved.write_text(json.dumps(profile.to_json()))
    loaded = load_profile(saved)
    assert loaded.to_json() == profile.to_json()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", r"host\.json:1:2: not valid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema": "tfbuild.host/9"}', "schema is 'tfbuild.host/9'"),
        ('{"schema": "tfbuild.host/1"}', "missing key"),
    ],
)
def test_bad_host_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "host.json"
    path.write_text(content)
    with pytest.raises(HostProfileError, match=message):
        load_profile(path)
