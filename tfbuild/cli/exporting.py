"""`tfbuild export`: a SavedModel workload written in the form a session measured it in
(litert), made and checked by the same code, for deployment without tfbuild."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import (
    FORM_CHECK_OPTIONS,
    MODEL_INPUT_OPTIONS,
    debug_option,
    json_option,
)
from tfbuild.cli.values import workload_request
from tfbuild.errors import UsageError

EXPORTED = ("litert", "litert-int8")
"""The forms written as a file of their own (optimized is made from the SavedModel as it
loads: the SavedModel is its file)."""


def _model_options(f: Any) -> Any:
    """--workload DIR and bench's options for what to call in it and what to feed it."""
    for decorator in reversed((*MODEL_INPUT_OPTIONS, *FORM_CHECK_OPTIONS)):
        f = decorator(f)
    return click.option(
        "--workload",
        type=click.Path(path_type=Path, exists=False),
        metavar="DIR",
        help="The SavedModel directory (as `bench --workload` measured it).",
    )(f)


@dataclass(frozen=True, kw_only=True)
class ExportSettings:
    params: dict[str, Any]
    form: str
    output: Path
    python: str
    threads: int | None
    as_json: bool


@cli.command("export")
@_model_options
@click.option(
    "--form",
    type=click.Choice(EXPORTED),
    default="litert",
    show_default=True,
    help="The form to write, a .tflite file LiteRT's interpreter runs: litert, the signature "
    "frozen and converted by the build's own TFLiteConverter (float32); litert-int8, the "
    "same quantized to int8 with the workload's inputs as representative data (loosen "
    "--atol/--rtol for it).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    metavar="FILE",
    help="Where to write it (through a temporary file beside it; nothing is written when the "
    "form fails its check).",
)
@click.option(
    "--python",
    default="python3",
    show_default=True,
    metavar="PATH",
    help="The Python whose TensorFlow makes the form (the runtime 'use this' installs: the "
    "build measured, with ai-edge-litert beside it for litert).",
)
@click.option(
    "--threads",
    type=click.IntRange(1, 4096),
    help="Threads LiteRT's interpreter runs the check with (default: every CPU).",
)
@json_option("what was written, with the check of its outputs")
@debug_option
def export_cmd(
    form: str,
    output: Path,
    python: str,
    threads: int | None,
    as_json: bool,
    **params: Any,
) -> None:
    """Write a SavedModel --workload in a model form, checked first.

    The form is made as `bench --forms` makes it, with the TensorFlow of --python; its outputs
    on the workload's inputs (generated with a fixed seed, or --inputs) are compared with the
    SavedModel signature's, and the file is written only when they agree within the
    tolerances. Exit 16 when the form cannot be made or does not agree, with the figures.
    """
    from tfbuild.bench.export import export
    from tfbuild.bench.workload import resolve

    settings = ExportSettings(
        params=params, form=form, output=output, python=python, threads=threads, as_json=as_json
    )
    request = workload_request(settings.params)
    if request is None:
        raise UsageError("export needs --workload DIR: the SavedModel to write in another form")
    done = export(resolve(request), settings.form, settings.python, output, settings.threads)
    check = done.check
    if settings.as_json:
        document = {
            "path": str(done.path),
            "form": done.form,
            "bytes": done.size,
            "sha256": done.sha256,
            "inputs": list(done.inputs),
            "check": {
                "ok": check.ok,
                "max_abs": check.max_abs,
                "max_rel": check.max_rel,
                "atol": check.atol,
                "rtol": check.rtol,
                "uniform": check.uniform,
                "tensorflow": check.tensorflow,
                "interpreter": check.interpreter,
                "interpreter_version": check.interpreter_version,
            },
        }
        click.echo(json.dumps(document, indent=2))
        return
    for line in export_lines(done.path, done.form, done.size, done.sha256, done.inputs, check):
        click.echo(line)


def export_lines(
    path: Path, form: str, size: int, sha256: str, inputs: tuple[str, ...], check: Any
) -> list[str]:
    """What `export` says: the file first, then its check and how to run it."""
    lines = [
        f"Wrote {path}: the {form} form, "
        + (f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"),
        f"sha256: {sha256}",
        f"Checked on the inputs {', '.join(inputs)}: max abs error {check.max_abs or 0:.2g}, "
        f"max rel error {check.max_rel or 0:.2g} against the as-given outputs (allowed "
        f"{check.atol:g} + {check.rtol:g} x |as-given|)",
    ]
    if check.uniform:
        lines.append(
            "The as-given outputs are all one value on these inputs: agreeing with them proves "
            "little (give --inputs that make them differ)"
        )
    interpreter = f"{check.interpreter} {check.interpreter_version or ''}".strip()
    lines.append(
        f"Made by TensorFlow {check.tensorflow}'s converter; run it with {interpreter}: "
        f"Interpreter(model_path={str(path)!r}, num_threads=N) from ai_edge_litert.interpreter"
    )
    return lines
