"""A results document checked against the one schema file, data/schemas/results.schema.json
(the current version's), and for what a schema cannot say: numbers that are not finite, and
configs named that the document does not hold. Every problem is named by its place and value,
in the words `tfbuild compare` prints.

The schema declares JSON Schema 2020-12 and uses only keywords that mean the same in draft 7,
which the validator (fastjsonschema, compiled once per process) implements; a test keeps the
schema to those keywords."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from tfbuild.resources import data_path

SCHEMA_FILE = "schemas/results.schema.json"

KINDS = {"object": "an object", "array": "a list", "string": "a string", "number": "a number",
         "integer": "a whole number", "boolean": "true or false", "null": "null"}  # fmt: skip


@functools.cache
def _validator() -> Callable[[Any], Any]:
    import fastjsonschema

    validate: Callable[[Any], Any] = fastjsonschema.compile(
        json.loads(data_path(SCHEMA_FILE).read_text(encoding="utf-8"))
    )
    return validate


def kind(value: Any) -> str:
    """A JSON value as a person names it in a message: a container by its kind, a scalar as
    written."""
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else (
        repr(value) if isinstance(value, (int, float, str, bool)) or value is None
        else type(value).__name__
    )  # fmt: skip


def place(path: list[str]) -> str:
    """`['data', 'runs', '3', 'round']` -> `runs[3].round`."""
    said = ""
    for part in path[1:]:
        said += f"[{part}]" if part.isdigit() else f".{part}" if said else part
    return said


def _broken(rule: str | None, limit: Any, value: Any, message: str) -> str:
    """What is wrong with a value, by the rule it breaks."""
    if rule == "type":
        wanted = [limit] if isinstance(limit, str) else list(limit)
        return f"{kind(value)} where {' or '.join(KINDS.get(w, w) for w in wanted)} belongs"
    if rule == "exclusiveMinimum":
        return f"{kind(value)} is not " + ("a positive number" if limit == 0 else f"above {limit}")
    if rule == "minimum":
        return f"{kind(value)} is below {limit}"
    if rule == "exclusiveMaximum":
        return f"{kind(value)} is not below {limit}"
    if rule in ("enum", "const"):
        accepted = ", ".join(repr(a) for a in ([limit] if rule == "const" else limit))
        return f"{kind(value)} is not one of {accepted}"
    if rule == "minItems":
        return f"{kind(value)} has fewer than {limit} item(s)"
    if rule == "minLength":
        return f"{kind(value)} is shorter than {limit} character(s)"
    if rule == "pattern":
        return f"{kind(value)} does not match {limit}"
    if rule == "additionalProperties":
        return f"{kind(value)} holds keys this version does not know"
    return f"{kind(value)} {message.partition(' ')[2]}"  # the validator's words, its own name cut


def problem(document: Mapping[str, Any]) -> str | None:
    """The first thing wrong with a current-version results document (with its place), or None."""
    from fastjsonschema import JsonSchemaValueException

    try:
        _validator()(document)
    except JsonSchemaValueException as exc:
        where = place(exc.path)
        if exc.rule == "required" and isinstance(exc.value, dict):
            missing = next(k for k in exc.rule_definition if k not in exc.value)
            return f"{where + '.' if where else ''}{missing}: missing"
        return f"{where or 'the document'}: " + _broken(
            exc.rule, exc.rule_definition, exc.value, exc.message
        )
    return _not_finite(document) or references(document)


def _numbers(value: Any, where: str) -> Iterator[tuple[str, float]]:
    if isinstance(value, float):
        yield where, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _numbers(item, f"{where}[{i}]")


def _not_finite(document: Mapping[str, Any]) -> str | None:
    """JSON as Python writes it may hold NaN and Infinity, which no schema keyword refuses."""
    for where, number in _numbers(document, ""):
        if not math.isfinite(number):
            return f"{where}: {number!r} is not a finite number"
    return None


def references(document: Mapping[str, Any]) -> str | None:
    """A config the baseline or a run names that the document's configs do not hold (the
    document's shape already checked)."""
    keys = {config["key"] for config in document["configs"]}
    baseline = document["baseline"]
    for name in ("config", "aa_config"):
        named = baseline.get(name)
        if (named is not None or name == "config") and named not in keys:
            return f"baseline.{name}: {named!r} is not among configs"
    for i, run in enumerate(document["runs"]):
        if run.get("config") not in keys:
            return f"runs[{i}].config: {run.get('config')!r} is not among configs"
    return None
