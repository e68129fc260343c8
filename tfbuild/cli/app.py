"""The `tfbuild` command group: the commands register on it (one module per command family)."""

from __future__ import annotations

import click

from tfbuild import __version__
from tfbuild.cli.options import Group, color_option, debug_option, keep_containers_option


@click.group(
    cls=Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100}
)
@click.version_option(__version__, "--version", prog_name="tfbuild")
@debug_option
@keep_containers_option
@color_option
def cli() -> None:
    """Find which TensorFlow build, with which runtime settings, is fastest on this hardware,
    and whether it runs here at all.

    `tfbuild run` is the whole loop (build or fetch, inspect, bench, compare, report); the
    commands below are its steps and tools. `tfbuild COMMAND --help` tells each one's options.
    """
