"""matrix.yaml text read as the loader reads it, for tests of its sections and readers."""

from __future__ import annotations

from pathlib import Path

import yaml

from tfbuild.config.yamlread import Ctx, compose


def reading(text: str) -> tuple[Ctx, yaml.Node]:
    """The text composed as m.yaml in /srv: its context (where problems are said) and node."""
    ctx = Ctx("m.yaml", Path("/srv"))
    node = compose(ctx, text)
    assert node is not None, ctx.problems
    return ctx, node


def said(ctx: Ctx) -> list[str]:
    """The problems found so far, as a person reads them."""
    return [str(p) for p in ctx.problems]
