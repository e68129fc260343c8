"""The benchmark suite's table: each benchmark is declared in the unit the payload measures it
in, the trained benchmarks are the GRU ones (examples a second), and each contrast sets two
ways of one experiment against each other, in one unit, under a name of its own and with the
seed write-up it comes from."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from tfbuild.bench import payload
from tfbuild.config.suite import BENCHMARKS, CONTRASTS, TRAINED


def payload_units() -> dict[str, str]:
    """Function of payload.py -> the unit of the TimedStep it returns, read from its text (the
    payload runs only inside a runtime with TensorFlow)."""
    tree = ast.parse(inspect.getsource(payload))
    units = {}
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "TimedStep"
            ):
                unit = node.args[2]
                assert isinstance(unit, ast.Constant) and isinstance(unit.value, str)
                units[function.name] = unit.value
    return units


def measured_by(name: str) -> Callable[..., Any]:
    """The payload function whose TimedStep a benchmark times: a trained benchmark's steps are
    timed by _train_benchmark."""
    return payload._train_benchmark if name in payload.TRAINERS else payload.BUILDERS[name]


def test_each_benchmark_is_declared_in_the_unit_the_payload_measures_it_in() -> None:
    units = payload_units()
    assert {name: units[measured_by(name).__name__] for name in BENCHMARKS} == {
        name: b.unit for name, b in BENCHMARKS.items()
    }


def test_the_trained_benchmarks_are_the_gru_ones_in_examples_a_second() -> None:
    assert tuple(n for n in BENCHMARKS if n.startswith("gru-")) == TRAINED
    assert {BENCHMARKS[n].unit for n in TRAINED} == {"examples/s"}
    assert [n for n, b in BENCHMARKS.items() if b.unit == "examples/s" and n not in TRAINED] == []


def test_each_contrast_sets_two_ways_of_one_experiment_in_one_unit() -> None:
    """A ratio within one config means something only between the same work done two ways."""
    for contrast in CONTRASTS:
        faster_if, than = BENCHMARKS[contrast.faster_if], BENCHMARKS[contrast.than]
        assert faster_if.name != than.name, contrast
        assert faster_if.name.split("-")[0] == than.name.split("-")[0], contrast
        assert faster_if.unit == than.unit, contrast


def test_contrasts_have_names_of_their_own_and_say_their_seed() -> None:
    """Reports look a contrast's seed up by its name."""
    names = [c.name for c in CONTRASTS]
    assert len(set(names)) == len(names)
    assert all(c.seed.startswith("seed 0") for c in CONTRASTS)
    assert len({(c.faster_if, c.than) for c in CONTRASTS}) == len(CONTRASTS)
