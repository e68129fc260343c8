"""Terminal views: rich tables for host profiles, plans, bench sessions and comparisons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from tfbuild.bench.summary import Summary
from tfbuild.config.settings import Setting
from tfbuild.machine import cpu
from tfbuild.machine.profile import HostProfile
from tfbuild.plan.make import Plan
from tfbuild.report.comparison import LATENCY_UNIT, as_read


def _gib(value: int | None) -> str:
    return f"{value / 2**30:.1f} GiB" if value else "unknown"


def _yes_no(value: bool | None) -> Text:
    if value is None:
        return Text("unknown", style="yellow")
    return Text("yes", style="green") if value else Text("no", style="red")


def kv_table(title: str, rows: Iterable[tuple[str, str | Text]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table


def settings_lines(settings: Sequence[Setting]) -> list[str]:
    """Each setting, where it comes from and its value, one line each: a value (a digest, a
    path) is never broken across lines, so the value comes last."""
    name_width = max(len(s.name) for s in settings)
    from_width = max(len(s.source) for s in settings)
    return [
        "Settings (default < matrix < environment < option; the strongest that sets one wins)",
        *(f"  {s.name:<{name_width}}  {s.source:<{from_width}}  {s.value}" for s in settings),
    ]


def host_view(p: HostProfile) -> Group:
    c, t, rec = p.cpu, p.topology, p.recommendations
    origin = "this machine" if p.is_live else f"saved cpuinfo {p.source_path}"
    march = c.march
    cpu_rows: list[tuple[str, str | Text]] = [
        ("profile of", origin),
        ("vendor", c.vendor_id or "unknown"),
        ("model", c.model_name or "unknown"),
        ("family/model/stepping", f"{c.family}/{c.model}/{c.stepping}"),
        ("x86-64 level", cpu.level_name(c.level)),
        ("closest safe -march", f"{march.name}  ({march.reason})" if march else "none"),
    ]
    present = [name for name, have in c.tf_flags.items() if have]
    absent = [name for name, have in c.tf_flags.items() if not have]
    cpu_rows.append(("TF flags present", Text(" ".join(present) or "none", style="green")))
    cpu_rows.append(("TF flags missing", Text(" ".join(absent) or "none", style="yellow")))

    quota = t.cgroup.quota_cpus if t.cgroup else None
    topo_rows: list[tuple[str, str | Text]] = [
        ("logical CPUs", str(t.logical_cpus)),
        ("physical cores", f"{t.physical_cores}  (from {t.source})"),
        ("sockets", str(t.sockets)),
        ("threads per core", str(t.threads_per_core)),
    ]
    if t.affinity is not None:
        topo_rows += [
            ("affinity", f"{len(t.affinity)} CPUs: {_cpulist(t.affinity)}"),
            (
                "cgroup CPU quota",
                f"{quota:g} CPUs (cgroup v{t.cgroup.version})"
                if t.cgroup and quota is not None
                else "none",
            ),
            ("usable CPUs", str(t.usable_cpus)),
            ("usable physical cores", str(t.usable_physical_cores)),
        ]
    parts: list[Table] = [
        kv_table("CPU", cpu_rows),
        kv_table("Topology", topo_rows),
    ]
    if p.system and p.memory:
        limit = p.memory.cgroup_limit_bytes
        parts.append(
            kv_table(
                "System",
                [
                    (
                        "memory",
                        f"{_gib(p.memory.total_bytes)} total, "
                        f"{_gib(p.memory.available_bytes)} available"
                        + (f", cgroup limit {_gib(limit)}" if limit else ""),
                    ),
                    ("os", f"{p.system.os} ({p.system.kernel}, {p.system.machine})"),
                    ("glibc", p.system.glibc or "not glibc"),
                    (
                        "python",
                        f"{p.system.python} ({p.system.python_implementation}, "
                        f"{p.system.python_executable})",
                    ),
                ],
            )
        )
    if p.gpus is not None or p.docker is not None or p.qemu is not None:
        parts.append(kv_table("Accelerators and tools", _tool_rows(p)))
    threads = rec.threads
    parts.append(
        kv_table(
            "Recommended",
            [
                ("bazel copts", " ".join(rec.copts) or "none"),
                ("bazel host copts", " ".join(rec.host_copts) or "none"),
                ("or by -march", " ".join(rec.march_copts) or "none"),
                ("intra-op threads", f"{threads.intra_op}  (physical cores this process can use)"),
                ("inter-op threads", f"{threads.inter_op}  (sockets in use)"),
                ("OMP_NUM_THREADS", f"{threads.omp_num_threads}  (--config=mkl builds)"),
                (
                    "KMP_BLOCKTIME / KMP_AFFINITY",
                    f"{threads.kmp_blocktime} / {threads.kmp_affinity}  (--config=mkl builds)",
                ),
                (
                    "oneDNN in stock TF",
                    "on by default on this CPU"
                    if rec.onednn_default_on
                    else "off by default on this CPU (TF_ENABLE_ONEDNN_OPTS=1 turns it on)",
                ),
                *(("note", note) for note in rec.notes),
            ],
        )
    )
    return Group(*_spaced(parts))


def _tool_rows(p: HostProfile) -> list[tuple[str, str | Text]]:
    rows: list[tuple[str, str | Text]] = []
    if p.gpus is not None:
        if p.gpus.devices:
            for g in p.gpus.devices:
                rows.append(
                    (
                        f"GPU {g.index}",
                        f"{g.name}, compute capability "
                        f"{g.compute_capability or 'unknown'}, driver {g.driver_version}",
                    )
                )
        else:
            rows.append(("NVIDIA GPUs", "none" + (f" ({p.gpus.error})" if p.gpus.error else "")))
    if p.docker is not None:
        d = p.docker
        rows.append(
            (
                "Docker engine",
                Text(f"reachable at {d.host}, version {d.version}", "green")
                if d.reachable
                else Text(f"not reachable at {d.host}: {d.error}", "yellow"),
            )
        )
    if p.qemu is not None:
        q = p.qemu
        rows.append(
            (
                "qemu-user",
                f"{q.path} ({q.version})"
                if q.available
                else "not installed (apt-get install qemu-user)",
            )
        )
    return rows


def _spaced(tables: list[Table]) -> list[Table | Text]:
    out: list[Table | Text] = []
    for table in tables:
        if out:
            out.append(Text(""))
        out.append(table)
    return out


def _cpulist(cpus: Iterable[int]) -> str:
    ranges: list[list[int]] = []
    for n in sorted(cpus):
        if ranges and n == ranges[-1][1] + 1:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def plan_view(plan: Plan) -> Group:
    variants = Table(title=f"Variants in {plan.matrix.path}", title_justify="left")
    for column in ("variant", "source", "TF", "python", "flags", "configs", "runs here"):
        variants.add_column(column, overflow="fold")
    baseline = plan.matrix.baseline
    # a caveat of several variants is said once, under the table, and marked in their rows
    said = Counter(r for pv in plan.variants for r in pv.verdict.reasons)
    marks = {r: f"[{i}]" for i, r in enumerate((r for r, n in said.items() if n > 1), 1)}
    for pv in plan.variants:
        v = pv.variant
        if v.source == "bazel":
            flags = " ".join(pv.compiler_flags) or "(none)"
            if v.cuda:
                flags += f" cuda {v.cuda.version} {','.join(v.cuda.compute_capabilities)}"
        elif v.source == "pypi":
            flags = " ".join([v.requirement or "", *v.constraints])
        else:
            flags = str(v.path)
        runs = _yes_no(pv.verdict.runs)
        own = [r for r in pv.verdict.reasons if r not in marks]
        if own:
            runs.append(": " + "; ".join(own), style="default")
        if shared := [mark for reason, mark in marks.items() if reason in pv.verdict.reasons]:
            runs.append(" " + " ".join(shared), style="default")
        name = Text(v.name, style="bold")
        if v.name == baseline.variant:
            name.append(" (baseline)", style="dim")
        name.append(f"\n{v.id}", style="dim")
        variants.add_row(
            name,
            v.source,
            v.tensorflow or "latest",
            v.python,
            flags,
            ", ".join(v.configs) or "-",
            runs,
        )
    tunings = Table(title="Tunings (resolved for this host)", title_justify="left")
    for column in ("tuning", "intra-op", "inter-op", "environment"):
        tunings.add_column(column, overflow="fold")
    for rt in plan.tunings:
        tunings.add_row(
            rt.name + (" (baseline)" if rt.name == baseline.tuning else ""),
            "TF default" if rt.intra_op is None else str(rt.intra_op),
            "TF default" if rt.inter_op is None else str(rt.inter_op),
            " ".join(f"{k}={v}" for k, v in rt.env) or "-",
        )
    runnable = sum(1 for c in plan.configs if c.variant.verdict.runs)
    forms = sorted({c.form for c in plan.configs}, key=plan.matrix.forms.index)
    shape = f"{len(plan.variants)} variants x {len(plan.tunings)} tunings" + (
        f" x {len(forms)} model forms ({', '.join(forms)})" if len(forms) > 1 else ""
    )
    whole = len(plan.variants) * len(plan.tunings) * len(forms) == len(plan.configs)
    summary = Text(
        f"{len(plan.configs)} configs {'=' if whole else 'of'} {shape}; {runnable} can run on "
        "this host",
    )
    planned = {pv.variant.name for pv in plan.variants}
    for opt in plan.matrix.opt_in:
        if not set(opt.variants) <= planned:
            summary.append(
                f"\n--with {opt.name} adds {', '.join(opt.variants)} (opt-in): {opt.about}",
                style="dim",
            )
    notes = [Text(f"{mark} {reason} ({said[reason]} variants)") for reason, mark in marks.items()]
    return Group(variants, *notes, Text(""), tunings, Text(""), summary)


def bench_view(summary: Summary) -> Group:
    latency = any(LATENCY_UNIT.fullmatch(u) for u in summary.units.values())
    title = f"Median throughput{' (latency)' if latency else ''} per config (one value per round)"
    # as wide as its title, so a narrow table does not break the title across lines
    table = Table(title=title, title_justify="left", min_width=len(title))
    table.add_column("config", no_wrap=True)
    for bench in summary.benchmarks:
        table.add_column(f"{bench}\n{as_read(None, summary.units[bench])[1]}", justify="right")
    beyond = False
    for config in summary.configs:
        row: list[str | Text] = [config]
        for bench in summary.benchmarks:
            cell = summary.cells.get((config, bench))
            if cell is None:
                row.append(Text("failed", style="red"))
                continue
            unit = summary.units[bench]
            shown = as_read(cell.median, unit)[0] if LATENCY_UNIT.fullmatch(unit) else None
            text = shown or f"{cell.median:,.1f}"
            if summary.units[bench] == "GFLOP/s" and config in summary.peak:
                share = cell.median / summary.peak[config]
                # Above the peak: the cores ran faster than the clock it assumes (turbo).
                text += f" ({share:.0%} pk{'*' if share > 1 else ''})"
                beyond = beyond or share > 1
            noisy = cell.cv > 0.05
            row.append(
                Text(
                    text + (f"\ncv {cell.cv:.0%}" if noisy else ""), style="yellow" if noisy else ""
                )
            )
        table.add_row(*row)
    lines: list[Table | Text] = [table]
    if summary.aa_ratio:
        spread = max(abs(r - 1) for r in summary.aa_ratio.values())
        ratios = ", ".join(f"{b} {r:.3f}" for b, r in summary.aa_ratio.items())
        lines.append(
            Text(
                f"A/A control (baseline run twice per round), ratio of medians: "
                f"{ratios}; largest deviation {spread:.1%}"
            )
        )
    if summary.peak_note and any(u == "GFLOP/s" for u in summary.units.values()):
        lines.append(Text(summary.peak_note))
    if beyond:
        lines.append(
            Text(
                "* above 100 % of peak: the cores ran above the clock the peak assumes (turbo), "
                "so that peak is a lower bound and the true share is smaller."
            )
        )
    if summary.phases:
        parts = ", ".join(
            f"{name} {seconds:.2f}" for name, seconds in summary.phases.items() if name != "process"
        )
        lines.append(
            Text(f"one process, mean seconds: {parts}; in all {summary.phases['process']:.2f}")
        )
    if summary.elapsed_s is not None:
        lines.append(Text(f"{summary.runs} runs in {summary.elapsed_s / 60:.1f} min"))
    if summary.stop:
        lines.append(Text(f"stopped: {summary.stop}"))
    for who, why in summary.failures:
        lines.append(Text(f"failed {who}: {why}", style="red"))
    return Group(*lines)


def print_bench(console: Console, summary: Summary, path: object) -> None:
    """The session's summary, then the command that ranks it, on one line however long the
    path (soft-wrapped: a terminal folds it, a copy gets it whole)."""
    console.print(bench_view(summary))
    console.print(f"Rank these with `tfbuild compare {path}`", style="dim", soft_wrap=True)
