"""The HTML report: one self-contained file (charts embedded as SVG) for a comparison."""

from __future__ import annotations

import base64
from collections.abc import Sequence

import jinja2

from tfbuild import __version__
from tfbuild.analysis.reported import HostReport
from tfbuild.machine.cpu import level_name
from tfbuild.machine.profile import HostProfile
from tfbuild.report.charts import samples_svg, speedup_svg
from tfbuild.report.comparison import (
    CONTRAST_HEADER,
    LOOK_HEADER,
    RANKING_HEADER,
    answer_lines,
    choice_lines,
    contrast_rows,
    contrast_title,
    header_lines,
    look_rows,
    ranking_rows,
)
from tfbuild.resources import data_path


def _embedded(svg: str) -> str:
    """An SVG document as an image's data URL payload (base64: no quoting to get wrong)."""
    return base64.b64encode(svg.encode()).decode("ascii")


def _host_rows(host: HostProfile) -> list[tuple[str, str]]:
    cpu, topo, system = host.cpu, host.topology, host.system
    flags = " ".join(name for name, have in cpu.tf_flags.items() if have)
    march = cpu.march.name if cpu.march else None
    rows = [
        ("CPU", f"{cpu.vendor_id} {cpu.model_name}"),
        ("x86-64 level / -march", f"{level_name(cpu.level)} / {march}"),
        ("TF-relevant flags", flags),
        (
            "cores",
            f"{topo.physical_cores} physical, {topo.logical_cpus} logical, "
            f"{topo.usable_cpus} usable",
        ),
    ]
    if host.memory and host.memory.total_bytes:
        rows.append(("memory", f"{host.memory.total_bytes / 2**30:.1f} GiB"))
    if system:
        rows += [
            ("OS", f"{system.os} ({system.kernel})"),
            ("glibc / Python", f"{system.glibc} / {system.python}"),
        ]
    return rows


def _manifest_rows(r: HostReport) -> list[dict[str, str]]:
    rows = []
    for name, variant in sorted(r.measured.variants.items()):
        manifest = variant.manifest
        smoke = variant.smoke or {}
        package = f"{manifest.name or ''} {manifest.version or ''}" if manifest else ""
        rows.append(
            {
                "variant": name,
                "source": manifest.source if manifest else variant.definition.get("source", ""),
                "package": package.strip(),
                "sha256": (manifest.sha256 if manifest else None) or "",
                "origin": (manifest.origin if manifest else None) or "",
                "tensorflow": f"{smoke.get('tensorflow', '')} {smoke.get('git_version') or ''}",
                "onednn": "unknown"
                if smoke.get("onednn") is None
                else "on"
                if smoke["onednn"]
                else "off",
            }
        )
    return rows


def compare_html(reports: Sequence[HostReport]) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_path("report"))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    hosts = []
    for r in reports:
        hosts.append(
            {
                "key": r.measured.host_key,
                "header": header_lines(r),
                "warnings": [*r.problems.warnings, *(f"replay: {p}" for p in r.course.replay)],
                "host_rows": _host_rows(r.measured.host),
                "ranking_header": RANKING_HEADER,
                "ranking": ranking_rows(r),
                "look_header": LOOK_HEADER,
                "looks": look_rows(r),
                "benchmarks": r.measured.benchmarks,
                "margins": r.method.margins,
                "cells": {
                    (e.config, b): r.figures.estimates.get((e.config, b))
                    for e in r.figures.ranking
                    for b in r.measured.benchmarks
                },
                "configs": [e.config for e in r.figures.ranking],
                "baseline": r.measured.baseline,
                "speedup_svg": _embedded(speedup_svg(r)),
                "samples_svg": _embedded(samples_svg(r)),
                "failures": r.problems.failures,
                "choice": choice_lines(r),
                "lock": (
                    r.choice.lock_text(", ".join(r.measured.sessions))
                    if r.choice is not None and r.choice.lock
                    else None
                ),
                "contrast_title": contrast_title(r) if r.figures.contrasts else "",
                "contrast_header": CONTRAST_HEADER,
                "contrasts": contrast_rows(r),
                "manifests": _manifest_rows(r),
            }
        )
    template = environment.get_template("compare.html.j2")
    return template.render(
        hosts=hosts,
        answer=answer_lines(reports),
        version=__version__,
        selection_level=", ".join(
            sorted({f"{1 - r.method.split['selection']:.1%}" for r in reports})
        ),
    )
