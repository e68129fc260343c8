"""Rendering recipes: the Jinja2 environment over templates/ (a templates/ folder next to
matrix.yaml wins over the packaged one, file by file)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import jinja2

from tfbuild.build.recipe import Recipe
from tfbuild.files import digest
from tfbuild.resources import data_path
from tfbuild.wording import printable

DOCKERFILE = "tensorflow.Dockerfile.j2"
BUILD_SCRIPT = "tfbuild-build.sh.j2"
PREFLIGHT = "tfbuild-preflight"
RUNTIME_INSTALL = "runtime-install.sh.j2"


def template_dirs(matrix_path: Path | None) -> list[Path]:
    """User templates first (templates/ beside the matrix file), then the packaged ones."""
    dirs = []
    if matrix_path is not None:
        local = matrix_path.resolve().parent / "templates"
        if local.is_dir():
            dirs.append(local)
    packaged = data_path("templates")
    if packaged not in dirs:
        dirs.append(packaged)
    return dirs


def environment(dirs: list[Path]) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([str(d) for d in dirs]),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["sh"] = lambda value: shlex.quote(str(value))
    env.filters["comment"] = printable
    return env


@dataclass(frozen=True)
class Rendered:
    dockerfile: str
    build_script: str
    preflight: str
    sources: dict[str, str]
    """Template name -> the file it was loaded from, for the manifest."""

    @property
    def key(self) -> str:
        """Digest of what the recipe makes the engine do (not of the engine's state)."""
        return digest(self.dockerfile, self.build_script, self.preflight)


def render(recipe: Recipe, dirs: list[Path]) -> Rendered:
    env = environment(dirs)
    context = recipe.template_context()
    files = {}
    sources = {}
    for name in (DOCKERFILE, BUILD_SCRIPT, PREFLIGHT):
        template = env.get_template(name)
        sources[name] = str(template.filename)
        files[name] = template.render(context) if name != PREFLIGHT else _raw(template)
    return Rendered(files[DOCKERFILE], files[BUILD_SCRIPT], files[PREFLIGHT], sources)


def _raw(template: jinja2.Template) -> str:
    assert template.filename is not None
    return Path(template.filename).read_text(encoding="utf-8")


def render_runtime(dirs: list[Path], context: Mapping[str, object]) -> str:
    return environment(dirs).get_template(RUNTIME_INSTALL).render(context)
