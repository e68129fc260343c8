"""The verdict on a wheel's audit report for a target: a CPU (this machine, a saved profile or a
named model), its glibc and its GPUs: runs, cannot run (and why), or unproven."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from tfbuild.audit import cuobjdump, isa
from tfbuild.audit.model import AuditReport, CudaSummary
from tfbuild.errors import IncompatibleWheel, UsageError
from tfbuild.machine import cpu
from tfbuild.machine.gpu import runs_on
from tfbuild.machine.profile import Gpu, GpuInfo, HostProfile

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


@dataclass(frozen=True)
class Target:
    """The CPU (and, for a real host, the system) a verdict is for."""

    label: str
    cpu: cpu.CpuModel
    glibc: str | None = None
    gpus: GpuInfo | None = None


def target_for_host(host: HostProfile) -> Target:
    model = host.cpu.isa
    glibc = host.system.glibc if host.system else None
    return Target(f"{model.name} ({model.level_name})", model, glibc, host.gpus)


def target_for_model(model: str) -> Target:
    """A named CPU: a -march name (haswell) or a qemu model (Haswell-v1, penryn), in any
    case."""
    table = cpu.marches()
    base = model.lower() if model.lower() in table else re.sub(r"-v\d+$", "", model).lower()
    qemu = {name.lower(): march for name, march in QEMU_MODELS.items()}
    march = qemu.get(base, base)
    if march not in table:
        from tfbuild.config.values import did_you_mean

        known = sorted(table) + sorted(QEMU_MODELS)
        raise UsageError(
            f"--cpu {model!r}: unknown CPU model (expected a -march name or a qemu model: "
            f"{', '.join(known)})" + did_you_mean(model, known)
        )
    return Target(f"{model} (as -march={march})", cpu.CpuModel.named(march))


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

    def to_json(self, target: str) -> dict[str, Any]:
        """The verdict as `inspect --format json` writes it, naming its target."""
        return {"target": target, **asdict(self)}


def required_flags(report: AuditReport) -> set[str]:
    """Every extension a CPU must have for the wheel: its baseline and what each baseline
    extension implies (AVX brings SSE4.2 and POPCNT), as `tfbuild matrix` counts them."""
    table = {flag.cpuinfo: name for name, flag in cpu.tf_flag_table().items()}
    needed = set(report.needs.every)
    for flag in report.needs.flags:
        if flag in table:
            needed |= cpu.cpuinfo_flags_for([table[flag]])
    return needed


def verdict(report: AuditReport, target: Target) -> WheelVerdict:
    needed = required_flags(report)
    missing = target.cpu.lacks(needed)
    top = target.cpu.widest
    required = ", ".join(cpu.display_name(f) for f in report.needs.flags) or "x86-64"
    runs: bool | None = True
    blockers: list[str] = []
    if missing:
        # every extension the CPU lacks, as `tfbuild matrix` lists them for a plan
        names = ", ".join(cpu.display_name(f) for f in missing)
        cpu_line = f"will crash here: needs {names}; this CPU has up to {top}"
        runs = False
        blockers.append(cpu_line)
    elif unchecked := target.cpu.lacks(report.unchecked):
        names = ", ".join(cpu.display_name(f) for f in isa.minimal(unchecked))
        where = report.unchecked[sorted(unchecked)[0]][0]
        cpu_line = (
            f"unproven: code that runs on load takes the address of code using {names} "
            f"({where}) and the object has no CPU check, so it may call it at once; the rest "
            f"needs {required}, {target.label} has up to {top}; `tfbuild verify --cpu MODEL` "
            "runs the wheel on an emulated CPU"
        )
        runs = None
    elif unreadable := report.unreadable:
        first = unreadable[0]
        cpu_line = (
            f"unproven: {len(unreadable)} ELF object(s) could not be read ({first.path}: "
            f"{first.error}); the rest needs {required}, {target.label} has up to {top}; "
            "`tfbuild verify --cpu MODEL` runs the wheel on an emulated CPU"
        )
        runs = None
    else:
        cpu_line = f"runs here: needs {required}; {target.label} has up to {top}"
    floor = report.glibc
    if floor is None:
        glibc_line = "no versioned glibc symbols needed"
    elif target.glibc is None:
        glibc_line = f"needs {floor} ({report.manylinux}); not known for {target.label}"
    elif version_key(target.glibc) >= version_key(floor):
        glibc_line = f"needs {floor}, this system has {target.glibc}: ok"
    else:
        glibc_line = f"will fail to load: needs {floor}, this system has {target.glibc}"
        runs = False
        blockers.append(f"glibc {glibc_line}")
    on_gpus, cuda_line = cuda_verdict(report.cuda, target.gpus)
    if on_gpus is False:
        runs = False
        blockers.append(f"CUDA {cuda_line}")
    elif on_gpus is None and runs is True:
        runs = None
    return WheelVerdict(runs, cpu_line, glibc_line, cuda_line, tuple(blockers))


def cuda_verdict(cuda: CudaSummary | None, gpus: GpuInfo | None) -> tuple[bool | None, str]:
    """Whether the wheel's device code runs on each GPU: False names the architectures missing,
    None when it cannot be told. A wheel runs on a GPU when it has SASS for the GPU's major at
    or below its minor, or PTX at or below its compute capability (which the driver compiles)."""
    named = [_gpu_label(g) for g in gpus.devices] if gpus else []
    if cuda is None:
        return True, "no device code"
    if not cuda.checked:
        line = f"device code present; architectures {cuda.note or 'not checked'}"
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


def _built_for(cuda: CudaSummary) -> str:
    sass, ptx = ", ".join(cuda.sass) or "none", ", ".join(cuda.ptx) or "none"
    return f"SASS {sass} and PTX {ptx}"


def _gpu_label(gpu: Gpu) -> str:
    if gpu.name.startswith("sm_") or gpu.compute_capability is None:
        return gpu.name
    return f"{gpu.name} ({gpu.compute_capability})"


def _on_gpu(cuda: CudaSummary, gpu: Gpu) -> tuple[bool | None, str]:
    label, cap = _gpu_label(gpu), gpu.compute_capability
    if cap is None:
        return (
            None,
            f"{label}: the driver does not report its compute capability (nvidia-smi < 510)",
        )
    sass = [a for a in cuda.sass if runs_on(a, cap)]
    if sass:
        return True, f"{label} (SASS {max(sass, key=cuobjdump.arch_key)})"
    ptx = [a for a in cuda.ptx if runs_on(a, cap)]
    if ptx:
        best = max(ptx, key=cuobjdump.arch_key)
        return True, f"{label} (PTX {best}, compiled by the driver on first use)"
    major, _, minor = cap.partition(".")
    wanted = f"sm_{major}0" if minor in ("", "0") else f"sm_{major}0 to sm_{major}{minor}"
    return False, (
        f"no code for {label}: no SASS for {wanted} and no PTX at or below compute_{major}{minor}"
    )


def refuse_if_incompatible(report: AuditReport, target: Target, what: str) -> None:
    """Stop before anything is installed when the wheel cannot run on the target."""
    result = verdict(report, target)
    if result.runs is False:
        raise IncompatibleWheel(
            f"{what}: {'; '.join(result.blockers)} (`tfbuild inspect` for details; --force "
            "installs it anyway)"
        )


def version_key(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (version or "0").split(".") if p.isdigit())
