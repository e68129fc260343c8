"""The plan: the selected variants x tunings resolved for one machine, each variant with a
can-it-run verdict. A command makes it once, for the machine it chose, and every stage works
from it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tfbuild.config.model import Matrix, Tuning, Variant
from tfbuild.config.tensorflow import releases, tf_release
from tfbuild.config.values import AS_GIVEN, KNOWN_ENV, XLA_AUTO_FLAGS
from tfbuild.files import digest
from tfbuild.machine import cpu
from tfbuild.machine.profile import GpuInfo, HostProfile, load_profile
from tfbuild.plan.runtimes import Runtimes
from tfbuild.plan.select import select
from tfbuild.plan.target import (
    compiler_flags,
    config_doubt,
    config_refusal,
    cuda_refusal,
    cuda_verdict,
    floor_added,
    required_cpu_flags,
    resolve_march,
    toolchain_refusal,
)

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

    @property
    def build_key(self) -> str | None:
        """What a source build is asked to be, for the planned machine: the variant's
        definition (where it runs aside) and its resolved compiler flags. A build records it
        in its manifest; a stored wheel with another key is not this variant any more."""
        if not self.variant.needs_build:
            return None
        definition = {k: v for k, v in self.variant.definition().items() if k != "runtime"}
        return digest(definition, self.march, list(self.compiler_flags))


@dataclass(frozen=True)
class ResolvedTuning:
    tuning: Tuning
    intra_op: int | None
    inter_op: int | None
    env: tuple[tuple[str, str], ...]

    @property
    def name(self) -> str:
        return self.tuning.name

    @property
    def xla(self) -> str | None:
        return self.tuning.xla

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
    form: str = AS_GIVEN
    """The model form the workload is measured in (tfbuild.config.values.FORMS)."""

    @property
    def key(self) -> str:
        """VARIANT:TUNING, and :FORM for a form other than as-given."""
        return config_key(self.variant.variant.name, self.tuning.name, self.form)


def config_key(variant: str, tuning: str, form: str = AS_GIVEN) -> str:
    return f"{variant}:{tuning}" + ("" if form == AS_GIVEN else f":{form}")


@dataclass(frozen=True)
class Plan:
    matrix: Matrix
    host: HostProfile
    variants: tuple[PlannedVariant, ...]
    tunings: tuple[ResolvedTuning, ...]
    configs: tuple[Config, ...]

    def planned(self, name: str) -> PlannedVariant:
        """The planned variant of this name (or id)."""
        for pv in self.variants:
            if name in (pv.variant.name, pv.variant.id):
                return pv
        raise KeyError(name)

    def without(self, names: Collection[str]) -> Plan:
        """The same plan without these variants and their configs (nothing is planned again)."""
        return replace(
            self,
            variants=tuple(pv for pv in self.variants if pv.variant.name not in names),
            configs=tuple(c for c in self.configs if c.variant.variant.name not in names),
        )

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
                {
                    "key": c.key,
                    "variant": c.variant.variant.name,
                    "tuning": c.tuning.name,
                    "form": c.form,
                }
                for c in self.configs
            ],
            "ci": ci_fanout(self.matrix).to_json(),
        }


NO_GPU = GpuInfo(None)


@dataclass(frozen=True)
class BuildJob:
    """One build job of the nightly: a source variant, built for any runner or for one bench
    runner's CPU (a `march: host` variant), from that runner's saved profile."""

    variant: str
    runner: str
    """"any", or the bench runner's label."""
    profile: str
    """The bench runner's saved profile (a path in the repository); empty for "any"."""


@dataclass(frozen=True)
class Fanout:
    """The nightly's build jobs, the `march: host` variants, the bench runners' saved profiles
    and the source variants it builds for nobody, each with why."""

    builds: tuple[BuildJob, ...]
    host_tuned: tuple[str, ...]
    bench_hosts: Mapping[str, str]
    left_out: Mapping[str, str]

    def include(self) -> list[dict[str, str]]:
        """The build jobs as the workflow's matrix lists them."""
        return [{"variant": b.variant, "for": b.runner, "host": b.profile} for b in self.builds]

    def to_json(self) -> dict[str, Any]:
        return {
            "build": {"include": self.include()},
            "host_tuned": list(self.host_tuned),
            "bench_hosts": dict(self.bench_hosts),
            "left_out": dict(self.left_out),
        }


def ci_fanout(matrix: Matrix, bench_hosts: Mapping[str, str] | None = None) -> Fanout:
    """The CI build fan-out: one job per source variant, built whatever CPU the build runner
    has; a `march: host` variant is built once for each bench runner with a saved profile
    (`bench_hosts`: runner label -> `tfbuild detect --format json` file), for that runner's CPU, and
    the runners without one skip it. A CUDA variant is built only when a bench runner's saved
    profile has a GPU: nothing else could measure it (`left_out` says so)."""
    hosts = dict(bench_hosts or {})
    builds: list[BuildJob] = []
    tuned = []
    left_out: dict[str, str] = {}
    gpus = {r: load_profile(Path(path)).gpus or NO_GPU for r, path in hosts.items()}
    for v in matrix.variants:
        if v.source != "bazel":
            continue
        if v.cuda is not None and not any(cuda_verdict(v.cuda, g)[0] for g in gpus.values()):
            left_out[v.name] = (
                f"a CUDA build ({', '.join(v.cuda.compute_capabilities)}), and no bench runner "
                "has a GPU that runs it to measure it (--bench-host RUNNER=PROFILE with such a "
                "GPU in the profile)"
            )
            continue
        if v.march != "host":
            builds.append(BuildJob(v.name, "any", ""))
            continue
        tuned.append(v.name)
        builds += [BuildJob(v.name, r, path) for r, path in hosts.items()]
    return Fanout(tuple(builds), tuple(tuned), hosts, left_out)


# --------------------------------------------------------------------------------------------
# Selection


# --------------------------------------------------------------------------------------------
# Resolution and verdicts


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
        missing = host.cpu.isa.lacks(required)
        if missing:
            names = ", ".join(cpu.display_name(f) for f in missing)
            fail(f"needs {names}; this CPU has up to {host.cpu.isa.widest}")
    if (refused := toolchain_refusal(variant) or config_refusal(variant)) is not None:
        fail(refused)
    refusal = cuda_refusal(variant)
    if refusal is not None:
        fail(refusal)
    elif variant.cuda is not None:
        ok, why = cuda_verdict(variant.cuda, host.gpus)
        if ok is not True and why:
            fail(why, ok)
    known = releases()
    release = tf_release(variant.tf_minor or "")
    if release is None and variant.source == "pypi" and variant.tensorflow:
        fail(
            f"TensorFlow {variant.tensorflow} is no release tfbuild has facts for (it knows "
            f"{known[0].minor}.x to {known[-1].minor}.x): whether the "
            "package index has it is known when it is fetched (`tfbuild fetch`)",
            None,
        )
    if release is not None:
        low, high = release.python
        if not release.builds_for(variant.python):
            fail(
                f"TensorFlow {variant.tf_minor} has no wheels for Python {variant.python} "
                f"(supports {low} to {high})"
            )
    if where is not None and (refusal := where.python_refusal(variant)) is not None:
        fail(refusal)
    if variant.march == "native":
        reasons.append("-march=native ties the wheel to the CPU of the machine that builds it")
    if added := floor_added(variant, host).asked:
        names = ", ".join(cpu.display_name(f) for f in added)
        them = "it" if len(added) == 1 else "them"
        reasons.append(f"{names} added: TensorFlow {variant.tf_minor}'s own wheels have {them}")
    if (doubt := config_doubt(variant)) is not None:
        reasons.append(doubt)
    if variant.source == "bazel" and release is not None and release.verify:
        reasons.append(
            f"TensorFlow {variant.tf_minor}'s build facts are not confirmed from a release tag: "
            "the build reads the tree's .bazelversion and .bazelrc before bazel starts"
        )
    return Verdict(runs, tuple(reasons))


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
    if tuning.xla == "auto":  # clusters for XLA on the CPU too, not only on GPUs
        env += (("TF_XLA_FLAGS", XLA_AUTO_FLAGS),)
    return ResolvedTuning(tuning, count(tuning.intra_op), count(tuning.inter_op), env)


def make_plan(
    matrix: Matrix,
    host: HostProfile,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    runtimes: Runtimes | None = None,
    *,
    opt_in: Sequence[str] = (),
) -> Plan:
    """The selected configs resolved for `host`. `runtimes` (runtimes_here) also judges whether
    each variant's Python can run in the runtime it gets here."""
    picked = select(matrix, only, skip, opt_in)
    planned: dict[str, PlannedVariant] = {}
    resolved: dict[str, ResolvedTuning] = {}
    for variant, tuning, _ in picked:
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
    configs = tuple(Config(planned[v.name], resolved[t.name], form) for v, t, form in picked)
    return Plan(
        matrix=matrix,
        host=host,
        variants=tuple(planned.values()),
        tunings=tuple(resolved.values()),
        configs=configs,
    )
