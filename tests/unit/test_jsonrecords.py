"""Records read back from JSON: the keys a record's class has fields for are taken and any other
key is ignored (a later tfbuild may add keys); a frozen record turns JSON lists into tuples, so it
compares equal to the record built in code, and takes the fields it is given on top."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tfbuild.jsonrecords import frozen_record, record


@dataclass(frozen=True)
class Host:
    name: str
    flags: Sequence[Any] = ()
    cores: int = 1
    extra: dict[str, Any] = field(default_factory=dict)


def test_a_record_takes_the_keys_it_has_fields_for_and_ignores_the_others() -> None:
    data = json.loads('{"name": "box", "cores": 8, "added_by_a_later_tfbuild": true}')
    assert record(Host, data) == Host(name="box", cores=8)


def test_a_record_keeps_defaults_for_keys_the_document_lacks() -> None:
    host = record(Host, {"name": "box"})
    assert (host.flags, host.cores, host.extra) == ((), 1, {})


def test_a_plain_record_keeps_json_lists_as_lists() -> None:
    """Only frozen_record makes tuples: record hands values over as the document has them."""
    host = record(Host, json.loads('{"name": "box", "flags": ["avx2", "fma"]}'))
    assert host.flags == ["avx2", "fma"]
    assert host != Host("box", ("avx2", "fma"))


def test_a_document_missing_a_required_field_is_refused() -> None:
    with pytest.raises(TypeError, match="'name'"):
        record(Host, {"cores": 2, "unknown": 1})


def test_a_frozen_record_of_json_lists_equals_the_record_built_in_code() -> None:
    data = json.loads('{"name": "box", "flags": ["avx2", "fma"], "cores": 4, "x": [1]}')
    host = frozen_record(Host, data)
    assert host == Host("box", ("avx2", "fma"), 4)


def test_a_frozen_record_turns_only_the_outer_list_into_a_tuple() -> None:
    """Lists inside lists, and mappings, are left as the document has them."""
    host = frozen_record(Host, {"name": "box", "flags": [["a", "b"], "c"], "extra": {"k": [1]}})
    assert host.flags == (["a", "b"], "c")
    assert host.extra == {"k": [1]}


def test_given_fields_are_taken_over_the_documents_own() -> None:
    """A field given in code wins over the same key in the document (no 'got multiple values
    for keyword argument')."""
    host = frozen_record(Host, {"name": "from-json", "flags": ["sse3"]}, name="given", cores=16)
    assert host == Host("given", ("sse3",), 16)
