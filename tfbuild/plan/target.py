"""What a variant asks of the machine it is planned for: the resolved -march, the compiler
flags, the CPU flags its code needs at run time, the CUDA builds tfbuild refuses and whether a
machine's GPUs run a CUDA variant."""

from __future__ import annotations

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tfbuild.config.model import Cuda, Variant
from tfbuild.machine import cpu
from tfbuild.machine.gpu import runs_on
from tfbuild.machine.profile import GpuInfo, HostProfile
from tfbuild.resources import load_table


def resolve_march(variant: Variant, host: HostProfile) -> str | None:
    if variant.march == "host":
        return host.cpu.march.name if host.cpu.march else None
    return variant.march


def compiler_flags(variant: Variant, host: HostProfile) -> tuple[str, ...]:
    march = resolve_march(variant, host)
    flags = cpu.copts_for(variant.cpu_flags)
    if march:
        flags.append(f"-march={march}")
    return (*flags, *variant.copts)


def required_cpu_flags(variant: Variant, host: HostProfile) -> frozenset[str] | None:
    """cpuinfo flags a variant needs at run time, as far as its definition tells."""
    if variant.source == "wheel":
        return None
    if variant.source == "pypi":
        assert variant.requirement is not None
        project = canonicalize_name(Requirement(variant.requirement).name)
        known = load_table("tensorflow")["distributions"].get(project)
        return frozenset(cpu.cpuinfo_flags_for(known["cpu_flags"])) if known else None
    needed = set(cpu.level_flags()[0])
    needed |= cpu.cpuinfo_flags_for(variant.cpu_flags)
    if plain_cpu(variant):
        needed |= cpu.cpuinfo_flags_for(["avx"])  # --config=avx_linux
    by_copt = {flag.copt: name for name, flag in cpu.tf_flag_table().items()}
    needed |= cpu.cpuinfo_flags_for(by_copt[c] for c in variant.copts if c in by_copt)
    march = resolve_march(variant, host)
    if march == "native":
        needed |= host.cpu.flags & set().union(*(m.flags for m in cpu.marches().values()))
    elif march is not None:
        needed |= cpu.marches()[march].flags
    return frozenset(needed)


def plain_cpu(variant: Variant) -> bool:
    """A source build that asks for no instruction set: it gets TensorFlow's own wheel
    baseline (--config=avx_linux), not the bare x86-64 one."""
    return (
        variant.source == "bazel"
        and not variant.cpu_flags
        and variant.march is None
        and not any(c.startswith("-m") for c in variant.copts)
    )


def cuda_refusal(variant: Variant) -> str | None:
    """Why tfbuild cannot build this CUDA variant, and what works instead; None when it can."""
    if variant.cuda is None or variant.source != "bazel":
        return None
    table = load_table("tensorflow")
    facts = table["eras"][table["releases"][variant.tf_minor or ""]["era"]]
    if facts["cuda"]:
        return None
    first = min(
        (m for m, r in table["releases"].items() if table["eras"][r["era"]]["cuda"]),
        key=lambda m: tuple(int(p) for p in m.split(".")),
    )
    return (
        f"variant {variant.name!r}: CUDA builds need TensorFlow >= {first} here "
        f"(got {variant.tensorflow}): {facts['cuda_refusal']}; build TensorFlow {first} or "
        "newer (hermetic CUDA), or use the `tensorflow` wheel from the package index"
    )


def cuda_verdict(cuda: Cuda, gpus: GpuInfo | None) -> tuple[bool | None, str | None]:
    wanted = ", ".join(cuda.compute_capabilities)
    if gpus is None:
        return None, f"needs an NVIDIA GPU ({wanted}); this host profile has no GPU information"
    if not gpus.devices:
        why = f" (nvidia-smi: {gpus.error})" if gpus.error else ""
        return False, f"needs an NVIDIA GPU ({wanted}); none found{why}"
    unknown = False
    for gpu in gpus.devices:
        if gpu.compute_capability is None:
            unknown = True
            continue
        if any(runs_on(cap, gpu.compute_capability) for cap in cuda.compute_capabilities):
            return True, None
    if unknown:
        return None, "the driver does not report GPU compute capability (nvidia-smi < 510)"
    have = ", ".join(f"{g.name} ({g.compute_capability})" for g in gpus.devices)
    return False, f"built for {wanted}; this host has {have}"
