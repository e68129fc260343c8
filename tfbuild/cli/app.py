"""The `tfbuild` command group: the commands register on it (one module per command family)."""

from __future__ import annotations

import click

from tfbuild import __version__
from tfbuild.cli.common import debug_option


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="tfbuild")
@debug_option
def cli() -> None:
    """Find which TensorFlow build, with which runtime settings, is fastest on this hardware.

    \b
    tfbuild run        the whole loop: build or fetch, inspect, bench, compare, report
    tfbuild detect     what this machine is: CPU flags, level, -march, cores, GPUs, Docker
    tfbuild matrix     the variants x tunings of matrix.yaml, and which can run here
    tfbuild build      build source variants in Docker (prebuilt ones are fetched)
    tfbuild fetch      download the prebuilt variants into the wheel store
    tfbuild inspect    what a wheel's machine code needs, and whether it runs on a CPU and GPU
    tfbuild verify     run a wheel on emulated CPU models (qemu-user): the ground truth
    tfbuild bench      measure every config with the fixed suite, in rounds, with an A/A control
    tfbuild compare    rank the configs with confidence intervals, tiers and a "use this" block
    tfbuild index      a PEP 503 index over the wheel store, for pip --index-url
    tfbuild ci github  the nightly GitHub Actions workflow for this matrix
    """
