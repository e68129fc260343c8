"""`tfbuild inspect`: a wheel's metadata, manifest and machine-code requirements, and a plain
verdict for a CPU ("runs here" or "will crash here: needs AVX512F...") and for GPUs (the SASS
or PTX that runs on each, or the architectures missing). Reports are cached by the wheel's
sha256."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from tfbuild import cpu, cuobjdump, isa, pip, wheelfile
from tfbuild.errors import BadWheel, IncompatibleWheel, UsageError
from tfbuild.host import Gpu, GpuInfo, HostProfile
from tfbuild.matrix import INHERIT_PIP, PipSettings
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
    wheel: Path,
    cache_dir: Path | None,
    refresh: bool = False,
    workers: int | None = None,
    pip_settings: PipSettings = INHERIT_PIP,
) -> dict[str, Any]:
    """The audit report of a wheel, from the cache when this wheel was audited before.

    Device code is listed with cuobjdump, installed into `cache_dir` with `pip_settings` when
    it is not on PATH; a cached report whose device code could not be listed then is listed
    again when cuobjdump can be had now."""
    wheelfile.check_wheel(wheel)
    digest = _digest(wheel, cache_dir)
    cached = cache_path(cache_dir, digest) if cache_dir else None
    device_code = cuobjdump.DeviceCode(cache_dir, pip_settings, retry=refresh)
    if cached is not None and not refresh:
        report = _cached_report(cached, digest)
        if report is not None:
            if _relist_device_code(report, wheel, device_code):
                atomic_write_json(cached, report)
            report["cached"] = True
            return report
    started = time.perf_counter()
    try:
        manifest = wheelfile.embedded_manifest(wheel)
        declared = isa.declared_flags(manifest)
        objects = isa.audit_wheel(wheel, declared, workers, device_code)
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise BadWheel(f"{wheel}: damaged wheel archive ({exc})") from exc
    report = build_report(
        wheel, digest, manifest, objects, time.perf_counter() - started, device_code.describe()
    )
    if cached is not None:
        atomic_write_json(cached, report)
    report["cached"] = False
    return report


def _relist_device_code(
    report: dict[str, Any], wheel: Path, device_code: cuobjdump.DeviceCode
) -> bool:
    """List the device code a cached report could not list (no cuobjdump then) when cuobjdump
    can be had now; True when the report changed."""
    todo = [o for o in report["objects"] if o["cuda"] and not o["cuda"]["checked"]]
    if not todo or isinstance(device_code.tool, str):
        return False
    with (
        zipfile.ZipFile(wheel) as archive,
        tempfile.TemporaryDirectory(prefix="tfbuild-cuda-") as tmp,
    ):
        target = Path(tmp) / "object.so"
        for o in todo:
            with archive.open(o["path"]) as source, target.open("wb") as out:
                shutil.copyfileobj(source, out, 1 << 20)
            o["cuda"] = device_code(target)
    listed = [o["cuda"] for o in report["objects"] if o["cuda"]]
    report["cuda"] = cuda_summary(listed, device_code.describe())
    return True


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
    cuda_tool: dict[str, Any] | None = None,
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
    cuda = cuda_summary([o.cuda for o in objects if o.cuda], cuda_tool)
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


def cuda_summary(
    listed: list[dict[str, Any]], tool: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Every object's device code together: the union of its architectures, the cuobjdump that
    listed them and, when some object could not be listed, why."""
    if not listed:
        return None
    notes = [c["note"] for c in listed if c.get("note")]
    return {
        "objects": len(listed),
        "checked": all(c["checked"] for c in listed),
        "sass": sorted({a for c in listed for a in c["sass"]}, key=cuobjdump.arch_key),
        "ptx": sorted({a for c in listed for a in c["ptx"]}, key=cuobjdump.arch_key),
        "tool": tool,
        "note": notes[0] if notes else None,
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


GPU_FORMS = (
    "an architecture sm_XY (sm_90, sm_90a, sm_120), compute_XY (compute_90) or a compute "
    "capability X.Y (9.0, 12.0)"
)


def gpu_for_arch(value: str, index: int = 0) -> Gpu:
    """A GPU named by its architecture (`--gpu sm_90`): a device of that compute capability.
    An arch-specific name (sm_90a) means the same device as sm_90."""
    text = value.strip().lower()
    if named := re.fullmatch(r"(?:sm|compute)_(\d{2,3})([af]?)", text):
        digits = named.group(1)
        major, minor = int(digits[:-1]), int(digits[-1])
        name = f"sm_{digits}{named.group(2)}"
    elif capability := re.fullmatch(r"(\d{1,2})\.(\d)", text):
        major, minor = int(capability.group(1)), int(capability.group(2))
        name = f"sm_{major}{minor}"
    else:
        raise ValueError(f"{value!r} is not a GPU: give {GPU_FORMS}")
    if major < 1:
        raise ValueError(f"{value!r} is not a GPU: give {GPU_FORMS}")
    return Gpu(index, name, f"{major}.{minor}", "", None)


def with_gpus(target: Target, gpus: Iterable[Gpu]) -> Target:
    """The target with these GPUs instead of the host's (or none)."""
    return dataclasses.replace(target, gpus=GpuInfo(None, tuple(gpus)))


@dataclass(frozen=True)
class WheelVerdict:
    runs: bool | None
    cpu: str
    glibc: str
    cuda: str
    blockers: tuple[str, ...] = ()
    """Why it cannot run, one line per failing part (CPU, glibc, CUDA)."""

    def lines(self) -> list[str]:
        return [self.cpu, f"glibc: {self.glibc}", f"CUDA: {self.cuda}"]


def verdict(report: dict[str, Any], target: Target) -> WheelVerdict:
    needed = set(report["baseline"]["all"])
    missing = cpu.missing_flags(needed, target.flags)
    top = cpu.highest_extension(target.flags)
    required = ", ".join(cpu.display_name(f) for f in report["baseline"]["flags"]) or "x86-64"
    runs: bool | None = True
    blockers: list[str] = []
    if missing:
        names = ", ".join(cpu.display_name(f) for f in isa.minimal(missing))
        cpu_line = f"will crash here: needs {names}; this CPU has up to {top}"
        runs = False
        blockers.append(cpu_line)
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
        blockers.append(f"glibc {glibc_line}")
    on_gpus, cuda_line = cuda_verdict(report["cuda"], target.gpus)
    if on_gpus is False:
        runs = False
        blockers.append(f"CUDA {cuda_line}")
    elif on_gpus is None and runs is True:
        runs = None
    return WheelVerdict(runs, cpu_line, glibc_line, cuda_line, tuple(blockers))


def cuda_verdict(cuda: dict[str, Any] | None, gpus: GpuInfo | None) -> tuple[bool | None, str]:
    """Whether the wheel's device code runs on each GPU: False names the architectures missing,
    None when it cannot be told. A wheel runs on a GPU when it has SASS for the GPU's major at
    or below its minor, or PTX at or below its compute capability (which the driver compiles)."""
    named = [_gpu_label(g) for g in gpus.devices] if gpus else []
    if cuda is None:
        return True, "no device code"
    if not cuda["checked"]:
        line = f"device code present; architectures {cuda.get('note') or 'not checked'}"
        if named:
            return None, f"{line}; whether it runs on {', '.join(named)} is not known"
        return True, line
    built = _built_for(cuda)
    if gpus is None:
        return True, f"the wheel has {built}; no GPU named (--gpu ARCH gives the verdict for one)"
    if not gpus.devices:
        why = f" (nvidia-smi: {gpus.error})" if gpus.error else ""
        return True, f"the wheel has {built}; no NVIDIA GPU here{why}: runs on the CPU only"
    outcomes = [_on_gpu(cuda, g) for g in gpus.devices]
    if all(ok for ok, _ in outcomes):
        return True, f"runs on {'; '.join(text for _, text in outcomes)}; the wheel has {built}"
    failed = [text for ok, text in outcomes if ok is False]
    if failed:
        return False, f"{'; '.join(failed)}; the wheel has {built}"
    unknown = [text for ok, text in outcomes if ok is None]
    return None, f"{'; '.join(unknown)}; the wheel has {built}"


def _built_for(cuda: dict[str, Any]) -> str:
    sass, ptx = ", ".join(cuda["sass"]) or "none", ", ".join(cuda["ptx"]) or "none"
    return f"SASS {sass} and PTX {ptx}"


def _gpu_label(gpu: Gpu) -> str:
    if gpu.name.startswith("sm_") or gpu.compute_capability is None:
        return gpu.name
    return f"{gpu.name} ({gpu.compute_capability})"


def _on_gpu(cuda: dict[str, Any], gpu: Gpu) -> tuple[bool | None, str]:
    from tfbuild.plan import _runs_on

    label, cap = _gpu_label(gpu), gpu.compute_capability
    if cap is None:
        return (
            None,
            f"{label}: the driver does not report its compute capability (nvidia-smi < 510)",
        )
    sass = [a for a in cuda["sass"] if _runs_on(a, cap)]
    if sass:
        return True, f"{label} (SASS {max(sass, key=cuobjdump.arch_key)})"
    ptx = [a for a in cuda["ptx"] if _runs_on(a, cap)]
    if ptx:
        best = max(ptx, key=cuobjdump.arch_key)
        return True, f"{label} (PTX {best}, compiled by the driver on first use)"
    major, _, minor = cap.partition(".")
    wanted = f"sm_{major}0" if minor in ("", "0") else f"sm_{major}0 to sm_{major}{minor}"
    return False, (
        f"no code for {label}: no SASS for {wanted} and no PTX at or below compute_{major}{minor}"
    )


def refuse_if_incompatible(report: dict[str, Any], target: Target, what: str) -> None:
    """Stop before anything is installed when the wheel cannot run on the target."""
    result = verdict(report, target)
    if result.runs is False:
        raise IncompatibleWheel(
            f"{what}: {'; '.join(result.blockers)} (`tfbuild inspect` for details; --force "
            "installs it anyway)"
        )


def verdict_json(result: WheelVerdict, target: Target) -> dict[str, Any]:
    return {"target": target.label, **asdict(result)}
