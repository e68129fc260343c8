"""What a variant asks of the machine it is planned for: the resolved -march, the compiler
flags, the CPU flags its code needs at run time, the CUDA builds tfbuild refuses and whether a
machine's GPUs run a CUDA variant."""

from __future__ import annotations

import re

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tfbuild.config.model import Cuda, Variant
from tfbuild.config.tensorflow import (
    config_span,
    distribution_floor,
    floor_flags,
    inferred_lack,
    lacking_config,
    releases,
    tf_release,
)
from tfbuild.machine import cpu
from tfbuild.machine.gpu import runs_on
from tfbuild.machine.profile import GpuInfo, HostProfile


def resolve_march(variant: Variant, host: HostProfile) -> str | None:
    if variant.march == "host":
        return host.cpu.march.name if host.cpu.march else None
    return variant.march


def compiler_flags(variant: Variant, host: HostProfile) -> tuple[str, ...]:
    """The -m options of the extensions the variant names, its -march, the -m options of
    TensorFlow's floor it is given (floor_added), then its own copts."""
    named = cpu.CpuModel.from_tf_names(variant.name, variant.cpu_flags)
    march = resolve_march(variant, host)
    marched = (f"-march={march}",) if march else ()
    return (*named.copts(), *marched, *floor_added(variant, host).copts(), *variant.copts)


def named_cpu(variant: Variant, host: HostProfile) -> cpu.CpuModel:
    """The CPU a source variant's own definition names: the extensions of its cpu_flags and of
    the -m options among its copts (with what they imply), and every one its -march may emit
    (march: host is the host's closest -march; native, what the host has)."""
    model = cpu.CpuModel.from_tf_names(variant.name, variant.cpu_flags)
    model |= cpu.CpuModel.from_copts(variant.name, variant.copts)
    march = resolve_march(variant, host)
    if march == "native":
        model |= host.cpu.isa.native()
    elif march is not None:
        model |= cpu.CpuModel.built_for(march)
    return model


def release_floor(variant: Variant) -> cpu.CpuModel:
    """TensorFlow's own wheels of the variant's release as a build: its --config=avx_linux
    asks for AVX, and F16C from 2.21 on."""
    name = f"TensorFlow {variant.tf_minor}'s wheels"
    return cpu.CpuModel.from_tf_names(name, floor_flags(variant.tensorflow))


def floor_added(variant: Variant, host: HostProfile) -> cpu.CpuModel:
    """The extensions of TensorFlow's own CPU floor for the variant's release (its avx_linux:
    AVX, and F16C from 2.21) that a source variant naming its own instruction sets would not
    get from them, as a build asking for them (for none when nothing is added): added to its
    flags, so that no custom build is below the stock wheel. A variant that names none gets
    --config=avx_linux itself (plain_cpu). A build for the machine itself (march: host or
    native) is the exception where that machine lacks an extension of the floor: below the
    stock wheel is then the only build that runs there."""
    if variant.source != "bazel" or plain_cpu(variant):
        return cpu.CpuModel.asking(variant.name, ())
    floor = release_floor(variant)
    added = named_cpu(variant, host).lacks(floor.asked)
    if variant.march in ("host", "native"):
        added = [f for f in added if host.cpu.isa.runs([f])]
    return cpu.CpuModel.asking(floor.name, added)


def target_cpu(variant: Variant, host: HostProfile) -> cpu.CpuModel:
    """The CPU a source variant's code is built for: what its definition names (named_cpu),
    with TensorFlow's floor where it names no instruction set (--config=avx_linux) and the
    part of it that the floor adds otherwise (floor_added)."""
    model = named_cpu(variant, host) | floor_added(variant, host)
    if plain_cpu(variant):
        model |= release_floor(variant)
    return model


def required_cpu_flags(variant: Variant, host: HostProfile) -> frozenset[str] | None:
    """cpuinfo flags a variant needs at run time, as far as its definition tells: a source
    build's, its target CPU's; a distribution's, what it is declared to need beyond x86-64."""
    if variant.source == "wheel":
        return None
    if variant.source == "pypi":
        assert variant.requirement is not None
        project = canonicalize_name(Requirement(variant.requirement).name)
        if (known := distribution_floor(project)) is None:
            return None
        return cpu.CpuModel.from_tf_names(project, known).beyond_baseline
    return target_cpu(variant, host).flags


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
    release = tf_release(variant.tf_minor or "")
    assert release is not None  # the matrix refuses a source build of an unknown release
    era = release.era
    blackwell = [c for c in variant.cuda.compute_capabilities if _major(c) >= 10]
    if era.cuda and blackwell:
        return (
            f"variant {variant.name!r}: {', '.join(blackwell)} (Blackwell) is built by TensorFlow "
            "with nvcc and CUDA 13 (--config=cuda13_version --config=cuda_nvcc, "
            "ci/official/envs/linux_x86_cuda13_nvcc), because the hermetic clang that tfbuild "
            "builds CUDA with rejects those architectures; tfbuild does not build that path: "
            "ask for compute_90 instead (its PTX is compiled for a Blackwell GPU when loaded), "
            "or use the `tensorflow` wheel from the package index"
        )
    if era.cuda:
        return None
    first = next(r.minor for r in releases() if r.era.cuda)
    return (
        f"variant {variant.name!r}: CUDA builds need TensorFlow >= {first} here "
        f"(got {variant.tensorflow}): {era.cuda_refusal}; build TensorFlow {first} or "
        "newer (hermetic CUDA), or use the `tensorflow` wheel from the package index"
    )


def recipe_refusal(variant: Variant) -> str | None:
    """Why no recipe builds this source variant (a retired toolchain, a --config its release
    lacks, a CUDA build tfbuild does not make); None when one does."""
    return toolchain_refusal(variant) or config_refusal(variant) or cuda_refusal(variant)


def toolchain_refusal(variant: Variant) -> str | None:
    """Why a source variant's release cannot be built any more: its era's compiler is retired
    (tfbuild/data/tensorflow.yaml `compilers`), with what to do instead; None when it can."""
    if variant.source != "bazel" or not variant.tf_minor:
        return None
    release = tf_release(variant.tf_minor)
    retired = release.compiler.retired if release is not None else None
    if not retired:
        return None
    newer = [r.minor for r in releases() if not r.compiler.retired]
    return (
        f"variant {variant.name!r}: TensorFlow {variant.tf_minor} is retired here: "
        f"{' '.join(retired.split())}; build TensorFlow {newer[0]} or newer, or use "
        f"the TensorFlow {variant.tf_minor} wheel from the package index"
    )


def config_refusal(variant: Variant) -> str | None:
    """Why a source variant asks for a --config its TensorFlow release does not define, and
    what to use instead (tfbuild/data/tensorflow.yaml `configs`); None when every one is
    defined. The tree's own .bazelrc has the last word: the preflight reads it before bazel."""
    if variant.source != "bazel" or not variant.tensorflow:
        return None
    lacking = lacking_config(variant.configs, variant.tensorflow, read_only=True)
    if lacking is None:
        return None
    name, limits = lacking
    span = config_span(name)
    instead = f": {span.instead}" if span is not None and span.instead else ""
    return (
        f"variant {variant.name!r}: TensorFlow {variant.tensorflow} has no "
        f"--config={name} (its .bazelrc defines it {limits}){instead}"
    )


def config_doubt(variant: Variant) -> str | None:
    """A --config the variant's release is taken to lack without its tree being read (it is
    gone from master after the last release known to define it): a warning, not a refusal,
    since the build's preflight reads the tree's .bazelrc before bazel starts."""
    if variant.source != "bazel" or not variant.tensorflow:
        return None
    doubt = inferred_lack(variant.configs, variant.tensorflow)
    if doubt is None:
        return None
    name, until = doubt
    return (
        f"--config={name} is probably gone from TensorFlow {variant.tf_minor} (master lost it "
        f"after {until}; this release's .bazelrc is not read here): the build's preflight "
        "reads the tree and stops before bazel if it is"
    )


def _major(capability: str) -> int:
    """The major version of a compute capability: 12 for sm_120, 9 for compute_90 or sm_90a."""
    digits = re.search(r"_(\d+)", capability)
    return int(digits.group(1)[:-1]) if digits else 0


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
