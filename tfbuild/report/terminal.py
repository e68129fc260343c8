"""Terminal views: rich tables for host profiles, plans, bench sessions and comparisons."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tfbuild import cpu
from tfbuild.bench.calibrate import Calibration
from tfbuild.bench.summary import Summary
from tfbuild.host import HostProfile
from tfbuild.plan import Plan


def _gib(value: int | None) -> str:
    return f"{value / 2**30:.1f} GiB" if value else "unknown"


def _yes_no(value: bool | None) -> Text:
    if value is None:
        return Text("unknown", style="yellow")
    return Text("yes", style="green") if value else Text("no", style="red")


def _kv_table(title: str, rows: Iterable[tuple[str, str | Text]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, value)
    return table


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
        _kv_table("CPU", cpu_rows),
        _kv_table("Topology", topo_rows),
    ]
    if p.system and p.memory:
        limit = p.memory.cgroup_limit_bytes
        parts.append(
            _kv_table(
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
        parts.append(_kv_table("Accelerators and tools", _tool_rows(p)))
    threads = rec.threads
    parts.append(
        _kv_table(
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
        if pv.verdict.reasons:
            runs.append(": " + "; ".join(pv.verdict.reasons), style="default")
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
    summary = Text(
        f"{len(plan.configs)} configs = {len(plan.variants)} variants x {len(plan.tunings)} "
        f"tunings; {runnable} can run on this host",
    )
    return Group(variants, Text(""), tunings, Text(""), summary)


def bench_view(summary: Summary, path: object) -> Group:
    table = Table(
        title=f"Median throughput per config (one value per round) - {path}", title_justify="left"
    )
    table.add_column("config", no_wrap=True)
    for bench in summary.benchmarks:
        table.add_column(f"{bench}\n{summary.units[bench]}", justify="right")
    for config in summary.configs:
        row: list[str | Text] = [config]
        for bench in summary.benchmarks:
            cell = summary.cells.get((config, bench))
            if cell is None:
                row.append(Text("failed", style="red"))
                continue
            text = f"{cell.median:,.1f}"
            if summary.units[bench] == "GFLOP/s" and config in summary.peak:
                text += f" ({cell.median / summary.peak[config]:.0%} pk)"
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
    lines.append(Text("Rank these with `tfbuild compare " + str(path) + "`", style="dim"))
    return Group(*lines)


def inspect_view(report: dict[str, Any], result: Any, target: Any) -> Group:
    """`tfbuild inspect`: wheel facts, what its code needs and why, and the verdict."""
    meta = report["metadata"]
    manifest = report.get("manifest")
    rows: list[tuple[str, str | Text]] = [
        ("wheel", report["wheel"]),
        ("sha256", report["sha256"]),
        ("name / version", f"{meta['name']} {meta['version']}"),
        ("tags", ", ".join(meta["tags"])),
        (
            "requires",
            ", ".join(meta["requires_dist"][:8])
            + (
                f", ... ({len(meta['requires_dist'])} in all)"
                if len(meta["requires_dist"]) > 8
                else ""
            )
            or "nothing",
        ),
        ("tfbuild manifest", _manifest_line(manifest)),
    ]
    baseline = report["baseline"]
    needed = ", ".join(cpu.display_name(f) for f in baseline["flags"]) or "x86-64 only"
    reasons = _why_summary(baseline["why"], baseline["flags"])
    parts: list[Table | Text] = [_kv_table("Wheel", rows), Text("")]
    parts.append(
        _kv_table(
            "Baseline (what a CPU must have)",
            [
                ("needs", Text(needed, style="bold")),
                *((cpu.display_name(f), why) for f, why in reasons),
                ("how decided", Text(baseline["explanation"], style="dim")),
            ],
        )
    )
    parts += [Text(""), _usage_table(report), Text("")]
    glibc = report["glibc"]
    cuda = report["cuda"]
    parts.append(
        _kv_table(
            "System",
            [
                (
                    "glibc floor",
                    f"{glibc['floor']} ({glibc['manylinux']})" if glibc["floor"] else "none",
                ),
                ("libstdc++", f"GLIBCXX_{glibc['glibcxx']}" if glibc["glibcxx"] else "not needed"),
                ("CUDA", _cuda_line(cuda)),
                *((("cuobjdump", _tool_line(cuda["tool"])),) if cuda and cuda["tool"] else ()),
                (
                    "audit",
                    f"{report['seconds']:.1f} s" + (" (cached)" if report.get("cached") else ""),
                ),
            ],
        )
    )
    if cuda is not None:
        parts += [Text(""), _device_code_table(report)]
    style = {True: "green", False: "bold red", None: "yellow"}[result.runs]
    cuda_style = "bold red" if any(b.startswith("CUDA ") for b in result.blockers) else ""
    parts += [
        Text(""),
        _kv_table(
            f"Verdict for {target.label}",
            [
                ("CPU", Text(result.cpu, style=style)),
                ("glibc", result.glibc),
                ("CUDA", Text(result.cuda, style=cuda_style)),
            ],
        ),
    ]
    return Group(*parts)


def _manifest_line(manifest: dict[str, Any] | None) -> str:
    if not manifest:
        return "none (not built by tfbuild)"
    variant = manifest.get("variant", {})
    return (
        f"variant {variant.get('name')} ({variant.get('id')}), TensorFlow "
        f"{manifest.get('tensorflow')} at {manifest.get('git_ref')}, configs "
        f"{manifest.get('configs')}, copts {' '.join(manifest.get('copts') or []) or 'none'}"
    )


def _why_summary(why: dict[str, list[str]], flags: list[str]) -> list[tuple[str, str]]:
    out = []
    for flag in flags:
        reasons = why.get(flag, [])
        kinds: dict[str, list[str]] = {}
        for reason in reasons:
            obj, _, kind = reason.partition(": ")
            kinds.setdefault(kind.split(" (")[0], []).append(obj)
        text = "; ".join(
            f"{kind} in {len(objs)} object{'s' if len(objs) > 1 else ''} (e.g. {objs[0]})"
            for kind, objs in kinds.items()
        )
        out.append((flag, text))
    return out


def _usage_table(report: dict[str, Any]) -> Table:
    """One row per extension, summed over the wheel's objects."""
    objects = [o for o in report["objects"] if o["usage"]]
    total_functions = sum(o["functions"] for o in report["objects"]) or 1
    baseline = report["baseline"]["why"]
    order = {flag.cpuinfo: i for i, flag in enumerate(cpu.tf_flag_table().values())}
    flags = sorted({f for o in objects for f in o["usage"]}, key=lambda f: (order.get(f, 99), f))
    table = Table(
        title=f"Instruction-set extensions in {len(report['objects'])} ELF objects "
        f"({total_functions:,} functions)",
        title_justify="left",
    )
    for column in ("extension", "instructions", "functions", "required", "mostly in", "e.g."):
        table.add_column(
            column,
            justify="right" if column in ("instructions", "functions") else "left",
            overflow="fold",
        )
    for f in flags:
        users = [(o["usage"][f], o["path"]) for o in objects if f in o["usage"]]
        instructions = sum(u["instructions"] for u, _ in users)
        functions = sum(u["functions"] for u, _ in users)
        top = max(users, key=lambda item: item[0]["instructions"])
        required = (
            Text(
                "yes: "
                + ", ".join(sorted({r.partition(": ")[2].split(" (")[0] for r in baseline[f]})),
                style="bold",
            )
            if f in baseline
            else Text("no: dispatched", style="dim")
        )
        example = top[0]["examples"][0] if top[0]["examples"] else ""
        table.add_row(
            cpu.display_name(f),
            f"{instructions:,}",
            f"{functions / total_functions:.2%}",
            required,
            top[1].rsplit("/", 1)[-1],
            example[:70],
        )
    return table


def _cuda_line(cuda: dict[str, Any] | None) -> str:
    if cuda is None:
        return "no device code"
    where = f"in {cuda['objects']} object{'s' if cuda['objects'] > 1 else ''}"
    if not cuda["checked"]:
        return f"device code {where}; architectures {cuda['note'] or 'not checked'}"
    sass, ptx = ", ".join(cuda["sass"]) or "none", ", ".join(cuda["ptx"]) or "none"
    return f"SASS {sass}; PTX {ptx} ({where})"


def _tool_line(tool: dict[str, Any]) -> str:
    origin = "on PATH" if tool["source"] == "PATH" else f"{tool['source']}, package index"
    return f"{tool['version'] or 'version unknown'} ({origin}): {tool['path']}"


DEVICE_CODE_ROWS = 6
"""Objects named per group of objects with the same architectures; the rest are counted."""


def _device_code_table(report: dict[str, Any]) -> Table:
    """Per object with device code, its SASS and PTX architectures; objects with the same
    ones share a row, and a last row gives them all together."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...], str | None], list[str]] = {}
    for o in report["objects"]:
        if c := o["cuda"]:
            key = (tuple(c["sass"]), tuple(c["ptx"]), None if c["checked"] else c["note"])
            groups.setdefault(key, []).append(o["path"])
    table = Table(title="CUDA device code (cuobjdump)", title_justify="left")
    table.add_column("objects", overflow="fold")
    table.add_column("SASS", overflow="fold")
    table.add_column("PTX", overflow="fold")
    for (sass, ptx, note), paths in groups.items():
        shown = paths[:DEVICE_CODE_ROWS]
        more = f"\n... and {len(paths) - len(shown)} more" if len(paths) > len(shown) else ""
        objects = "\n".join(shown) + more
        if note is not None:
            table.add_row(objects, Text("not checked", style="yellow"), "")
        else:
            table.add_row(objects, ", ".join(sass) or "none", ", ".join(ptx) or "none")
    cuda = report["cuda"]
    if len(groups) > 1:
        table.add_row(
            Text(f"all {cuda['objects']} objects", style="bold"),
            Text(", ".join(cuda["sass"]) or "none", style="bold"),
            Text(", ".join(cuda["ptx"]) or "none", style="bold"),
        )
    return table


# --------------------------------------------------------------------------------------------
# Calibration


def calibration_rows(c: Calibration) -> tuple[list[list[str]], list[list[str]]]:
    """The two tables of `tfbuild calibrate`: where a process spends its time (suite design),
    and each design's cost, noise and precision per wall-second."""
    p = c.phases
    score = c.scores[0]
    suite = score.design
    timed = {b: suite.iterations[b] * suite.samples[b] * p.step_s[b] for b in c.benchmarks}
    rows = [
        ["process start and exit", "", "", "", "", f"{p.start_exit_s:.2f}", "", ""],
        ["import numpy, tensorflow", "", "", "", "", f"{p.import_s:.2f}", "", ""],
        ["smoke check", "", "", "", "", f"{p.smoke_s:.2f}", "", ""],
    ]
    for b in c.benchmarks:
        total = p.build_s[b] + p.trace_s[b] + p.warmup_s[b] + timed[b]
        rows.append(
            [
                b,
                f"{p.build_s[b]:.2f}",
                f"{p.trace_s[b]:.2f}",
                f"{p.warmup_s[b]:.2f}",
                f"{timed[b]:.2f} ({suite.samples[b]} x {suite.iterations[b]} x "
                f"{p.step_s[b] * 1000:.1f} ms)",
                f"{total:.2f}",
                f"{p.within_sd[b]:.1%}",
                f"{score.per_benchmark_sd[b]:.1%}",
            ]
        )
    rows.append(
        [
            "process",
            "",
            "",
            "",
            f"{score.timed_s:.2f}",
            f"{score.process_s:.2f}",
            "",
            f"{score.sd:.1%}",
        ]
    )
    designs = [
        [
            s.design.label,
            f"{s.timed_s:.2f}",
            f"{s.process_s:.2f}",
            f"{s.sd:.2%}",
            f"{s.precision_per_s:.2f}",
        ]
        for s in c.scores
    ]
    return rows, designs


PHASE_HEADER = [
    "",
    "build s",
    "trace s",
    "warm-up s",
    "timed s",
    "total s",
    "sd sample",
    "sd process",
]
DESIGN_HEADER = ["design", "timed s", "s per process", "sd per process", "precision / s"]


def _calibration_intro(c: Calibration) -> str:
    return (
        f"{c.processes} processes ({', '.join(c.configs)}; {c.rounds} rounds). sd sample: the "
        "spread of one timed sample within a process; sd process: the spread of a process's "
        "value (per benchmark) or overall level (mean log throughput over the benchmarks) from "
        "process to process, rounds and configs removed; precision / s: 1 / (sd^2 x seconds "
        "per process), relative to the suite's design."
    )


def calibration_view(c: Calibration, path: object) -> Group:
    rows, designs = calibration_rows(c)
    phases = Table(
        title="Where one benchmark process spends its time (mean seconds, suite design)",
        title_justify="left",
    )
    for column in PHASE_HEADER:
        phases.add_column(column, justify="left" if not column else "right")
    for row in rows:
        phases.add_row(*row)
    table = Table(title="Designs replayed on the same processes", title_justify="left")
    for column in DESIGN_HEADER:
        table.add_column(column, justify="left" if column == "design" else "right")
    for row in designs:
        table.add_row(*row)
    return Group(Text(f"calibration: {path}\n{_calibration_intro(c)}"), phases, table)


def calibration_markdown(c: Calibration) -> str:
    from tfbuild.report.comparison import md_table

    rows, designs = calibration_rows(c)
    lines = [_calibration_intro(c), "", *md_table(PHASE_HEADER, rows), ""]
    lines += [*md_table(DESIGN_HEADER, designs), ""]
    return "\n".join(lines)
