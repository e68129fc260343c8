"""Reading YAML nodes with their positions: every problem becomes FILE:LINE:COL: what (got X;
expected Y). Values are read from the scalar text as written, so YAML 1.1 surprises (2.20 read
as the float 2.2, off read as false) cannot happen."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import yaml

from tfbuild.config.values import did_you_mean
from tfbuild.errors import Problem

T = TypeVar("T")


@dataclass
class Ctx:
    file: str
    base_dir: Path
    problems: list[Problem] = field(default_factory=list)
    notes: dict[str, str] = field(default_factory=dict)
    """variant name -> what reading it did that a person should know, though nothing is
    wrong."""

    def error(self, node: yaml.Node, message: str) -> None:
        mark = node.start_mark
        self.problems.append(Problem(self.file, mark.line + 1, mark.column + 1, message))


def show(node: yaml.Node) -> str:
    """How a value is shown in 'got X': the scalar as written, or the kind of node."""
    if isinstance(node, yaml.ScalarNode):
        text = node.value if len(node.value) <= 80 else node.value[:77] + "..."
        return repr(text)
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


class Keys:
    """A YAML mapping with unique string keys; remembers which keys were read."""

    def __init__(self, ctx: Ctx, node: yaml.MappingNode, where: str) -> None:
        self.ctx, self.node, self.where = ctx, node, where
        self.items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                ctx.error(key, f"{where}: keys must be plain names (got {show(key)})")
                continue
            if key.value in self.items:
                first = self.items[key.value][0].start_mark.line + 1
                ctx.error(
                    key, f"{where}: duplicate key {key.value!r} (first given on line {first})"
                )
                continue
            self.items[key.value] = (key, value)

    def check_keys(self, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
        allowed = list(allowed)
        for name, (key, _) in self.items.items():
            if name == "<<":
                self.ctx.error(
                    key,
                    f"{self.where}: YAML merge keys (<<) are not supported; "
                    "put shared settings under defaults",
                )
            elif name not in allowed:
                self.ctx.error(
                    key,
                    f"{self.where}: unknown key (got {name!r}; expected one of "
                    f"{', '.join(allowed)})" + did_you_mean(name, allowed),
                )
        for name in required:
            if name not in self.items:
                self.ctx.error(self.node, f"{self.where}: missing required key {name!r}")

    def get(self, name: str) -> yaml.Node | None:
        item = self.items.get(name)
        if item is None or is_null(item[1]):
            return None
        return item[1]

    def path(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name


def is_null(node: yaml.Node) -> bool:
    return (
        isinstance(node, yaml.ScalarNode)
        and node.style is None
        and node.value in ("", "~", "null", "Null", "NULL")
    )


def as_mapping(ctx: Ctx, node: yaml.Node, where: str) -> Keys | None:
    if not isinstance(node, yaml.MappingNode):
        ctx.error(node, f"{where}: expected a mapping of keys to values (got {show(node)})")
        return None
    return Keys(ctx, node, where)


def scalar(ctx: Ctx, node: yaml.Node, where: str, expected: str) -> str | None:
    if not isinstance(node, yaml.ScalarNode):
        ctx.error(node, f"{where}: expected {expected} (got {show(node)})")
        return None
    return str(node.value)


def matched(
    ctx: Ctx, node: yaml.Node, where: str, pattern: re.Pattern[str], expected: str
) -> str | None:
    value = scalar(ctx, node, where, expected)
    if value is None:
        return None
    if not pattern.fullmatch(value):
        ctx.error(node, f"{where}: not valid (got {show(node)}; expected {expected})")
        return None
    return value


def choice(ctx: Ctx, node: yaml.Node, where: str, choices: Sequence[str], kind: str) -> str | None:
    value = scalar(ctx, node, where, f"one of {', '.join(choices)}")
    if value is None:
        return None
    if value not in choices:
        ctx.error(
            node,
            f"{where}: unknown {kind} (got {value!r}; expected one of {', '.join(choices)})"
            + did_you_mean(value, choices),
        )
        return None
    return value


def integer(ctx: Ctx, node: yaml.Node, where: str, low: int, high: int) -> int | None:
    expected = f"a whole number from {low} to {high}"
    value = scalar(ctx, node, where, expected)
    if value is None:
        return None
    if not re.fullmatch(r"\d{1,9}", value) or not low <= int(value) <= high:
        ctx.error(node, f"{where}: out of range (got {show(node)}; expected {expected})")
        return None
    return int(value)


def boolean(ctx: Ctx, node: yaml.Node, where: str) -> bool | None:
    value = scalar(ctx, node, where, "true or false")
    if value not in ("true", "false"):
        if value is not None:
            ctx.error(node, f"{where}: not a boolean (got {show(node)}; expected true or false)")
        return None
    return value == "true"


def listed(
    ctx: Ctx, node: yaml.Node, where: str, item: Callable[[yaml.Node, str], T | None]
) -> tuple[T, ...]:
    """A list of items; a single scalar is accepted as a list of one."""
    nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if isinstance(node, yaml.MappingNode):
        ctx.error(node, f"{where}: expected a list (got a mapping)")
        return ()
    values = []
    for i, child in enumerate(nodes):
        value = item(child, f"{where}[{i}]")
        if value is not None:
            values.append(value)
    return tuple(values)


def _plain(exc: yaml.MarkedYAMLError, text: str) -> str:
    """PyYAML's complaint in the words of the mistakes people make: indentation that does not
    line up, an unclosed bracket, a tab, an unquoted ': '; anything else as PyYAML says it."""
    problem, context = str(exc.problem or ""), str(exc.context or "")
    mark, opened = exc.problem_mark, exc.context_mark
    lines = text.splitlines()
    if "expected <block end>" in problem and mark is not None and opened is not None:
        here = lines[mark.line] if mark.line < len(lines) else ""
        word = here.strip().split(":", 1)[0]
        above = [(n, t) for n, t in enumerate(lines[: mark.line]) if t.strip()]
        start = lines[opened.line] if opened.line < len(lines) else ""
        if mark.column == opened.column and start.lstrip().startswith("-"):
            return (
                f"{word!r} is indented like the list item on line {opened.line + 1} but does "
                f"not start with '- ': indent it by {opened.column + 2} spaces to belong to "
                "that item, or start a new item"
            )
        if above:
            n, prev = above[-1]
            key = prev.strip().lstrip("- ").split(":", 1)[0]
            indent = len(prev) - len(prev.lstrip(" -"))
            return (
                f"{word!r} is indented by {mark.column} spaces and {key!r} on line {n + 1} by "
                f"{indent}: the keys of one mapping line up; indent it like the keys it belongs "
                "with"
            )
    if "flow sequence" in context or "flow mapping" in context:
        bracket = "[" if "sequence" in context else "{"
        where = f" on line {opened.line + 1}" if opened is not None else ""
        closing = "]" if bracket == "[" else "}"
        return f"the {bracket!r}{where} is not closed: expected ',' or {closing!r}"
    if "'\\t'" in problem or "\\t" in problem:
        return "a tab character: YAML indents with spaces only"
    if "mapping values are not allowed" in problem:
        return "a ': ' inside a value: quote the value (\"...\") or start a nested block"
    return " ".join(part for part in (context, problem) if part)


def compose(ctx: Ctx, text: str) -> yaml.Node | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        ctx.problems.append(Problem(ctx.file, line, col, f"not valid YAML: {_plain(exc, text)}"))
        return None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        ctx.problems.append(
            Problem(
                ctx.file,
                line,
                column,
                f"not valid YAML: character {exc.character!r} is not allowed in YAML text",
            )
        )
        return None
    except yaml.YAMLError as exc:
        ctx.problems.append(Problem(ctx.file, 1, 1, f"not valid YAML: {exc}"))
        return None
    except RecursionError:
        ctx.problems.append(Problem(ctx.file, 1, 1, "not valid YAML: nested too deeply"))
        return None
    return node
