"""`tfbuild inspect` in a terminal: the wheel's facts, what its code needs and why, its device code,
and the verdict. Formats; never computes."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from tfbuild.audit.model import AuditReport, CudaSummary, CudaTool, Reasons
from tfbuild.audit.verdict import Target, WheelVerdict, required_flags
from tfbuild.machine import cpu
from tfbuild.report.terminal import kv_table
from tfbuild.store import Manifest, SourceBuild

DEVICE_CODE_ROWS = 6
"""Objects named per group of objects with the same architectures; the rest are counted."""


def inspect_view(report: AuditReport, result: WheelVerdict, target: Target) -> Group:
    """`tfbuild inspect`: wheel facts, what its code needs and why, and the verdict."""
    meta = report.metadata
    requires = meta.requires_dist
    rows: list[tuple[str, str | Text]] = [
        ("wheel", report.wheel),
        ("sha256", report.sha256),
        ("name / version", f"{meta.name} {meta.version}"),
        ("tags", ", ".join(meta.tags)),
        (
            "requires",
            ", ".join(requires[:8])
            + (f", ... ({len(requires)} in all)" if len(requires) > 8 else "")
            or "nothing",
        ),
        ("tfbuild manifest", _manifest_line(report.manifest)),
    ]
    baseline = report.needs
    needed = ", ".join(cpu.display_name(f) for f in baseline.flags) or "x86-64 only"
    implied = [f for f in cpu.missing_flags(required_flags(report), ()) if f not in baseline.flags]
    if implied:
        needed += f" (and {', '.join(cpu.display_name(f) for f in implied)}, which it implies)"
    reasons = _why_summary(baseline.why, baseline.flags)
    parts: list[Table | Text] = [*_verdict(result, target), Text(""), kv_table("Wheel", rows)]
    parts.append(Text(""))
    parts.append(
        kv_table(
            "Baseline (what a CPU must have)",
            [
                ("needs", Text(needed, style="bold")),
                *((cpu.display_name(f), why) for f, why in reasons),
                ("how decided", Text(baseline.explanation, style="dim")),
            ],
        )
    )
    parts += [Text(""), _usage_table(report), Text("")]
    cuda = report.cuda
    parts.append(
        kv_table(
            "System",
            [
                ("glibc floor", f"{report.glibc} ({report.manylinux})" if report.glibc else "none"),
                ("libstdc++", f"GLIBCXX_{report.glibcxx}" if report.glibcxx else "not needed"),
                ("CUDA", _cuda_line(cuda)),
                *((("cuobjdump", _tool_line(cuda.tool)),) if cuda and cuda.tool else ()),
                ("audit", f"{report.seconds:.1f} s" + (" (cached)" if report.cached else "")),
            ],
        )
    )
    if cuda is not None:
        parts += [Text(""), _device_code_table(report)]
    return Group(*parts)


def _verdict(result: WheelVerdict, target: Target) -> list[Table | Text]:
    """The answer, first: whether the wheel runs on the target, and what stops it."""
    style = {True: "green", False: "bold red", None: "yellow"}[result.runs]
    cuda_style = "bold red" if any(b.startswith("CUDA ") for b in result.blockers) else ""
    return [
        kv_table(
            f"Verdict for {target.label}",
            [
                ("CPU", Text(result.cpu, style=style)),
                ("glibc", result.glibc),
                ("CUDA", Text(result.cuda, style=cuda_style)),
            ],
        )
    ]


def _manifest_line(manifest: Manifest | None) -> str:
    if manifest is None:
        return "none (not built by tfbuild)"
    build = manifest.build or SourceBuild()
    return (
        f"variant {manifest.variant.get('name')} ({manifest.variant.get('id')}), TensorFlow "
        f"{build.tensorflow} at {build.git_ref}, configs {list(build.configs)}, copts "
        f"{' '.join(build.copts) or 'none'}"
    )


def _why_summary(why: Reasons, flags: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for flag in flags:
        reasons = why.get(flag, ())
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


def _usage_table(report: AuditReport) -> Table:
    """One row per extension, summed over the wheel's objects."""
    objects = [o for o in report.objects if o.usage]
    total_functions = sum(o.functions for o in report.objects) or 1
    baseline = report.needs.why
    implied_by = {
        f: need
        for need in report.needs.flags
        for f in cpu.cpuinfo_flags_for([_tf_name(need)])
        if f != need
    }
    order = {flag.cpuinfo: i for i, flag in enumerate(cpu.tf_flag_table().values())}
    flags = sorted({f for o in objects for f in o.usage}, key=lambda f: (order.get(f, 99), f))
    table = Table(
        title=f"Instruction-set extensions in {len(report.objects)} ELF objects "
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
        users = [(o.usage[f], o.path) for o in objects if f in o.usage]
        instructions = sum(u.instructions for u, _ in users)
        functions = sum(u.functions for u, _ in users)
        top = max(users, key=lambda item: item[0].instructions)
        if f in baseline:
            why = ", ".join(sorted({r.partition(": ")[2].split(" (")[0] for r in baseline[f]}))
            required = Text(f"yes: {why}", style="bold")
        elif f in implied_by:
            required = Text(f"yes: implied by {cpu.display_name(implied_by[f])}", style="bold")
        else:
            required = Text("no: dispatched", style="dim")
        example = top[0].examples[0] if top[0].examples else ""
        table.add_row(
            cpu.display_name(f),
            f"{instructions:,}",
            f"{functions / total_functions:.2%}",
            required,
            top[1].rsplit("/", 1)[-1],
            example[:70],
        )
    return table


def _tf_name(cpuinfo: str) -> str:
    """The extension table's name of a cpuinfo flag."""
    return next((n for n, f in cpu.tf_flag_table().items() if f.cpuinfo == cpuinfo), cpuinfo)


def _cuda_line(cuda: CudaSummary | None) -> str:
    if cuda is None:
        return "no device code"
    where = f"in {cuda.objects} object{'s' if cuda.objects > 1 else ''}"
    if not cuda.checked:
        return f"device code {where}; architectures {cuda.note or 'not checked'}"
    sass, ptx = ", ".join(cuda.sass) or "none", ", ".join(cuda.ptx) or "none"
    return f"SASS {sass}; PTX {ptx} ({where})"


def _tool_line(tool: CudaTool) -> str:
    origin = "on PATH" if tool.source == "PATH" else f"{tool.source}, package index"
    return f"{tool.version or 'version unknown'} ({origin}): {tool.path}"


def _device_code_table(report: AuditReport) -> Table:
    """Per object with device code, its SASS and PTX architectures; objects with the same
    ones share a row, and a last row gives them all together."""
    groups: dict[tuple[tuple[str, ...], tuple[str, ...], str | None], list[str]] = {}
    for o in report.objects:
        if c := o.cuda:
            key = (c.sass, c.ptx, None if c.checked else c.note)
            groups.setdefault(key, []).append(o.path)
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
    cuda = report.cuda
    if len(groups) > 1 and cuda is not None:
        table.add_row(
            Text(f"all {cuda.objects} objects", style="bold"),
            Text(", ".join(cuda.sass) or "none", style="bold"),
            Text(", ".join(cuda.ptx) or "none", style="bold"),
        )
    return table
