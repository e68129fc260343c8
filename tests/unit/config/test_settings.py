"""One cascade for settings (default < matrix < environment < option), each value knowing the
layer and the place it comes from."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfbuild.config.load import load_matrix
from tfbuild.config.settings import Cascade, Setting, matrix_settings

MATRIX = """\
defaults:
  python: "3.12"
  bazel:
    cache: /srv/bazel-cache
    network: host
variants:
  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0, python: "3.12"}
"""


def test_the_strongest_layer_that_sets_a_value_wins() -> None:
    env = {"TFBUILD_WHEELS": "/srv/wheels", "EMPTY": ""}

    def store(**layers: object) -> Setting:
        resolved = Cascade(env)
        resolved.take("store", "wheels", **layers)  # type: ignore[arg-type]
        return resolved.settings[0]

    assert store().source == "default"
    layered = store(matrix=("w", "m.yaml:3"), variable="TFBUILD_WHEELS")
    assert (layered.value, layered.source) == ("/srv/wheels", "environment TFBUILD_WHEELS")
    given = store(variable="TFBUILD_WHEELS", option=("--store", "x"))
    assert (given.value, given.layer, given.where) == ("x", "option", "--store")
    # an option not given and an empty variable set nothing
    kept = store(matrix=("w", "m.yaml:3"), variable="EMPTY", option=("--store", None))
    assert (kept.value, kept.source) == ("w", "matrix m.yaml:3")


def test_the_matrix_says_on_which_line_it_sets_a_default(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(MATRIX)
    matrix = load_matrix(path)
    found = {s.name: s for s in matrix_settings(matrix, Cascade({}))}
    assert (
        found["defaults.python"].source == f"matrix {path}:2"
        and found["defaults.python"].value == "3.12"
    )
    assert found["defaults.bazel.cache"].source == f"matrix {path}:4"
    assert found["defaults.bazel.network"].value == "host"
    assert (
        found["defaults.tensorflow"].source == "default"
        and found["defaults.tensorflow"].value == "2.21.0"
    )
    assert found["defaults.bazel.disk_cache"].value == "yes"
    # a default the command replaced (the matrix holds it as applied): the layer that set it
    stronger = {"defaults.bazel.cache": Setting("--bazel-cache", "x", "environment",
                                                "TFBUILD_BAZEL_CACHE")}  # fmt: skip
    overridden = {s.name: s for s in matrix_settings(matrix, Cascade({}), stronger)}
    assert (
        overridden["defaults.bazel.cache"].value,
        overridden["defaults.bazel.cache"].source,
    ) == (
        "/srv/bazel-cache",
        "environment TFBUILD_BAZEL_CACHE",
    )


def test_a_cascade_records_each_setting_as_it_resolves_it() -> None:
    """The record is the resolution: each value taken is the one recorded, in the order
    taken, with the layer that set it; what `said` hears is that record, as it grows."""
    heard: list[str] = []
    resolved = Cascade({"TFBUILD_CACHE_DIR": "/srv/cache"}, said=lambda s: heard.append(s.name))
    cache = resolved.take("--cache-dir", Path("/home/me/.cache/tfbuild"),
                          variable="TFBUILD_CACHE_DIR", read=Path)  # fmt: skip
    rounds = resolved.take(
        "suite.min_rounds", 5, matrix=(3, "m.yaml: suite"), option=("--min-rounds", 8)
    )
    margin = resolved.take("suite.resolve", 0.05, matrix=(0.1, "m.yaml: suite"),
                           option=("--resolve", None), show=lambda v: f"{v:.0%}")  # fmt: skip
    assert (cache, rounds, margin) == (Path("/srv/cache"), 8, 0.1)
    assert [(s.name, s.value, s.source) for s in resolved.settings] == [
        ("--cache-dir", "/srv/cache", "environment TFBUILD_CACHE_DIR"),
        ("suite.min_rounds", "8", "option --min-rounds"),
        ("suite.resolve", "10%", "matrix m.yaml: suite"),
    ]
    assert heard == ["--cache-dir", "suite.min_rounds", "suite.resolve"]
    assert resolved.source("suite.resolve") == resolved.settings[2]
    assert resolved.source("--store") is None


def test_a_variable_under_an_option_given_is_not_read() -> None:
    """The option wins, so the variable is not read at all: a bad value there is no error."""

    def refuse(text: str) -> int:
        raise AssertionError(f"read {text!r}")

    resolved = Cascade({"TFBUILD_PROCESSES": "bogus"})
    given = resolved.take("--processes", 1, variable="TFBUILD_PROCESSES", read=refuse,
                          option=("--processes", 2))  # fmt: skip
    assert given == 2 and resolved.settings[0].source == "option --processes"
    with pytest.raises(AssertionError, match="read 'bogus'"):
        resolved.take("--processes", 1, variable="TFBUILD_PROCESSES", read=refuse)
