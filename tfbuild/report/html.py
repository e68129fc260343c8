"""The HTML report: one self-contained file (charts embedded as PNG) for a comparison."""

from __future__ import annotations

import base64
import io
import math
from collections.abc import Sequence
from typing import Any

import jinja2

from tfbuild import __version__
from tfbuild.analysis.estimates import OVERALL
from tfbuild.analysis.host_report import HostReport
from tfbuild.machine.cpu import level_name
from tfbuild.machine.profile import HostProfile
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


CLIP = 1.25
"""A panel's axis reaches this factor beyond its outermost estimate (and margin band); a whisker
that reaches further is cut at the edge and marked with a triangle."""


def _panel_limits(r: HostReport, bench: str, configs: Sequence[str]) -> tuple[float, float]:
    band = r.margins[bench]
    ratios = [1.0 / (1.0 + band), 1.0 + band]
    ratios += [
        r.estimates[(c, bench)].ratio
        for c in configs
        if (c, bench) in r.estimates and r.estimates[(c, bench)].ratio > 0
    ]
    return min(ratios) / CLIP, max(ratios) * CLIP


TICKS = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0)


def _ratio_ticks(ax: Any, lo: float, hi: float) -> None:
    """Ratios as plain numbers (0.8, 1, 1.25), at most seven, 1 always among them."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ticks = [t for t in TICKS if lo <= t <= hi]
    while len(ticks) > 7:
        one = ticks.index(1.0)
        ticks = [t for i, t in enumerate(ticks) if (i - one) % 2 == 0]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.xaxis.set_minor_locator(NullLocator())


def speedup_figure(r: HostReport) -> Any:
    """One panel per benchmark (overall first): speed vs baseline with its simultaneous
    interval, on a log axis (a ratio and its inverse equally far from 1); each axis spans the
    estimates and the margin band, and a whisker beyond it is cut at the edge and marked."""
    import matplotlib.pyplot as plt

    panels = [OVERALL, *r.benchmarks]
    configs = [e.config for e in r.ranking]
    rows, columns = _grid(len(panels))
    height = max(2.2, 0.32 * len(configs) + 1.0)
    figure, axes = plt.subplots(
        rows, columns, figsize=(6.2 * columns, height * rows), squeeze=False
    )
    for ax, bench in zip(axes.flat, panels, strict=False):
        lo, hi = _panel_limits(r, bench, configs)
        clipped = False
        for i, config in enumerate(configs):
            if config == r.baseline:
                ax.plot([1.0], [i], marker="D", color=COLOURS["baseline"], markersize=5)
                continue
            e = r.estimates.get((config, bench))
            if e is None or not e.ratio > 0:
                continue
            ax.barh(i, e.ratio - 1.0, left=1.0, color=COLOURS[e.verdict], height=0.6)
            low = max(e.low, lo) if e.low > 0 else lo
            high = min(e.high, hi) if math.isfinite(e.high) else hi
            ax.errorbar(
                e.ratio,
                i,
                xerr=[[e.ratio - low], [high - e.ratio]],
                fmt="none",
                ecolor="black",
                capsize=3,
                linewidth=1,
            )
            for edge, reached, marker in ((lo, low <= lo, "<"), (hi, high >= hi, ">")):
                if reached:
                    clipped = True
                    ax.plot([edge], [i], marker=marker, color="black", markersize=6, clip_on=False)
        band = r.margins[bench]
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        _ratio_ticks(ax, lo, hi)
        ax.axvspan(1 / (1 + band), 1 + band, color="#eeeeee", zorder=0)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_yticks(range(len(configs)), configs, fontsize=8)
        ax.invert_yaxis()
        cut = "; triangles: interval cut at the edge" if clipped else ""
        ax.set_title(f"{bench} (grey band: ±{band:.1%} margin{cut})", fontsize=9)
        ax.set_xlabel("speed vs baseline (x, log scale)", fontsize=8)
        ax.tick_params(axis="x", labelsize=8)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    figure.tight_layout()
    return figure


def speedup_chart(r: HostReport) -> str:
    import matplotlib.pyplot as plt

    figure = speedup_figure(r)
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
        if any(v > 0 for d in data for v in d):
            ax.set_yscale("log")
        ax.set_xticks(range(len(configs)), configs, rotation=35, ha="right", fontsize=7)
        ax.set_title(f"{bench} ({r.units[bench]}, every sample, log scale)", fontsize=9)
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
                "lock": (
                    r.choice.lock_text(", ".join(r.sessions))
                    if r.choice is not None and r.choice.lock
                    else None
                ),
                "contrast_title": contrast_title(r) if r.contrasts else "",
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
        selection_level=", ".join(sorted({f"{1 - r.split['selection']:.1%}" for r in reports})),
    )
