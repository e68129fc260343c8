"""The audit report of a wheel (`tfbuild inspect`): its metadata, manifest and machine-code
requirements (instruction sets, glibc, CUDA architectures), cached by the wheel's sha256."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from packaging.utils import parse_wheel_filename

from tfbuild import wheelfile
from tfbuild.audit import cuobjdump, isa
from tfbuild.audit.model import (
    AuditReport,
    CudaListing,
    CudaSummary,
    CudaTool,
    ExtensionUse,
    Needs,
    ObjectFindings,
    Unreadable,
    WheelMetadata,
)
from tfbuild.audit.verdict import version_key
from tfbuild.config.model import INHERIT_PIP, PipSettings
from tfbuild.errors import BadWheel
from tfbuild.files import atomic_write_json, locked, sha256_of
from tfbuild.store import Manifest

EXPLANATION = (
    "Baseline = the extensions a CPU must have to load and use the wheel. An extension counts "
    "when (1) code that runs on load uses it: functions reachable by direct calls from an "
    "object's initialisers (DT_INIT, DT_INIT_ARRAY) and Python module init (PyInit_*); or "
    "(2) it is pervasive, used by at least {share:.0%} of an object's functions (and 20 or "
    "more), as a -m compiler flag makes it; or (3) the wheel's tfbuild manifest says it was "
    "compiled for it. "
    "Extensions found only in a few functions reached through function pointers after a "
    "run-time CPU check (oneDNN, XNNPACK, ruy dispatch) are listed but not required. "
    "`tfbuild verify --cpu MODEL` runs the wheel on an emulated CPU as ground truth."
)


def cache_path(cache_dir: Path, sha256: str) -> Path:
    return cache_dir / "inspect" / f"{sha256}-v{isa.ANALYSIS_VERSION}.json"


def inspect_wheel(
    wheel: Path,
    cache_dir: Path | None,
    refresh: bool = False,
    workers: int | None = None,
    pip_settings: PipSettings = INHERIT_PIP,
    progress: isa.Progress | None = None,
) -> AuditReport:
    """The audit report of a wheel, from the cache when this wheel was audited before.

    Device code is listed with cuobjdump, installed into `cache_dir` with `pip_settings` when
    it is not on PATH; a cached report whose device code could not be listed then is listed
    again when cuobjdump can be had now."""
    wheelfile.check_wheel(wheel)
    digest = _digest(wheel, cache_dir)
    device_code = cuobjdump.DeviceCode(cache_dir, pip_settings, retry=refresh)
    if cache_dir is None:
        return _audit(wheel, digest, None, refresh, workers, device_code, progress)
    cached = cache_path(cache_dir, digest)
    # Sessions sharing a cache audit a wheel one at a time: the second reads the first's report.
    with locked(cached.with_name(f".{cached.name}.lock")):
        return _audit(wheel, digest, cached, refresh, workers, device_code, progress)


def _audit(
    wheel: Path,
    digest: str,
    cached: Path | None,
    refresh: bool,
    workers: int | None,
    device_code: cuobjdump.DeviceCode,
    progress: isa.Progress | None = None,
) -> AuditReport:
    if cached is not None and not refresh:
        report = _cached_report(cached, digest)
        if report is not None:
            relisted = _relist_device_code(report, wheel, device_code)
            if relisted is not None:
                report = relisted
                atomic_write_json(cached, report.to_json())
            return report.as_cached()
    started = time.perf_counter()
    try:
        manifest = Manifest.of_wheel(wheel)
        declared = isa.declared_flags(manifest.build if manifest is not None else None)
        objects = isa.audit_wheel(wheel, declared, workers, device_code, progress)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise BadWheel(f"{wheel}: damaged wheel archive ({exc})") from exc
    report = build_report(
        wheel, digest, manifest, objects, time.perf_counter() - started, device_code.describe()
    )
    if cached is not None:
        atomic_write_json(cached, report.to_json())
    return report


def _relist_device_code(
    report: AuditReport, wheel: Path, device_code: cuobjdump.DeviceCode
) -> AuditReport | None:
    """The report with the device code a cached report could not list (no cuobjdump then)
    listed, when cuobjdump can be had now; None when nothing is to be listed."""
    if isinstance(device_code.tool, str) or not any(
        o.cuda and not o.cuda.checked for o in report.objects
    ):
        return None
    objects = []
    with (
        zipfile.ZipFile(wheel) as archive,
        tempfile.TemporaryDirectory(prefix="tfbuild-cuda-") as tmp,
    ):
        target = Path(tmp) / "object.so"
        for o in report.objects:
            if o.cuda and not o.cuda.checked:
                with archive.open(o.path) as source, target.open("wb") as out:
                    shutil.copyfileobj(source, out, 1 << 20)
                objects.append(replace(o, cuda=device_code(target)))
            else:
                objects.append(o)
    listed = [o.cuda for o in objects if o.cuda]
    return replace(
        report, objects=tuple(objects), cuda=cuda_summary(listed, device_code.describe())
    )


def _cached_report(path: Path, digest: str) -> AuditReport | None:
    """A cached report, or None when there is none or it is damaged (then it is redone)."""
    try:
        report = AuditReport.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return report if report.sha256 == digest else None


def demangle(names: list[str]) -> list[str]:
    """C++ names made readable with c++filt when binutils are installed."""
    tool = shutil.which("c++filt")
    if tool is None or not names:
        return names
    proc = subprocess.run(
        [tool], input="\n".join(names), capture_output=True, text=True, check=False
    )
    out = proc.stdout.splitlines()
    return out if proc.returncode == 0 and len(out) == len(names) else names


def _digest(wheel: Path, cache_dir: Path | None) -> str:
    """The wheel's sha256, remembered by path, size and mtime (hashing a TensorFlow wheel
    takes longer than reading a cached report)."""
    if cache_dir is None:
        return sha256_of(wheel)
    stat = wheel.stat()
    key = f"{wheel.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    index = cache_dir / "inspect" / "sha256.json"
    with locked(index.with_name(".sha256.json.lock")):
        try:
            known: dict[str, str] = json.loads(index.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
        if key not in known:
            known[key] = sha256_of(wheel)
            atomic_write_json(index, known)
        return known[key]


def build_report(
    wheel: Path,
    digest: str,
    manifest: Manifest | None,
    objects: Iterable[isa.ObjectAudit],
    seconds: float,
    cuda_tool: CudaTool | None = None,
) -> AuditReport:
    objects = list(objects)
    name, version, _, tags = parse_wheel_filename(wheel.name)
    meta = wheelfile.metadata(wheel)
    why: dict[str, list[str]] = defaultdict(list)
    for o in objects:
        for flag, reasons in o.baseline.items():
            why[flag] += [f"{Path(o.path).name}: {r}" for r in reasons]
    glibc = max((o.glibc for o in objects if o.glibc), default=None, key=version_key)
    glibcxx = max((o.glibcxx for o in objects if o.glibcxx), default=None, key=version_key)
    findings = tuple(_findings(o) for o in objects if not o.error)
    return AuditReport(
        analysis_version=isa.ANALYSIS_VERSION,
        wheel=wheel.name,
        sha256=digest,
        metadata=WheelMetadata(
            name=str(name),
            version=str(version),
            tags=tuple(sorted(str(t) for t in tags)),
            requires_dist=tuple(meta.get("Requires-Dist", [])),
            requires_python=next(iter(meta.get("Requires-Python", [])), None),
        ),
        manifest=manifest,
        unreadable=tuple(Unreadable(o.path, o.error) for o in objects if o.error),
        unchecked={
            flag: tuple(
                f"{Path(o.path).name}: {name}"
                for o in objects
                for name in o.unchecked.get(flag, [])
            )
            for flag in sorted({f for o in objects for f in o.unchecked})
        },
        objects=findings,
        needs=Needs(
            flags=tuple(isa.minimal(why)),
            every=tuple(sorted(why)),
            why={flag: tuple(reasons) for flag, reasons in why.items()},
            explanation=EXPLANATION.format(share=isa.PERVASIVE_SHARE),
        ),
        glibc=glibc,
        manylinux=isa.manylinux_tag(glibc),
        glibcxx=glibcxx,
        cuda=cuda_summary([f.cuda for f in findings if f.cuda], cuda_tool),
        seconds=round(seconds, 2),
    )


def _findings(o: isa.ObjectAudit) -> ObjectFindings:
    usage = {
        flag: ExtensionUse(
            instructions=u.instructions,
            functions=u.functions,
            share=u.functions / o.functions if o.functions else 0.0,
            examples=tuple(demangle([name for _, name in u.examples])),
        )
        for flag, u in sorted(o.usage.items())
    }
    return ObjectFindings(
        path=o.path,
        functions=o.functions,
        entry_points=o.entry_points,
        reachable_on_load=o.reachable,
        usage=usage,
        baseline={flag: tuple(why) for flag, why in o.baseline.items()},
        unchecked={flag: tuple(why) for flag, why in o.unchecked.items()},
        glibc=o.glibc,
        glibcxx=o.glibcxx,
        cuda=o.cuda,
    )


def cuda_summary(listed: list[CudaListing], tool: CudaTool | None) -> CudaSummary | None:
    """Every object's device code together: the union of its architectures, the cuobjdump that
    listed them and, when some object could not be listed, why."""
    if not listed:
        return None
    notes = [c.note for c in listed if c.note]
    return CudaSummary(
        objects=len(listed),
        checked=all(c.checked for c in listed),
        sass=tuple(sorted({a for c in listed for a in c.sass}, key=cuobjdump.arch_key)),
        ptx=tuple(sorted({a for c in listed for a in c.ptx}, key=cuobjdump.arch_key)),
        tool=tool,
        note=notes[0] if notes else None,
    )


# --------------------------------------------------------------------------------------------
# Verdicts
