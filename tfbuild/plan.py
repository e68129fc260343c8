"""Plan: the selected variants x tunings, resolved for one host, each with a can-it-run verdict.

Selection patterns are fnmatch patterns over variant names (or ids), optionally with a tuning
part: ``mkl-*`` selects every config of the matching variants, ``stock:single-*`` only some
tunings of one variant.
"""

from __future__ import annotations

import fnmatch
import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tfbuild import cpu, wheelfile
from tfbuild.errors import EngineUnavailable, SelectionError
from tfbuild.host import RUNNING_PYTHON, GpuInfo, HostProfile, find_python
from tfbuild.matrix import KNOWN_ENV, Cuda, Matrix, Tuning, Variant
from tfbuild.resources import load_table
from tfbuild.runtime import runtime_kind

PLAN_SCHEMA = "tfbuild.plan/1"


@dataclass(frozen=True)
class Verdict:
    """Whether a variant can run on a host: True, False, or None when it cannot be told yet."""

    runs: bool | None
    reasons: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        label = {True: "yes", False: "no", None: "unknown"}[self.runs]
        return f"{label}: {'; '.join(self.reasons)}" if self.reasons else label


@dataclass(frozen=True)
class PlannedVariant:
    variant: Variant
    verdict: Verdict
    march: str | None
    """The -march value after resolving ``host`` to this host's closest safe name."""
    compiler_flags: tuple[str, ...]
    """-m/-march/-O options for --copt, in order: cpu_flags, march, copts."""
    required_flags: frozenset[str] | None
    """cpuinfo flags the build needs at run time; None when only an inspection can tell."""


@dataclass(frozen=True)
class ResolvedTuning:
    tuning: Tuning
    intra_op: int | None
    inter_op: int | None
    env: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return self.tuning.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "intra_op": self.intra_op,
            "inter_op": self.inter_op,
            "env": dict(self.env),
            "declared": self.tuning.definition(),
        }


@dataclass(frozen=True)
class Config:
    variant: PlannedVariant
    tuning: ResolvedTuning

    @property
    def key(self) -> str:
        return f"{self.variant.variant.name}:{self.tuning.name}"


@dataclass(frozen=True)
class Plan:
    matrix: Matrix
    host: HostProfile
    variants: tuple[PlannedVariant, ...]
    tunings: tuple[ResolvedTuning, ...]
    configs: tuple[Config, ...]

    def to_json(self) -> dict[str, Any]:
        h = self.host
        return {
            "schema": PLAN_SCHEMA,
            "matrix": str(self.matrix.path),
            "host": {
                "source": h.source,
                "hostname": h.hostname,
                "cpu": h.cpu.model_name,
                "isa_level": cpu.level_name(h.cpu.level),
                "march": h.cpu.march.name if h.cpu.march else None,
            },
            "baseline": {
                "variant": self.matrix.baseline.variant,
                "tuning": self.matrix.baseline.tuning,
            },
            "variants": [
                {
                    **pv.variant.definition(),
                    "resolved_march": pv.march,
                    "compiler_flags": list(pv.compiler_flags),
                    "required_cpu_flags": (
                        sorted(pv.required_flags) if pv.required_flags is not None else None
                    ),
                    "runs_here": pv.verdict.runs,
                    "reasons": list(pv.verdict.reasons),
                }
                for pv in self.variants
            ],
            "tunings": [t.to_json() for t in self.tunings],
            "configs": [
                {"key": c.key, "variant": c.variant.variant.name, "tuning": c.tuning.name}
                for c in self.configs
            ],
            "ci": ci_fanout(self.matrix),
        }


def ci_fanout(matrix: Matrix, bench_hosts: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The CI build fan-out: one job per source variant, built whatever CPU the build runner
    has; a `march: host` variant is built once for each bench runner with a saved profile
    (`bench_hosts`: runner label -> `tfbuild detect --json` file), for that runner's CPU, and
    the runners without one skip it."""
    hosts = dict(bench_hosts or {})
    include: list[dict[str, str]] = []
    tuned = []
    for v in matrix.variants:
        if v.source != "bazel":
            continue
        if v.march != "host":
            include.append({"variant": v.name, "for": "any", "host": ""})
            continue
        tuned.append(v.name)
        include += [{"variant": v.name, "for": r, "host": path} for r, path in hosts.items()]
    return {"build": {"include": include}, "host_tuned": tuned, "bench_hosts": hosts}


# --------------------------------------------------------------------------------------------
# Selection


def _matches(pattern: str, variant: Variant, tuning: Tuning) -> bool:
    variant_part, _, tuning_part = pattern.partition(":")
    if not (
        fnmatch.fnmatchcase(variant.name, variant_part)
        or fnmatch.fnmatchcase(variant.id, variant_part)
    ):
        return False
    return not tuning_part or fnmatch.fnmatchcase(tuning.name, tuning_part)


def select(
    matrix: Matrix, only: Sequence[str] = (), skip: Sequence[str] = ()
) -> list[tuple[Variant, Tuning]]:
    """The (variant, tuning) pairs picked by --only / --skip, in matrix order."""
    pairs = [
        (v, t)
        for v in matrix.variants
        for t in matrix.tunings
        if (not only or any(_matches(p, v, t) for p in only))
        and not any(_matches(p, v, t) for p in skip)
    ]
    if not pairs:
        given = " ".join([*(f"--only {p!r}" for p in only), *(f"--skip {p!r}" for p in skip)])
        raise SelectionError(
            f"{given} selects nothing in {matrix.path} "
            f"(variants: {', '.join(v.name for v in matrix.variants)}; "
            f"tunings: {', '.join(t.name for t in matrix.tunings)}); "
            "patterns are VARIANT or VARIANT:TUNING, with * and ? wildcards"
        )
    return pairs


# --------------------------------------------------------------------------------------------
# Resolution and verdicts


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


def _cuda_verdict(cuda: Cuda, gpus: GpuInfo | None) -> tuple[bool | None, str | None]:
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
        if any(_runs_on(cap, gpu.compute_capability) for cap in cuda.compute_capabilities):
            return True, None
    if unknown:
        return None, "the driver does not report GPU compute capability (nvidia-smi < 510)"
    have = ", ".join(f"{g.name} ({g.compute_capability})" for g in gpus.devices)
    return False, f"built for {wanted}; this host has {have}"


def _runs_on(capability: str, device: str) -> bool:
    """sm_XY runs on GPUs of major X with minor >= Y; compute_XY (PTX) on any GPU >= X.Y."""
    kind, _, number = capability.partition("_")
    arch_specific = number.endswith(("a", "f"))
    digits = number.rstrip("af")
    major, minor = int(digits[:-1]), int(digits[-1])
    dev_major, _, dev_minor_text = device.partition(".")
    dev = (int(dev_major), int(dev_minor_text or 0))
    if arch_specific:
        return dev == (major, minor)
    if kind == "compute":
        return dev >= (major, minor)
    return dev[0] == major and dev[1] >= minor


ImageProbe = Callable[[str, str], "tuple[tuple[str, ...], bool] | None"]
"""(image, X.Y) -> the CPython versions the image has, and whether its apt sources offer X.Y;
None when that cannot be told (engine.image_pythons)."""


@dataclass(frozen=True)
class Runtimes:
    """Where this machine runs each variant, for the Python its wheel needs: a local venv from
    an interpreter found here, or a container of the runtime image, which has that Python or
    installs it from its own apt sources."""

    choice: str
    """--runtime: auto, local or docker."""
    engine_reachable: bool
    image: str
    probe: ImageProbe | None
    """Asks the runtime image; None when no engine answers (nothing to ask)."""

    def python_refusal(self, variant: Variant) -> str | None:
        pythons = _runtime_pythons(variant)
        if not pythons:
            return None
        try:
            kind = runtime_kind(variant, self.choice, self.engine_reachable)
        except EngineUnavailable:
            return None  # the bench refuses it with what to do
        if kind == "docker":
            return self._image_refusal(pythons)
        if any(find_python(p) for p in pythons):
            return None
        return (
            f"needs Python {' or '.join(pythons)}; tfbuild runs on Python {RUNNING_PYTHON} and "
            f"there is no python{pythons[0]} on PATH or in pyenv for a local runtime"
        )

    def _image_refusal(self, pythons: Sequence[str]) -> str | None:
        if self.probe is None:
            return None
        have: tuple[str, ...] = ()
        for python in pythons:
            found = self.probe(self.image, python)
            if found is None:
                return None  # cannot be told; the runtime install says what is wrong
            have, from_apt = found
            if python in have or from_apt:
                return None
        return (
            f"needs Python {' or '.join(pythons)}; the runtime image {self.image} has "
            f"{'Python ' + ', '.join(have) if have else 'no Python'} and its apt sources have "
            f"no python{pythons[0]}; use a base image of a distribution release that has it, "
            "or --runtime local"
        )


def runtimes_here(matrix: Matrix, host: HostProfile, choice: str = "auto") -> Runtimes | None:
    """This machine's runtimes, for a live host profile (None for another machine's: its
    interpreters and engine are not known here). The runtime image is asked through the engine,
    once per (image, Python)."""
    if not host.is_live:
        return None
    reachable = host.docker is not None and host.docker.reachable
    probe: ImageProbe | None = None
    if reachable:
        from tfbuild import engine

        probe = functools.cache(engine.image_pythons)
    return Runtimes(choice, reachable, matrix.defaults.base_images.runtime, probe)


def verdict(
    variant: Variant,
    host: HostProfile,
    required: frozenset[str] | None,
    where: Runtimes | None = None,
) -> Verdict:
    runs: bool | None = True
    reasons: list[str] = []

    def fail(reason: str, outcome: bool | None = False) -> None:
        nonlocal runs
        if outcome is False or runs is True:
            runs = outcome
        reasons.append(reason)

    if variant.source == "wheel" and variant.path is not None and not variant.path.is_file():
        fail(f"wheel file not found: {variant.path}")
    if required is None:
        fail("instruction sets not known until `tfbuild inspect` reads the wheel", None)
    else:
        missing = cpu.missing_flags(required, host.cpu.flags)
        if missing:
            names = ", ".join(cpu.display_name(f) for f in missing)
            fail(f"needs {names}; this CPU has up to {cpu.highest_extension(host.cpu.flags)}")
    refusal = cuda_refusal(variant)
    if refusal is not None:
        fail(refusal)
    elif variant.cuda is not None:
        ok, why = _cuda_verdict(variant.cuda, host.gpus)
        if ok is not True and why:
            fail(why, ok)
    release = load_table("tensorflow")["releases"].get(variant.tf_minor or "")
    if release is not None:
        low, high = release["python"]
        py = tuple(int(p) for p in variant.python.split("."))
        if (
            not tuple(int(p) for p in low.split("."))
            <= py
            <= tuple(int(p) for p in high.split("."))
        ):
            fail(
                f"TensorFlow {variant.tf_minor} has no wheels for Python {variant.python} "
                f"(supports {low} to {high})"
            )
    if where is not None and (refusal := where.python_refusal(variant)) is not None:
        fail(refusal)
    if variant.march == "native":
        reasons.append("-march=native ties the wheel to the CPU of the machine that builds it")
    return Verdict(runs, tuple(reasons))


def _runtime_pythons(variant: Variant) -> list[str]:
    """The CPython versions a runtime needs for the variant's wheel: a source build's `python`,
    a local wheel's tags (none for a pure py3 wheel); index wheels follow tfbuild's own."""
    if variant.source == "bazel":
        return [variant.python]
    if variant.source == "wheel" and variant.path is not None:
        return wheelfile.cpython_versions(variant.path.name)
    return []


def resolve_tuning(tuning: Tuning, host: HostProfile) -> ResolvedTuning:
    def count(value: int | str | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        return host.thread_count(value)

    env = tuple(
        (
            name,
            str(count(value))
            if KNOWN_ENV.get(name) == "threads" and not value.isdigit()
            else value,
        )
        for name, value in tuning.env
    )
    return ResolvedTuning(tuning, count(tuning.intra_op), count(tuning.inter_op), env)


def make_plan(
    matrix: Matrix,
    host: HostProfile,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    runtimes: Runtimes | None = None,
) -> Plan:
    """The selected configs resolved for `host`. `runtimes` (runtimes_here) also judges whether
    each variant's Python can run in the runtime it gets here."""
    pairs = select(matrix, only, skip)
    planned: dict[str, PlannedVariant] = {}
    resolved: dict[str, ResolvedTuning] = {}
    for variant, tuning in pairs:
        if variant.name not in planned:
            required = required_cpu_flags(variant, host)
            planned[variant.name] = PlannedVariant(
                variant=variant,
                verdict=verdict(variant, host, required, runtimes),
                march=resolve_march(variant, host),
                compiler_flags=compiler_flags(variant, host),
                required_flags=required,
            )
        if tuning.name not in resolved:
            resolved[tuning.name] = resolve_tuning(tuning, host)
    configs = tuple(Config(planned[v.name], resolved[t.name]) for v, t in pairs)
    return Plan(
        matrix=matrix,
        host=host,
        variants=tuple(planned.values()),
        tunings=tuple(resolved.values()),
        configs=configs,
    )
