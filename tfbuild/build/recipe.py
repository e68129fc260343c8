"""How one source variant is built: the facts of its TensorFlow era, as data for the templates.

A Recipe is everything a Dockerfile template needs, resolved and validated: the base image, the
compiler and bazel versions, where the source comes from, the bazel command line (configs,
copts, host copts, repo_env, caches, remote flags) and the configure environment. Templates
only lay these values out; they make no decisions of their own.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tfbuild.config.model import Defaults, Variant
from tfbuild.config.tensorflow import Release, bazelisk, source_repository, source_tag, tf_release
from tfbuild.errors import UsageError
from tfbuild.machine import cpu
from tfbuild.machine.profile import HostProfile
from tfbuild.plan.make import PlannedVariant
from tfbuild.plan.target import floor_added, plain_cpu, recipe_refusal

CACHE_MOUNT = "/cache"
SOURCE_DIR = "/src"
OUT_DIR = "/out"
REMOTE_HEADER_ENV = "TFBUILD_BAZEL_REMOTE_HEADER"


@dataclass(frozen=True)
class Source:
    """Where the TensorFlow tree comes from: a shallow clone of a tag, or a local tree."""

    kind: str  # "git" or "local"
    url: str | None = None
    ref: str | None = None
    path: Path | None = None
    revision: str | None = None
    """For a local tree: its git commit (with "-dirty" when modified), or a content digest."""

    def describe(self) -> str:
        if self.kind == "git":
            return f"{self.url}@{self.ref}"
        return f"{self.path} ({self.revision})"


@dataclass(frozen=True)
class Recipe:
    variant: Variant
    release: Release
    tensorflow: str
    python: str
    bazel_version: str
    base_image: str
    source: Source
    configs: tuple[str, ...]
    copts: tuple[str, ...]
    host_copts: tuple[str, ...]
    bazel_args: tuple[str, ...]
    configure_env: tuple[tuple[str, str], ...]
    wheel_name: str
    local_label: str
    cache_volume: str
    ca_bundle: bool
    notes: tuple[str, ...] = field(default=())

    @property
    def era(self) -> str:
        return self.release.era.name

    @property
    def compiler(self) -> str:
        return self.release.compiler.name

    @property
    def needs_compiler(self) -> bool:
        return self.release.era.configure or self.release.era.local_cc

    @property
    def target(self) -> str:
        return self.release.era.target

    @property
    def bazel_command(self) -> list[str]:
        return ["bazel", "build", *self.bazel_args, self.target]

    def template_context(self) -> dict[str, Any]:
        """Everything the templates may use, as plain data."""
        return {
            "variant": self.variant.definition(),
            "era": self.era,
            "era_facts": dict(self.release.era.table),
            "tensorflow": self.tensorflow,
            "python": self.python,
            "bazel_version": self.bazel_version,
            "bazelisk": dict(bazelisk()),
            "compiler": self.compiler,
            "compiler_facts": dict(self.release.compiler.table),
            "needs_compiler": self.needs_compiler,
            "base_image": self.base_image,
            "source": {**asdict(self.source), "path": str(self.source.path or "")},
            "configs": list(self.configs),
            "copts": list(self.copts),
            "host_copts": list(self.host_copts),
            "bazel_command": self.bazel_command,
            "bazel_args": list(self.bazel_args),
            "target": self.target,
            "configure_env": dict(self.configure_env),
            "wheel_name": self.wheel_name,
            "local_label": self.local_label,
            "cache_dir": CACHE_MOUNT,
            "cache_volume": self.cache_volume,
            "cache_id": cache_id(self.cache_volume),
            "source_dir": SOURCE_DIR,
            "out_dir": OUT_DIR,
            "ca_bundle": self.ca_bundle,
            "remote_header_env": REMOTE_HEADER_ENV,
        }


def local_label(variant: Variant) -> str:
    """PEP 440 local version label naming the variant: mkl-avx2 -> mkl.avx2."""
    return variant.name.replace("-", ".").replace("_", ".")


def cache_id(cache: str) -> str:
    """The BuildKit cache id for the bazel cache: the volume's name, or for a host folder (which
    a cache mount cannot bind) a name derived from its path."""
    if not cache.startswith("/"):
        return cache
    return "tfbuild-bazel-cache-" + hashlib.sha256(cache.encode()).hexdigest()[:12]


def local_source(path: Path) -> Source:
    """A local TensorFlow tree: identified by its git commit, or a digest of its files."""
    if (
        not (path / "WORKSPACE").exists()
        and not (path / "MODULE.bazel").exists()
        and not (path / "setup.py").exists()
    ):
        raise UsageError(f"--tf-source {path}: not a TensorFlow source tree (no WORKSPACE)")
    head = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    )
    if head.returncode == 0:
        dirty = subprocess.run(
            ["git", "-C", str(path), "status", "--porcelain"],
            capture_output=True, text=True, check=False,
        ).stdout  # fmt: skip
        revision = head.stdout.strip() + (
            "-dirty-" + hashlib.sha256(dirty.encode()).hexdigest()[:12] if dirty.strip() else ""
        )
    else:
        digest = hashlib.sha256()
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            stat = item.stat()
            digest.update(
                f"{item.relative_to(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode()
            )
        revision = "files-" + digest.hexdigest()[:16]
    return Source(kind="local", path=path.resolve(), revision=revision)


def make_recipe(
    planned: PlannedVariant,
    defaults: Defaults,
    host: HostProfile,
    tf_source: Path | None = None,
    ca_bundle: bool = False,
) -> Recipe:
    """Resolve a planned bazel variant into a recipe: its -march, compiler flags and the CPU
    flags it needs, as the plan resolved them for the machine it is built for (`host`, the
    plan's machine)."""
    variant = planned.variant
    if variant.source != "bazel" or variant.tensorflow is None:
        raise UsageError(f"variant {variant.name!r} is not built from source")
    minor = variant.tf_minor or ""
    release = tf_release(minor)
    if release is None:
        raise UsageError(f"variant {variant.name!r}: no build recipe for TensorFlow {minor}")
    facts, compiler = release.era, release.compiler
    if (refusal := recipe_refusal(variant)) is not None:
        raise UsageError(refusal)
    notes: list[str] = []
    if release.verify:
        notes.append(
            f"TensorFlow {minor} facts are not confirmed from a release tag; the build preflight "
            "checks .bazelversion and .bazelrc before bazel starts"
        )

    flags = list(planned.compiler_flags)
    warnings = facts.warning_copts
    copts = (*flags, *warnings)
    required = planned.required_flags or frozenset()
    missing = host.cpu.isa.lacks(required)
    march = planned.march
    elsewhere = host.source == "saved"  # `build --host`: the wheel is for another machine
    if march == "native" and elsewhere:
        raise UsageError(
            f"variant {variant.name!r}: march: native builds for the CPU of the build machine, "
            f"not for the saved profile given (--host); use march: host to build for it"
        )
    if not elsewhere and (march == "native" or not missing):
        host_copts = copts
    elif elsewhere:
        # Build tools run on this machine, whatever the wheel is for: TF's defaults there.
        host_copts = warnings
        notes.append(
            "--host_copt left out: the wheel is built for another machine "
            f"({host.cpu.model_name}); build tools run here with TensorFlow's defaults"
        )
    else:
        # Build tools run on the build machine: they keep TensorFlow's defaults there.
        host_copts = warnings
        notes.append(
            "--host_copt left out: the build machine lacks "
            + ", ".join(cpu.display_name(f) for f in missing)
        )

    if added := floor_added(variant, host).asked:
        floor = ", ".join(cpu.display_name(f) for f in added)
        notes.append(
            f"{floor} added: TensorFlow {minor}'s own wheels are built with "
            f"{'it' if len(added) == 1 else 'them'} (--config=avx_linux), and no variant is built "
            "below that floor"
        )
    configs = list(variant.configs)
    floor_configs = facts.floor_configs if plain_cpu(variant) else ()
    for extra in [*facts.extra_configs, *floor_configs]:
        if extra not in configs:
            configs.append(extra)
    cuda = variant.cuda
    if cuda is not None and not any(c.startswith("cuda") for c in configs):
        configs += list(facts.cuda_configs)
    elif cuda is not None and "cuda_wheel" in facts.cuda_configs and "cuda_wheel" not in configs:
        configs.append("cuda_wheel")

    wheel_name = "tensorflow" if cuda else "tensorflow_cpu"
    args: list[str] = [f"--config={c}" for c in configs]
    args += [f"--copt={f}" for f in copts]
    args += [f"--host_copt={f}" for f in host_copts]
    # Old trees ignore repo_env names they do not know, so every name of the era is passed.
    args += [f"--repo_env={name}={variant.python}" for name in facts.python_env]
    if not facts.script:
        args.append(f"--repo_env=WHEEL_NAME={wheel_name}")
    cc = compiler.cc
    if facts.local_cc:
        args += [f"--repo_env=CC={cc}", f"--repo_env=BAZEL_COMPILER={cc}"]
    repo_env = {**facts.repo_env, **release.repo_env}
    args += [f"--repo_env={name}={value}" for name, value in repo_env.items()]
    if cuda is not None and facts.hermetic_cuda:
        args += [
            f"--repo_env=HERMETIC_CUDA_VERSION={cuda.version}",
            f"--repo_env=HERMETIC_CUDNN_VERSION={cuda.cudnn}",
            f"--repo_env=HERMETIC_CUDA_COMPUTE_CAPABILITIES={','.join(cuda.compute_capabilities)}",
        ]
        if "cuda_clang" in configs and facts.local_cc:
            # The hermetic C++ toolchain brings its own clang for CUDA; the variable is only
            # read with a local compiler.
            args.append(f"--action_env=CLANG_CUDA_COMPILER_PATH={cc}")
    bazel = defaults.bazel
    args.append(f"--repository_cache={CACHE_MOUNT}/repository")
    if bazel.disk_cache:
        args.append(f"--disk_cache={CACHE_MOUNT}/disk")
    if bazel.remote_cache:
        args.append(f"--remote_cache={bazel.remote_cache}")
    if bazel.remote_executor:
        args.append(f"--remote_executor={bazel.remote_executor}")
    args += list(bazel.flags)

    configure_env: dict[str, str] = {}
    if facts.configure:
        configure_env = {
            "PYTHON_BIN_PATH": "/usr/bin/python3",
            "USE_DEFAULT_PYTHON_LIB_PATH": "1",
            "TF_NEED_ROCM": "0",
            "TF_SET_ANDROID_WORKSPACE": "0",
            "TF_NEED_CUDA": "1" if cuda else "0",
            "CC_OPT_FLAGS": "-Wno-sign-compare",
            "TF_PYTHON_VERSION": variant.python,
        }
        assert cc is not None  # an era that runs ./configure has a compiler to give it
        if compiler.name.startswith("clang"):
            configure_env |= {"TF_NEED_CLANG": "1", "CLANG_COMPILER_PATH": cc}
        else:
            configure_env |= {"TF_NEED_CLANG": "0", "GCC_HOST_COMPILER_PATH": cc}

    source = (
        local_source(tf_source)
        if tf_source is not None
        else Source(kind="git", url=source_repository(), ref=source_tag(variant.tensorflow))
    )
    return Recipe(
        variant=variant,
        release=release,
        tensorflow=variant.tensorflow,
        python=variant.python,
        bazel_version=release.bazel,
        base_image=defaults.base_images.build,
        source=source,
        configs=tuple(configs),
        copts=copts,
        host_copts=host_copts,
        bazel_args=tuple(args),
        configure_env=tuple(sorted(configure_env.items())),
        wheel_name=wheel_name,
        local_label=local_label(variant),
        cache_volume=bazel.cache,
        ca_bundle=ca_bundle,
        notes=tuple(notes),
    )
