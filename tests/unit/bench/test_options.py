"""What a session records about where it ran: paths below its folder relative."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfbuild.files import portable


def test_results_record_paths_below_the_session_folder_relative(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A wheel in the project's store is recorded as the user types it there (and as the
    "use this" block prints it); a path elsewhere stays absolute."""
    monkeypatch.chdir(tmp_path)
    wheel = tmp_path / "wheels" / "tf2.21-py3.11-stock" / "tf.whl"
    assert portable(wheel) == "wheels/tf2.21-py3.11-stock/tf.whl"
    assert portable(Path("/srv/store/tf.whl")) == "/srv/store/tf.whl"
