"""The reader checks a results document against the schema file, with the validator it runs
(draft 7's semantics), and agrees with a validator of the draft the file declares (2020-12)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tfbuild.resources import data_path
from tfbuild.results import schema
from tfbuild.results.codec import load, to_json
from tfbuild.results.documents import read_json
from tfbuild.results.model import READABLE, SCHEMA

FIXTURES = Path(__file__).parents[2] / "fixtures" / "results"
SCHEMA_DOCUMENT = json.loads(data_path(schema.SCHEMA_FILE).read_text())
DECLARED = jsonschema.Draft202012Validator(SCHEMA_DOCUMENT)

SAME_IN_BOTH = {
    "$schema", "$id", "$defs", "$ref", "title", "description", "type", "properties", "required",
    "additionalProperties", "items", "minItems", "enum", "const", "minimum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "pattern", "anyOf", "oneOf", "if", "then", "else",
}  # fmt: skip
"""Keywords that mean the same in JSON Schema draft 7 and 2020-12. Not here, for example:
`items` as a list (tuples; 2020-12 says `prefixItems`), `unevaluatedProperties`,
`dependentRequired`, `$dynamicRef`."""

NAMES = {"properties", "$defs", "patternProperties"}
"""Keywords whose object's keys are names, not keywords."""


def keywords(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            found.add(key)
            if key in NAMES:
                for sub in value.values():
                    found |= keywords(sub)
            elif key not in ("enum", "const", "required"):
                found |= keywords(value)
            if key == "items" and isinstance(value, list):
                found.add("items as a list")
    elif isinstance(node, list):
        for item in node:
            found |= keywords(item)
    return found


def test_the_schema_says_only_what_both_drafts_read_alike() -> None:
    assert SCHEMA_DOCUMENT["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA_DOCUMENT)
    assert keywords(SCHEMA_DOCUMENT) <= SAME_IN_BOTH, keywords(SCHEMA_DOCUMENT) - SAME_IN_BOTH


def committed() -> list[tuple[str, dict[str, Any]]]:
    """Every committed results file as the current version holds it: a version-1 file read
    and written again."""
    found = []
    for path in sorted(FIXTURES.glob("*.json*")):
        if path.name.startswith("calibration-"):
            continue
        document = read_json(path, *READABLE)
        if document["schema"] != SCHEMA:
            document = json.loads(json.dumps(to_json(load(path))))
        found.append((path.name, document))
    return found


def test_every_committed_session_is_valid_to_both_validators() -> None:
    documents = committed()
    assert len(documents) >= 8 and any(n.startswith("session-2x2") for n, _ in documents)
    for name, document in documents:
        assert [e.message for e in DECLARED.iter_errors(document)] == [], name
        assert schema.problem(document) is None, name


SMALL = read_json(FIXTURES / "aa-run.json", SCHEMA)
SMALL = {**SMALL, "runs": SMALL["runs"][:4], "looks": SMALL["looks"][:1]}


def places(node: Any, where: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document (the path to each value but the document itself)."""
    found = [where] if where else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += places(value, (*where, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += places(value, (*where, i))
    return found


PLACES = places(SMALL)
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2.0, 2.0), st.text(max_size=3),
    st.just([]), st.just({}), st.just("__delete__"),
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(at=st.sampled_from(PLACES), value=VALUES)
def test_the_reader_and_the_declared_draft_agree_on_a_damaged_document(
    at: tuple[Any, ...], value: Any
) -> None:
    """One value of a real session replaced (or its key deleted): the reader refuses the
    document exactly when a 2020-12 validator finds it invalid."""
    document = copy.deepcopy(SMALL)
    parent = document
    for step in at[:-1]:
        parent = parent[step]
    if value == "__delete__":
        del parent[at[-1]]
    else:
        parent[at[-1]] = value
    declared = next(DECLARED.iter_errors(document), None)
    read = schema.problem(document)
    if declared is None:
        assert read is None or "is not among configs" in read, (at, value, read)
    else:
        assert read is not None, (at, value, declared.message)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda d: d.pop("host"), "host: missing"),
        (lambda d: d["runs"][1]["benchmarks"]["gru-keras"].pop("samples"),
         "runs[1].benchmarks.gru-keras.samples: missing"),
        (lambda d: d["runs"][0].__setitem__("round", -1), "runs[0].round: -1 is below 0"),
        (lambda d: d["runs"][2].__setitem__("status", "fine"),
         "runs[2].status: 'fine' is not one of "),
        (lambda d: d["session"]["design"].__setitem__("kind", "adaptive"),
         "session.design.kind: 'adaptive' is not one of 'fixed', 'sequential'"),
        (lambda d: d.__setitem__("configs", {}), "configs: an object where a list belongs"),
        (lambda d: d["runs"][3]["benchmarks"]["gru-keras"]["samples"][0].__setitem__(
            "wall_s", float("inf")),
         "runs[3].benchmarks.gru-keras.samples[0].wall_s: inf is not a finite number"),
        (lambda d: d["baseline"].__setitem__("config", "ghost:default"),
         "baseline.config: 'ghost:default' is not among configs"),
        (lambda d: d["suite"].__setitem__("processes", "spawned"),
         "suite.processes: 'spawned' is not one of 'fresh', 'forked'"),
    ],
)  # fmt: skip
def test_a_problem_is_named_by_its_place_and_value(edit: Any, said: str) -> None:
    document = copy.deepcopy(SMALL)
    edit(document)
    problem = schema.problem(document)
    assert problem is not None and problem.startswith(said), problem


def test_the_schema_names_every_stage_a_variant_fails_in() -> None:
    """The stages are one list (results.model.Stage, which the code that records a failure is
    typed with); the schema's is the same, in the same order. So are the ways a session starts
    its benchmark processes (results.model.ProcessPath)."""
    from tfbuild.results.model import PROCESS_PATHS, STAGES

    stage = SCHEMA_DOCUMENT["properties"]["failures"]["items"]["properties"]["stage"]
    assert tuple(stage["enum"]) == STAGES
    processes = SCHEMA_DOCUMENT["properties"]["suite"]["properties"]["processes"]
    assert tuple(processes["enum"]) == PROCESS_PATHS
    assert "processes" not in SCHEMA_DOCUMENT["properties"]["suite"]["required"]
