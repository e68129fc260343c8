"""Reading YAML nodes with their positions: each reader takes a value from the text as written
(so 007 is 7 and True is no boolean), and each refusal is a problem at FILE:LINE:COL saying where
in the matrix, what was got and what is accepted; YAML that does not parse is said in the words of
the mistake (an unclosed bracket, a tab, a key indented off its mapping, an unquoted ': ')."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from support.yamltext import reading as read
from support.yamltext import said

from tfbuild.config.yamlread import (
    Ctx,
    Keys,
    as_mapping,
    boolean,
    choice,
    compose,
    integer,
    is_null,
    listed,
    matched,
    scalar,
    show,
)


def not_yaml(text: str) -> list[str]:
    ctx = Ctx("m.yaml", Path("/srv"))
    assert compose(ctx, text) is None
    return said(ctx)


def test_a_problem_points_at_the_node_counting_lines_and_columns_from_one() -> None:
    ctx, node = read("variants:\n  - name: a\n")
    assert isinstance(node, yaml.MappingNode)
    item = node.value[0][1].value[0]
    ctx.error(item, "variants[0]: something")
    assert said(ctx) == ["m.yaml:2:5: variants[0]: something"]


def test_a_value_is_shown_as_written_or_by_its_kind() -> None:
    assert show(read("'it''s'")[1]) == '"it\'s"'
    assert show(read("2.20")[1]) == "'2.20'"
    assert show(read("x" * 100)[1]) == repr("x" * 77 + "...")
    assert show(read("[1]")[1]) == "a list"
    assert show(read("{a: 1}")[1]) == "a mapping"


def test_a_mapping_refuses_duplicate_keys_and_keys_that_are_not_names() -> None:
    ctx, node = read("a: 1\nb: 2\na: 3\n? [x]\n: 4\n")
    assert isinstance(node, yaml.MappingNode)
    keys = Keys(ctx, node, "defaults.bazel")
    assert said(ctx) == [
        "m.yaml:3:1: defaults.bazel: duplicate key 'a' (first given on line 1)",
        "m.yaml:4:3: defaults.bazel: keys must be plain names (got a list)",
    ]
    value = keys.get("a")
    assert value is not None and value.value == "1"  # the first one given


def test_unknown_merge_and_missing_keys_are_each_said() -> None:
    ctx, node = read("b: 2\n<<: {c: 1}\nnetwrk: x\n")
    assert isinstance(node, yaml.MappingNode)
    Keys(ctx, node, "defaults.bazel").check_keys(["b", "network"], required=["cache", "b"])
    assert said(ctx) == [
        "m.yaml:2:1: defaults.bazel: YAML merge keys (<<) are not supported; put shared settings "
        "under defaults",
        "m.yaml:3:1: defaults.bazel: unknown key (got 'netwrk'; expected one of b, network); "
        "did you mean 'network'?",
        "m.yaml:1:1: defaults.bazel: missing required key 'cache'",
    ]


def test_a_null_value_reads_as_absent_but_a_quoted_one_does_not() -> None:
    ctx, node = read("a: ~\nb: null\nc:\nd: NULL\ne: 'null'\nf: \"\"\n")
    assert isinstance(node, yaml.MappingNode)
    keys = Keys(ctx, node, "")
    assert [name for name in "abcdefz" if keys.get(name) is None] == ["a", "b", "c", "d", "z"]
    quoted = keys.get("e")
    assert quoted is not None and quoted.value == "null" and not is_null(quoted)


def test_a_keys_path_is_dotted_below_where_it_is() -> None:
    ctx, node = read("a: 1\n")
    assert isinstance(node, yaml.MappingNode)
    assert Keys(ctx, node, "suite.presets.quick").path("budget") == "suite.presets.quick.budget"
    assert Keys(ctx, node, "").path("variants") == "variants"


def test_a_list_where_a_mapping_belongs_is_refused() -> None:
    ctx, node = read("- a\n")
    assert as_mapping(ctx, node, "defaults") is None
    assert said(ctx) == ["m.yaml:1:1: defaults: expected a mapping of keys to values (got a list)"]


def test_a_scalar_is_its_text_and_a_list_is_no_scalar() -> None:
    ctx, node = read("3.10")
    assert scalar(ctx, node, "python", "a version") == "3.10"  # not the float 3.1
    ctx, node = read("[3.10]")
    assert scalar(ctx, node, "python", "a version like 3.11") is None
    assert said(ctx) == ["m.yaml:1:1: python: expected a version like 3.11 (got a list)"]


def test_a_value_must_match_its_pattern_in_full() -> None:
    ctx, node = read("'stock; reboot'")
    assert matched(ctx, node, "variants[0].name", re.compile("[a-z]+"), "a name") is None
    assert said(ctx) == ["m.yaml:1:1: variants[0].name: not valid (got 'stock; reboot'; "
                         "expected a name)"]  # fmt: skip
    ctx, node = read("stock")
    assert matched(ctx, node, "name", re.compile("[a-z]+"), "a name") == "stock"


def test_a_choice_outside_the_choices_says_them_and_the_closest() -> None:
    ctx, node = read("hots")
    assert choice(ctx, node, "defaults.bazel.network", ["bridge", "host"], "network") is None
    assert said(ctx) == [
        "m.yaml:1:1: defaults.bazel.network: unknown network (got 'hots'; expected one of "
        "bridge, host); did you mean 'host'?"
    ]
    ctx, node = read("host")
    assert choice(ctx, node, "network", ["bridge", "host"], "network") == "host"


def test_a_whole_number_is_digits_within_its_range() -> None:
    ctx, node = read("007")
    assert integer(ctx, node, "rounds", 1, 10) == 7
    for text in ("-1", "1e3", "2.0", "0x10"):
        ctx, node = read(text)
        assert integer(ctx, node, "rounds", 1, 10**10) is None, text
    ctx, node = read("11")
    assert integer(ctx, node, "suite.rounds", 1, 10) is None
    assert said(ctx) == [
        "m.yaml:1:1: suite.rounds: out of range (got '11'; expected a whole number from 1 to 10)"
    ]


def test_ten_digits_are_refused_whatever_the_range() -> None:
    ctx, node = read("1234567890")
    assert integer(ctx, node, "n", 1, 10**10) is None
    assert said(ctx) == [
        "m.yaml:1:1: n: out of range (got '1234567890'; expected a whole number from 1 to "
        "10000000000)"
    ]


def test_a_boolean_is_true_or_false_in_lowercase_only() -> None:
    assert boolean(*read("true"), "disk_cache") is True
    assert boolean(*read("false"), "disk_cache") is False
    for text in ("True", "yes", "on", "1"):
        ctx, node = read(text)
        assert boolean(ctx, node, "disk_cache") is None
        assert said(ctx) == [
            f"m.yaml:1:1: disk_cache: not a boolean (got {text!r}; expected true or false)"
        ]


def test_a_mapping_where_a_boolean_belongs_is_said_once() -> None:
    ctx, node = read("{a: 1}")
    assert boolean(ctx, node, "disk_cache") is None
    assert said(ctx) == ["m.yaml:1:1: disk_cache: expected true or false (got a mapping)"]


def test_a_single_value_is_a_list_of_one_and_refused_items_are_left_out() -> None:
    ctx, node = read("avx2")
    assert listed(ctx, node, "cpu_flags", lambda c, w: (scalar(ctx, c, w, "x"), w)) == (
        ("avx2", "cpu_flags[0]"),
    )
    ctx, node = read("[avx2, Bad, fma]")
    found = listed(
        ctx, node, "cpu_flags", lambda c, w: matched(ctx, c, w, re.compile("[a-z0-9]+"), "a flag")
    )
    assert found == ("avx2", "fma")
    assert said(ctx) == ["m.yaml:1:8: cpu_flags[1]: not valid (got 'Bad'; expected a flag)"]


def test_a_mapping_where_a_list_belongs_is_refused() -> None:
    ctx, node = read("{a: 1}")
    assert listed(ctx, node, "configs", lambda c, w: "never called") == ()
    assert said(ctx) == ["m.yaml:1:1: configs: expected a list (got a mapping)"]


def test_an_empty_text_composes_to_nothing_without_a_problem() -> None:
    ctx = Ctx("m.yaml", Path("/srv"))
    assert compose(ctx, "") is None
    assert ctx.problems == []


def test_an_unclosed_bracket_is_said_with_the_line_it_opened_on() -> None:
    assert not_yaml("a: 1\nvariants: [a, b\n") == [
        "m.yaml:3:1: not valid YAML: the '[' on line 2 is not closed: expected ',' or ']'"
    ]
    assert not_yaml("variants: {a: 1\n") == [
        "m.yaml:2:1: not valid YAML: the '{' on line 1 is not closed: expected ',' or '}'"
    ]


def test_a_tab_is_said_to_be_no_indentation() -> None:
    assert not_yaml("a:\n\t- b\n") == [
        "m.yaml:2:1: not valid YAML: a tab character: YAML indents with spaces only"
    ]


def test_an_unquoted_colon_in_a_value_says_to_quote_it() -> None:
    assert not_yaml("key: a: b\n") == [
        "m.yaml:1:7: not valid YAML: a ': ' inside a value: quote the value (\"...\") or start a "
        "nested block"
    ]


def test_a_key_indented_off_its_mapping_says_the_indentation_of_both() -> None:
    text = "variants:\n  - name: a\n    source: pypi\n   requirement: x\n"
    assert not_yaml(text) == [
        "m.yaml:4:4: not valid YAML: 'requirement' is indented by 3 spaces and 'source' on "
        "line 3 by 4: the keys of one mapping line up; indent it like the keys it belongs with"
    ]


def test_a_key_indented_like_its_list_item_says_how_to_join_the_item() -> None:
    assert not_yaml("variants:\n  - name: a\n  source: pypi\n") == [
        "m.yaml:3:3: not valid YAML: 'source' is indented like the list item on line 2 but does "
        "not start with '- ': indent it by 4 spaces to belong to that item, or start a new item"
    ]


def test_a_control_character_is_placed_at_its_line_and_column() -> None:
    (problem,) = not_yaml("a: 1\nb: x\x07y\n")
    assert problem.startswith("m.yaml:2:5: not valid YAML: character ")
    assert problem.endswith(" is not allowed in YAML text")


def test_other_yaml_errors_are_said_as_pyyaml_says_them_at_their_position() -> None:
    assert not_yaml("a: *nope\n") == ["m.yaml:1:4: not valid YAML: found undefined alias 'nope'"]


def test_nesting_too_deep_for_the_parser_is_a_problem_not_a_crash() -> None:
    assert not_yaml("[" * 700 + "]" * 700) == ["m.yaml:1:1: not valid YAML: nested too deeply"]
