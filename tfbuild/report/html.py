"""The HTML report: one self-contained file (charts embedded as PNG) for a comparison."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import Any

import jinja2

from tfbuild import __version__
from tfbuild.analysis.estimates import OVERALL, SPLIT
from tfbuild.analysis.report import HostReport
from tfbuild.machine.cpu import level_name
from tfbuild.machine.profile import HostProfile
from tfbuild.report.comparison import (
    CONTRAST_HEADER,
    LOOK_HEADER,
    RANKING_HEADER,
    choice_lines,
    contrast_rows,
    contrast_title,
    header_lines,
    look_rows,
    ranking_rows,
)
from tfbuild.resources import data_path

COLOURS = {
    "faster": "#2e7d32",
    "slower": "#c62828",
    "equivalent": "#00838f",
    "undecided": "#f9a825",
    "baseline": "#1565c0",
}


def _png(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _grid(count: int) -> tuple[int, int]:
    columns = 2 if count > 1 else 1
    return math.ceil(count / columns), columns


def speedup_chart(r: HostReport) -> str:
    """One panel per benchmark (overall first): speed vs baseline with 95 % CI whiskers."""
    import matplotlib.pyplot as plt

    panels = [OVERALL, *r.benchmarks]
    configs = [e.config for e in r.ranking]
    rows, columns = _grid(len(panels))
    height = max(2.2, 0.32 * len(configs) + 1.0)
    figure, axes = plt.subplots(
        rows, columns, figsize=(6.2 * columns, height * rows), squeeze=False
    )
    for ax, bench in zip(axes.flat, panels, strict=False):
        for i, config in enumerate(configs):
            if config == r.baseline:
                ratio, low, high, verdict = 1.0, 1.0, 1.0, "baseline"
            elif (config, bench) in r.estimates:
                e = r.estimates[(config, bench)]
                ratio, low, high, verdict = e.ratio, e.low, e.high, e.verdict
            else:
                continue
            ax.barh(i, ratio - 1.0, left=1.0, color=COLOURS[verdict], height=0.6)
            if verdict == "baseline":
                ax.plot([1.0], [i], marker="D", color=COLOURS[verdict], markersize=5)
            else:
                ax.errorbar(
                    ratio,
                    i,
                    xerr=[[ratio - low], [high - ratio]],
                    fmt="none",
                    ecolor="black",
                    capsize=3,
                    linewidth=1,
                )
        band = r.margins[bench]
        ax.axvspan(1 / (1 + band), 1 + band, color="#eeeeee", zorder=0)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(configs)), configs, fontsize=8)
        ax.invert_yaxis()
        ax.set_title(f"{bench} (grey band: ±{band:.1%} margin)", fontsize=9)
        ax.set_xlabel("speed vs baseline (x)", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    figure.tight_layout()
    encoded = _png(figure)
    plt.close(figure)
    return encoded


def samples_chart(r: HostReport) -> str:
    """One panel per benchmark: the raw samples of every config, box plus points."""
    import matplotlib.pyplot as plt

    configs = [e.config for e in r.ranking]
    rows, columns = _grid(len(r.benchmarks))
    figure, axes = plt.subplots(rows, columns, figsize=(6.2 * columns, 2.9 * rows), squeeze=False)
    for ax, bench in zip(axes.flat, r.benchmarks, strict=False):
        data = [r.samples.get((c, bench), []) for c in configs]
        present = [i for i, d in enumerate(data) if d]
        if present:
            ax.boxplot(
                [data[i] for i in present],
                positions=present,
                widths=0.5,
                showfliers=False,
                medianprops={"color": "#1565c0"},
            )
            for i in present:
                xs = [i + 0.18 * ((k % 7) / 6 - 0.5) for k in range(len(data[i]))]
                ax.scatter(xs, data[i], s=5, color="#455a64", alpha=0.6, zorder=3)
        ax.set_xticks(range(len(configs)), configs, rotation=35, ha="right", fontsize=7)
        ax.set_title(f"{bench} ({r.units[bench]}, every sample)", fontsize=9)
        ax.tick_params(axis="y", labelsize=8)
    for ax in list(axes.flat)[len(r.benchmarks) :]:
        ax.set_visible(False)
    figure.tight_layout()
    encoded = _png(figure)
    plt.close(figure)
    return encoded


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
    for name, variant in sorted(r.variants.items()):
        manifest = variant.manifest or {}
        smoke = variant.smoke or {}
        rows.append(
            {
                "variant": name,
                "source": manifest.get("source") or variant.definition.get("source", ""),
                "package": f"{manifest.get('name', '')} {manifest.get('version', '')}".strip(),
                "sha256": manifest.get("sha256", ""),
                "origin": manifest.get("index_url")
                or manifest.get("path")
                or manifest.get("bazel_command")
                or "",
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
    import matplotlib

    matplotlib.use("Agg")
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(data_path("report"))),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    hosts = []
    for r in reports:
        hosts.append(
            {
                "key": r.host_key,
                "header": header_lines(r),
                "warnings": [*r.warnings, *(f"replay: {p}" for p in r.replay)],
                "host_rows": _host_rows(r.host),
                "ranking_header": RANKING_HEADER,
                "ranking": ranking_rows(r),
                "look_header": LOOK_HEADER,
                "looks": look_rows(r),
                "benchmarks": r.benchmarks,
                "margins": r.margins,
                "cells": {
                    (e.config, b): r.estimates.get((e.config, b))
                    for e in r.ranking
                    for b in r.benchmarks
                },
                "configs": [e.config for e in r.ranking],
                "baseline": r.baseline,
                "speedup_png": speedup_chart(r),
                "samples_png": samples_chart(r),
                "failures": r.failures,
                "choice": choice_lines(r),
                "contrast_title": contrast_title(r) if r.contrasts else "",
                "contrast_header": CONTRAST_HEADER,
                "contrasts": contrast_rows(r),
                "manifests": _manifest_rows(r),
            }
        )
    template = environment.get_template("compare.html.j2")
    return template.render(
        hosts=hosts, version=__version__, selection_level=f"{1 - SPLIT['selection']:.1%}"
    )
