"""The runtime interface: the environment every benchmark process starts with."""

from __future__ import annotations

import pytest

from tfbuild.runtime.base import local_env


def test_child_env_scrubs_inherited_tuning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "1")
    monkeypatch.setenv("KMP_AFFINITY", "verbose")
    monkeypatch.setenv("PYTHONPATH", "/somewhere/else")
    monkeypatch.setenv("KEEP_ME", "yes")
    env = local_env({"OMP_NUM_THREADS": "1"})
    assert env["OMP_NUM_THREADS"] == "1"
    assert "TF_ENABLE_ONEDNN_OPTS" not in env and "KMP_AFFINITY" not in env
    assert "PYTHONPATH" not in env
    assert env["KEEP_ME"] == "yes" and env["PYTHONHASHSEED"] == "0"
