"""`tfbuild inspect`: a wheel's metadata, manifest and machine-code requirements, and a plain
verdict for a CPU ("runs here" or "will crash here: needs AVX512F..."). Reports are cached by
the wheel's sha256."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from tfbuild import cpu, isa, pip, wheelfile
from tfbuild.errors import BadWheel, IncompatibleWheel, UsageError
from tfbuild.host import GpuInfo, HostProfile
from tfbuild.store import atomic_write_json

SCHEMA = "tfbuild.inspect/1"

# qemu CPU model names (qemu-x86_64 -cpu help) -> the -march name with the same extensions.
QEMU_MODELS = {
    "Conroe": "core2",
    "Penryn": "core2",
    "Nehalem": "nehalem",
    "Westmere": "westmere",
    "SandyBridge": "sandybridge",
    "IvyBridge": "ivybridge",
    "Haswell": "haswell",
    "Broadwell": "broadwell",
    "Skylake-Client": "skylake",
    "Skylake-Server": "skylake-avx512",
    "Cascadelake-Server": "cascadelake",
    "Cooperlake": "cooperlake",
    "Icelake-Server": "icelake-server",
    "SapphireRapids": "sapphirerapids",
    "EPYC": "znver1",
    "EPYC-Rome": "znver2",
    "EPYC-Milan": "znver3",
    "EPYC-Genoa": "znver4",
}

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
    wheel: Path, cache_dir: Path | None, refresh: bool = False, workers: int | None = None
) -> dict[str, Any]:
    """The audit report of a wheel, from the cache when this wheel was audited before."""
    wheelfile.check_wheel(wheel)
    digest = _digest(wheel, cache_dir)
    cached = cache_path(cache_dir, digest) if cache_dir else None
    if cached is not None and not refresh:
        report = _cached_report(cached, digest)
        if report is not None:
            report["cached"] = True
            return report
    started = time.perf_counter()
    try:
        manifest = wheelfile.embedded_manifest(wheel)
        declared = isa.declared_flags(manifest)
        objects = isa.audit_wheel(wheel, declared, workers)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise BadWheel(f"{wheel}: damaged wheel archive ({exc})") from exc
    report = build_report(wheel, digest, manifest, objects, time.perf_counter() - started)
    if cached is not None:
        atomic_write_json(cached, report)
    report["cached"] = False
    return report


def _cached_report(path: Path, digest: str) -> dict[str, Any] | None:
    """A cached report, or None when there is none or it is damaged (then it is redone)."""
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ok = isinstance(report, dict) and report.get("sha256") == digest and "baseline" in report
    return report if ok else None


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
        return pip.sha256_of(wheel)
    stat = wheel.stat()
    key = f"{wheel.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    index = cache_dir / "inspect" / "sha256.json"
    try:
        known: dict[str, str] = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = pip.sha256_of(wheel)
        atomic_write_json(index, known)
    return known[key]


def build_report(
    wheel: Path,
    digest: str,
    manifest: dict[str, Any] | None,
    objects: Iterable[isa.ObjectAudit],
    seconds: float,
) -> dict[str, Any]:
    objects = list(objects)
    name, version, _, tags = parse_wheel_filename(wheel.name)
    meta = wheelfile.metadata(wheel)
    why: dict[str, list[str]] = defaultdict(list)
    for o in objects:
        for flag, reasons in o.baseline.items():
            why[flag] += [f"{Path(o.path).name}: {r}" for r in reasons]
    glibc = max((o.glibc for o in objects if o.glibc), default=None, key=_version_key)
    glibcxx = max((o.glibcxx for o in objects if o.glibcxx), default=None, key=_version_key)
    cuda_objects = [o.cuda for o in objects if o.cuda]
    cuda = None
    if cuda_objects:
        cuda = {
            "objects": len(cuda_objects),
            "checked": all(c["checked"] for c in cuda_objects),
            "sass": sorted({a for c in cuda_objects for a in c["sass"]}),
            "ptx": sorted({a for c in cuda_objects for a in c["ptx"]}),
        }
    return {
        "schema": SCHEMA,
        "analysis_version": isa.ANALYSIS_VERSION,
        "wheel": wheel.name,
        "sha256": digest,
        "metadata": {
            "name": str(name),
            "version": str(version),
            "tags": sorted(str(t) for t in tags),
            "requires_dist": meta.get("Requires-Dist", []),
            "requires_python": next(iter(meta.get("Requires-Python", [])), None),
        },
        "manifest": manifest,
        "unreadable": [{"path": o.path, "error": o.error} for o in objects if o.error],
        "unchecked": {
            flag: [
                f"{Path(o.path).name}: {name}"
                for o in objects
                for name in o.unchecked.get(flag, [])
            ]
            for flag in sorted({f for o in objects for f in o.unchecked})
        },
        "objects": [
            {
                "path": o.path,
                "functions": o.functions,
                "entry_points": o.entry_points,
                "reachable_on_load": o.reachable,
                "usage": {
                    flag: {
                        "instructions": u.instructions,
                        "functions": u.functions,
                        "share": u.functions / o.functions if o.functions else 0.0,
                        "examples": demangle([name for _, name in u.examples]),
                    }
                    for flag, u in sorted(o.usage.items())
                },
                "baseline": o.baseline,
                "unchecked": o.unchecked,
                "glibc": o.glibc,
                "glibcxx": o.glibcxx,
                "cuda": o.cuda,
            }
            for o in objects
            if not o.error
        ],
        "baseline": {
            "flags": isa.minimal(why),
            "all": sorted(why),
            "why": dict(why),
            "explanation": EXPLANATION.format(share=isa.PERVASIVE_SHARE),
        },
        "glibc": {"floor": glibc, "manylinux": isa.manylinux_tag(glibc), "glibcxx": glibcxx},
        "cuda": cuda,
        "seconds": round(seconds, 2),
    }


def _version_key(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (version or "0").split(".") if p.isdigit())


# --------------------------------------------------------------------------------------------
# Verdicts


@dataclass(frozen=True)
class Target:
    """The CPU (and, for a real host, the system) a verdict is for."""

    label: str
    flags: frozenset[str]
    glibc: str | None = None
    gpus: GpuInfo | None = None


def target_for_host(host: HostProfile) -> Target:
    label = f"{host.cpu.model_name or host.cpu.vendor_id} ({cpu.level_name(host.cpu.level)})"
    glibc = host.system.glibc if host.system else None
    return Target(label, host.cpu.flags, glibc, host.gpus)


def target_for_model(model: str) -> Target:
    """A named CPU: a -march name (haswell) or a qemu model (Haswell-v1)."""
    base = model.split("-v", maxsplit=1)[0] if "-v" in model else model
    march = QEMU_MODELS.get(base, base)
    table = cpu.marches()
    if march not in table:
        from tfbuild.matrix import did_you_mean

        known = sorted(table) + sorted(QEMU_MODELS)
        raise UsageError(
            f"--cpu {model!r}: unknown CPU model (expected a -march name or a qemu model: "
            f"{', '.join(known)})" + did_you_mean(model, known)
        )
    return Target(f"{model} (as -march={march})", table[march].flags)


@dataclass(frozen=True)
class WheelVerdict:
    runs: bool | None
    cpu: str
    glibc: str
    cuda: str

    def lines(self) -> list[str]:
        return [self.cpu, f"glibc: {self.glibc}", f"CUDA: {self.cuda}"]


def verdict(report: dict[str, Any], target: Target) -> WheelVerdict:
    needed = set(report["baseline"]["all"])
    missing = cpu.missing_flags(needed, target.flags)
    top = cpu.highest_extension(target.flags)
    required = ", ".join(cpu.display_name(f) for f in report["baseline"]["flags"]) or "x86-64"
    runs: bool | None = True
    if missing:
        names = ", ".join(cpu.display_name(f) for f in isa.minimal(missing))
        cpu_line = f"will crash here: needs {names}; this CPU has up to {top}"
        runs = False
    elif unchecked := cpu.missing_flags(set(report.get("unchecked") or {}), target.flags):
        names = ", ".join(cpu.display_name(f) for f in isa.minimal(unchecked))
        where = report["unchecked"][sorted(unchecked)[0]][0]
        cpu_line = (
            f"unproven: code that runs on load takes the address of code using {names} "
            f"({where}) and the object has no CPU check, so it may call it at once; the rest "
            f"needs {required}, {target.label} has up to {top}; `tfbuild verify --cpu MODEL` "
            "runs the wheel on an emulated CPU"
        )
        runs = None
    elif unreadable := report.get("unreadable"):
        first = unreadable[0]
        cpu_line = (
            f"unproven: {len(unreadable)} ELF object(s) could not be read ({first['path']}: "
            f"{first['error']}); the rest needs {required}, {target.label} has up to {top}; "
            "`tfbuild verify --cpu MODEL` runs the wheel on an emulated CPU"
        )
        runs = None
    else:
        cpu_line = f"runs here: needs {required}; {target.label} has up to {top}"
    floor = report["glibc"]["floor"]
    if floor is None:
        glibc_line = "no versioned glibc symbols needed"
    elif target.glibc is None:
        glibc_line = f"needs {floor} ({report['glibc']['manylinux']}); not known for {target.label}"
    elif _version_key(target.glibc) >= _version_key(floor):
        glibc_line = f"needs {floor}, this system has {target.glibc}: ok"
    else:
        glibc_line = f"will fail to load: needs {floor}, this system has {target.glibc}"
        runs = False
    cuda = report["cuda"]
    if cuda is None:
        cuda_line = "no device code"
    elif not cuda["checked"]:
        cuda_line = "device code present; architectures not checked (cuobjdump not found)"
    else:
        archs = ", ".join(cuda["sass"] + cuda["ptx"]) or "none listed"
        gpus = target.gpus
        if gpus is None or not gpus.devices:
            cuda_line = f"built for {archs}; no NVIDIA GPU here (runs on CPU only)"
        else:
            from tfbuild.matrix import Cuda
            from tfbuild.plan import _cuda_verdict

            ok, why = _cuda_verdict(Cuda("", "", tuple(cuda["sass"] + cuda["ptx"])), gpus)
            cuda_line = f"built for {archs}; " + ("runs on this GPU" if ok else str(why))
    return WheelVerdict(runs, cpu_line, glibc_line, cuda_line)


def refuse_if_incompatible(report: dict[str, Any], target: Target, what: str) -> None:
    """Stop before anything is installed when the wheel cannot run on the target."""
    result = verdict(report, target)
    if result.runs is False:
        reason = result.cpu if result.cpu.startswith("will crash") else f"glibc {result.glibc}"
        raise IncompatibleWheel(
            f"{what}: {reason} (`tfbuild inspect` for details; --force installs it anyway)"
        )


def verdict_json(result: WheelVerdict, target: Target) -> dict[str, Any]:
    return {"target": target.label, **asdict(result)}
