"""Recipes as `tfbuild build` makes them: from the plan of a variant for the machine it is
built for."""

from __future__ import annotations

import glob
from pathlib import Path

from tfbuild.build.recipe import Recipe, make_recipe
from tfbuild.config.model import Matrix
from tfbuild.machine.profile import HostProfile
from tfbuild.plan.make import make_plan


def recipe_for(
    matrix: Matrix,
    name: str,
    host: HostProfile,
    tf_source: Path | None = None,
    ca_bundle: bool = False,
) -> Recipe:
    """The recipe of the matrix variant `name`, planned for `host`."""
    variant = matrix.variant(name)
    plan = make_plan(matrix, host, only=[glob.escape(variant.name)])
    return make_recipe(plan.planned(variant.name), matrix.defaults, host, tf_source, ca_bundle)
