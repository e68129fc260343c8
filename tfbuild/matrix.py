"""matrix.yaml: the variants to build or fetch, the runtime tunings, the suite and the baseline.

The file is parsed once, here, into frozen objects; nothing else reads YAML. Validation walks the
YAML node tree so that every problem is reported as ``FILE:LINE:COL: what (got X; expected Y)``,
all at once. Values are read from the scalar text as written, under a schema per key, so YAML 1.1
surprises (``2.20`` read as the float 2.2, ``off`` read as false) cannot happen. Every value that
can reach a Dockerfile, a bazel command line or a shell is checked against a strict pattern here.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from tfbuild import cpu
from tfbuild.bench.suite import BENCHMARKS
from tfbuild.errors import MatrixError, Problem, SelectionError, UsageError
from tfbuild.resources import load_table

SCHEMA_VERSION = 1
Source = Literal["bazel", "pypi", "wheel"]
SHA256_RE = re.compile(r"[0-9a-f]{64}")
SOURCES: tuple[Source, ...] = ("bazel", "pypi", "wheel")
RUNTIMES = ("auto", "local", "docker")
THREAD_WORDS = ("physical", "logical")

# Patterns for everything that may reach a template, a command line or a shell.
NAME_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,62}[a-z0-9])?")
NAME_RULE = (
    "lowercase letters, digits, '.', '_' or '-', starting and ending with a letter or digit, "
    "at most 64 characters"
)
ID_RE = re.compile(r"[a-z0-9](?:[a-z0-9._-]{0,126}[a-z0-9])?")
TF_VERSION_RE = re.compile(r"\d+\.\d+\.\d+")
PY_VERSION_RE = re.compile(r"3\.\d{1,2}")
CONFIG_RE = re.compile(r"[a-z][a-z0-9_]{0,63}")
COPT_RE = re.compile(r"-[A-Za-z0-9][A-Za-z0-9_=.,+:/-]{0,199}")
BAZEL_FLAG_RE = re.compile(r"--[a-z_][a-z0-9_]{0,63}(=[A-Za-z0-9_.,:/=@+-]{0,200})?")
CUDA_VERSION_RE = re.compile(r"\d{1,2}\.\d{1,2}(\.\d{1,3})?")
CC_RE = re.compile(r"(sm|compute)_\d{2,3}[a-z]?")
CC_NUMBER_RE = re.compile(r"(\d{1,2})\.(\d)")
REQUIREMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-\[\],<>=!~*+ ]{0,199}")
IMAGE_RE = re.compile(
    r"(?:[a-z0-9.-]+(?::\d+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?"
)
URL_RE = re.compile(r"(?:grpcs?|https?)://[A-Za-z0-9.-]+(?::\d{1,5})?(?:/[A-Za-z0-9._~/-]*)?")
INDEX_URL_RE = re.compile(r"(?:https?|file)://[A-Za-z0-9._~:/@%+-]+")
BUILD_NETWORKS = ("bridge", "host")
HOST_DIR_RE = re.compile(r"/[A-Za-z0-9._/+-]{0,1023}")
PATH_RE = re.compile(r"[A-Za-z0-9._/+-][A-Za-z0-9._/+ -]{0,1023}")
VOLUME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
HOST_RE = re.compile(r"[A-Za-z0-9.-]{1,253}(?::\d{1,5})?")
ENV_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
ENV_VALUE_RE = re.compile(r"[A-Za-z0-9_.,:=+/@%\- ]{0,1024}")

# Environment variables with a known meaning, and the values each one accepts.
KNOWN_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "threads",
    "MKL_NUM_THREADS": "threads",
    "TF_NUM_INTRAOP_THREADS": "threads",
    "TF_NUM_INTEROP_THREADS": "threads",
    "KMP_BLOCKTIME": "blocktime",
    "KMP_AFFINITY": "text",
    "KMP_SETTINGS": "bool01",
    "KMP_HW_SUBSET": "text",
    "OMP_PROC_BIND": "text",
    "OMP_PLACES": "text",
    "OMP_WAIT_POLICY": "text",
    "TF_ENABLE_ONEDNN_OPTS": "bool01",
    "TF_DISABLE_MKL": "bool01",
    "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "bool01",
    "TF_ONEDNN_USE_SYSTEM_ALLOCATOR": "bool01",
    "ONEDNN_MAX_CPU_ISA": "text",
    "DNNL_MAX_CPU_ISA": "text",
    "ONEDNN_VERBOSE": "text",
    "TF_CPP_MIN_LOG_LEVEL": "text",
    "TF_XLA_FLAGS": "text",
    "LD_PRELOAD": "text",
    "MALLOC_ARENA_MAX": "text",
}

T = TypeVar("T")


# --------------------------------------------------------------------------------------------
# The objects the rest of tfbuild uses


@dataclass(frozen=True)
class Where:
    """Where something was defined, for messages that point back into matrix.yaml."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Cuda:
    version: str
    cudnn: str
    compute_capabilities: tuple[str, ...]


@dataclass(frozen=True)
class Variant:
    """One TensorFlow build: built from source with bazel, fetched from an index, or a wheel."""

    name: str
    id: str
    source: Source
    python: str
    tensorflow: str | None
    """Exact TF version; None for an unpinned package requirement (the newest release)."""
    configs: tuple[str, ...] = ()
    cpu_flags: tuple[str, ...] = ()
    march: str | None = None
    copts: tuple[str, ...] = ()
    cuda: Cuda | None = None
    requirement: str | None = None
    constraints: tuple[str, ...] = ()
    path: Path | None = None
    sha256: str | None = None
    """For `source: wheel`: the wheel's pinned sha256, checked before it is used."""
    runtime: str = "auto"
    """Where it runs: local venv, docker container, or auto (docker for source builds)."""
    where: Where | None = field(default=None, compare=False)

    @property
    def needs_build(self) -> bool:
        return self.source == "bazel"

    @property
    def tf_minor(self) -> str | None:
        return ".".join(self.tensorflow.split(".")[:2]) if self.tensorflow else None

    def definition(self) -> dict[str, Any]:
        """The variant as plain data, for manifests, results and content keys."""
        data: dict[str, Any] = {
            "name": self.name,
            "id": self.id,
            "source": self.source,
            "python": self.python,
            "tensorflow": self.tensorflow,
            "runtime": self.runtime,
        }
        if self.source == "bazel":
            data |= {
                "configs": list(self.configs),
                "cpu_flags": list(self.cpu_flags),
                "march": self.march,
                "copts": list(self.copts),
                "cuda": (
                    {
                        "version": self.cuda.version,
                        "cudnn": self.cuda.cudnn,
                        "compute_capabilities": list(self.cuda.compute_capabilities),
                    }
                    if self.cuda
                    else None
                ),
            }
        elif self.source == "pypi":
            data |= {"requirement": self.requirement, "constraints": list(self.constraints)}
        else:
            data |= {"path": str(self.path), "constraints": list(self.constraints)}
            if self.sha256:
                data["sha256"] = self.sha256
        return data


ThreadCount = int | str  # an int, or "physical" / "logical"


@dataclass(frozen=True)
class Tuning:
    """Runtime settings applied before TensorFlow starts: thread pools and environment."""

    name: str
    intra_op: ThreadCount | None = None
    inter_op: ThreadCount | None = None
    env: tuple[tuple[str, str], ...] = ()
    where: Where | None = field(default=None, compare=False)

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "intra_op": self.intra_op,
            "inter_op": self.inter_op,
            "env": dict(self.env),
        }


@dataclass(frozen=True)
class SuiteSettings:
    """Which benchmarks run, and how a session decides how many rounds each config gets.

    With ``rounds`` set the design is fixed: every config runs that many rounds. Otherwise it is
    sequential: every config runs ``min_rounds`` (unless the budget ends first), the first look;
    then rounds go to the configs still in contention until the leading tier is resolved to
    ``resolve`` or ``budget_s`` runs out; ``max_rounds`` is the horizon the error control is
    spread over (and a cap).
    """

    benchmarks: tuple[str, ...]
    min_rounds: int = 5
    max_rounds: int = 30
    budget_s: float | None = 20 * 60.0
    resolve: float | None = 0.05
    rounds: int | None = None

    @property
    def sequential(self) -> bool:
        return self.rounds is None


@dataclass(frozen=True)
class Suite:
    settings: SuiteSettings
    presets: Mapping[str, SuiteSettings]

    def preset(self, name: str | None) -> SuiteSettings:
        if name is None:
            return self.settings
        if name not in self.presets:
            raise SelectionError(_unknown("suite preset", name, list(self.presets)))
        return self.presets[name]


_DURATION_RE = re.compile(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s?)?")


def parse_duration(text: str) -> float | None:
    """Seconds in ``90s``, ``15m``, ``1h30m``, ``1.5h`` or a bare number of seconds; None if
    the text is none of these."""
    value = text.strip().lower()
    match = _DURATION_RE.fullmatch(value)
    if not value or match is None or not any(match.groups()):
        return None
    hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    total = hours * 3600 + minutes * 60 + seconds
    return total if total > 0 else None


def parse_percent(text: str) -> float | None:
    """A fraction from ``5%`` or ``0.05``, strictly between 0 and 1; None otherwise."""
    value = text.strip()
    try:
        number = float(value.rstrip("%")) / (100 if value.endswith("%") else 1)
    except ValueError:
        return None
    return number if 0 < number < 1 and math.isfinite(number) else None


@dataclass(frozen=True)
class BaseImages:
    build: str
    runtime: str


@dataclass(frozen=True)
class BazelSettings:
    cache: str
    """Docker volume name, or absolute host path, holding --repository_cache and --disk_cache."""
    disk_cache: bool
    remote_cache: str | None
    remote_executor: str | None
    flags: tuple[str, ...]
    network: str
    """The build container's Docker network: bridge (the engine's default) or host (this
    machine's own, so a cache listening on its localhost is reachable)."""


@dataclass(frozen=True)
class PipSettings:
    """Package index settings passed into runtimes and build containers.

    ``inherit`` means: use what pip on this machine is configured with (pip.conf, PIP_* variables),
    so a corporate mirror and its CA bundle work inside containers too.
    """

    index_url: str
    extra_index_urls: tuple[str, ...] | Literal["inherit"]
    ca_bundle: str
    trusted_hosts: tuple[str, ...]


INHERIT_PIP = PipSettings("inherit", "inherit", "inherit", ())
"""Whatever pip on this machine is configured with: the default."""


@dataclass(frozen=True)
class Defaults:
    tensorflow: str
    python: str
    base_images: BaseImages
    bazel: BazelSettings
    pip: PipSettings


@dataclass(frozen=True)
class Baseline:
    variant: str
    tuning: str


@dataclass(frozen=True)
class Matrix:
    path: Path
    defaults: Defaults
    variants: tuple[Variant, ...]
    tunings: tuple[Tuning, ...]
    suite: Suite
    baseline: Baseline

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if name in (v.name, v.id):
                return v
        raise SelectionError(
            f"{self.path}: " + _unknown("variant", name, [v.name for v in self.variants])
        )

    def tuning(self, name: str) -> Tuning:
        for t in self.tunings:
            if t.name == name:
                return t
        raise SelectionError(
            f"{self.path}: " + _unknown("tuning", name, [t.name for t in self.tunings])
        )


def did_you_mean(value: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or an empty string."""
    hint = difflib.get_close_matches(value, list(choices), n=1, cutoff=cutoff)
    return f"; did you mean {hint[0]!r}?" if hint else ""


def _unknown(kind: str, value: str, known: Sequence[str]) -> str:
    message = f"unknown {kind} {value!r} (expected one of: {', '.join(known)})"
    return message + did_you_mean(value, known)


# --------------------------------------------------------------------------------------------
# Reading: YAML nodes with positions -> validated objects


@dataclass
class _Ctx:
    file: str
    base_dir: Path
    problems: list[Problem] = field(default_factory=list)

    def error(self, node: yaml.Node, message: str) -> None:
        mark = node.start_mark
        self.problems.append(Problem(self.file, mark.line + 1, mark.column + 1, message))


def _show(node: yaml.Node) -> str:
    """How a value is shown in 'got X': the scalar as written, or the kind of node."""
    if isinstance(node, yaml.ScalarNode):
        text = node.value if len(node.value) <= 80 else node.value[:77] + "..."
        return repr(text)
    return "a list" if isinstance(node, yaml.SequenceNode) else "a mapping"


class _Mapping:
    """A YAML mapping with unique string keys; remembers which keys were read."""

    def __init__(self, ctx: _Ctx, node: yaml.MappingNode, where: str) -> None:
        self.ctx, self.node, self.where = ctx, node, where
        self.items: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                ctx.error(key, f"{where}: keys must be plain names (got {_show(key)})")
                continue
            if key.value in self.items:
                first = self.items[key.value][0].start_mark.line + 1
                ctx.error(
                    key, f"{where}: duplicate key {key.value!r} (first given on line {first})"
                )
                continue
            self.items[key.value] = (key, value)

    def check_keys(self, allowed: Iterable[str], required: Iterable[str] = ()) -> None:
        allowed = list(allowed)
        for name, (key, _) in self.items.items():
            if name == "<<":
                self.ctx.error(
                    key,
                    f"{self.where}: YAML merge keys (<<) are not supported; "
                    "put shared settings under defaults",
                )
            elif name not in allowed:
                self.ctx.error(
                    key,
                    f"{self.where}: unknown key (got {name!r}; expected one of "
                    f"{', '.join(allowed)})" + did_you_mean(name, allowed),
                )
        for name in required:
            if name not in self.items:
                self.ctx.error(self.node, f"{self.where}: missing required key {name!r}")

    def get(self, name: str) -> yaml.Node | None:
        item = self.items.get(name)
        if item is None or _is_null(item[1]):
            return None
        return item[1]

    def path(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name


def _is_null(node: yaml.Node) -> bool:
    return (
        isinstance(node, yaml.ScalarNode)
        and node.style is None
        and node.value in ("", "~", "null", "Null", "NULL")
    )


def _as_mapping(ctx: _Ctx, node: yaml.Node, where: str) -> _Mapping | None:
    if not isinstance(node, yaml.MappingNode):
        ctx.error(node, f"{where}: expected a mapping of keys to values (got {_show(node)})")
        return None
    return _Mapping(ctx, node, where)


def _scalar(ctx: _Ctx, node: yaml.Node, where: str, expected: str) -> str | None:
    if not isinstance(node, yaml.ScalarNode):
        ctx.error(node, f"{where}: expected {expected} (got {_show(node)})")
        return None
    return str(node.value)


def _text(
    ctx: _Ctx, node: yaml.Node, where: str, pattern: re.Pattern[str], expected: str
) -> str | None:
    value = _scalar(ctx, node, where, expected)
    if value is None:
        return None
    if not pattern.fullmatch(value):
        ctx.error(node, f"{where}: not valid (got {_show(node)}; expected {expected})")
        return None
    return value


def _choice(
    ctx: _Ctx, node: yaml.Node, where: str, choices: Sequence[str], kind: str
) -> str | None:
    value = _scalar(ctx, node, where, f"one of {', '.join(choices)}")
    if value is None:
        return None
    if value not in choices:
        ctx.error(
            node,
            f"{where}: unknown {kind} (got {value!r}; expected one of {', '.join(choices)})"
            + did_you_mean(value, choices),
        )
        return None
    return value


def _int(ctx: _Ctx, node: yaml.Node, where: str, low: int, high: int) -> int | None:
    expected = f"a whole number from {low} to {high}"
    value = _scalar(ctx, node, where, expected)
    if value is None:
        return None
    if not re.fullmatch(r"\d{1,9}", value) or not low <= int(value) <= high:
        ctx.error(node, f"{where}: out of range (got {_show(node)}; expected {expected})")
        return None
    return int(value)


def _bool(ctx: _Ctx, node: yaml.Node, where: str) -> bool | None:
    value = _scalar(ctx, node, where, "true or false")
    if value not in ("true", "false"):
        if value is not None:
            ctx.error(node, f"{where}: not a boolean (got {_show(node)}; expected true or false)")
        return None
    return value == "true"


def _list(
    ctx: _Ctx, node: yaml.Node, where: str, item: Callable[[yaml.Node, str], T | None]
) -> tuple[T, ...]:
    """A list of items; a single scalar is accepted as a list of one."""
    nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
    if isinstance(node, yaml.MappingNode):
        ctx.error(node, f"{where}: expected a list (got a mapping)")
        return ()
    values = []
    for i, child in enumerate(nodes):
        value = item(child, f"{where}[{i}]")
        if value is not None:
            values.append(value)
    return tuple(values)


def _compose(ctx: _Ctx, text: str) -> yaml.Node | None:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = " ".join(str(part) for part in (exc.context, exc.problem) if part)
        ctx.problems.append(Problem(ctx.file, line, col, f"not valid YAML: {what}"))
        return None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        ctx.problems.append(
            Problem(
                ctx.file,
                line,
                column,
                f"not valid YAML: character {exc.character!r} is not allowed in YAML text",
            )
        )
        return None
    except yaml.YAMLError as exc:
        ctx.problems.append(Problem(ctx.file, 1, 1, f"not valid YAML: {exc}"))
        return None
    except RecursionError:
        ctx.problems.append(Problem(ctx.file, 1, 1, "not valid YAML: nested too deeply"))
        return None
    return node


# --------------------------------------------------------------------------------------------
# Sections


def _tf_release(version: str) -> Mapping[str, Any] | None:
    releases: Mapping[str, Any] = load_table("tensorflow")["releases"]
    return releases.get(".".join(version.split(".")[:2]))


def has_recipe(version: str) -> bool:
    """Whether source builds know this release's era (tfbuild/data/tensorflow.yaml)."""
    return bool(TF_VERSION_RE.fullmatch(version)) and _tf_release(version) is not None


def _known_releases() -> list[str]:
    return list(load_table("tensorflow")["releases"])


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _read_defaults(ctx: _Ctx, node: yaml.Node | None) -> Defaults:
    base = Defaults(
        tensorflow="2.21.0",
        python="3.11",
        base_images=BaseImages(build="tfbuild/base:bookworm", runtime="tfbuild/base:bookworm"),
        bazel=BazelSettings("tfbuild-bazel-cache", True, None, None, (), "bridge"),
        pip=INHERIT_PIP,
    )
    if node is None:
        return base
    m = _as_mapping(ctx, node, "defaults")
    if m is None:
        return base
    m.check_keys(["tensorflow", "python", "base_images", "bazel", "pip"])
    tensorflow, python = base.tensorflow, base.python
    if (n := m.get("tensorflow")) is not None:
        value = _text(ctx, n, m.path("tensorflow"), TF_VERSION_RE, "a release like 2.17.1")
        if value is not None and _tf_release(value) is None:
            ctx.error(
                n,
                f"defaults.tensorflow: no build recipe for this release (got {value!r}; "
                f"expected one of {', '.join(_known_releases())})",
            )
        tensorflow = value or tensorflow
    if (n := m.get("python")) is not None:
        python = _text(ctx, n, m.path("python"), PY_VERSION_RE, "a version like 3.11") or python
    return Defaults(
        tensorflow=tensorflow,
        python=python,
        base_images=_read_base_images(ctx, m.get("base_images"), base.base_images),
        bazel=_read_bazel(ctx, m.get("bazel"), base.bazel),
        pip=_read_pip(ctx, m.get("pip"), base.pip),
    )


def _read_base_images(ctx: _Ctx, node: yaml.Node | None, base: BaseImages) -> BaseImages:
    if node is None or (m := _as_mapping(ctx, node, "defaults.base_images")) is None:
        return base
    m.check_keys(["build", "runtime"])
    expected = "an image reference like debian:bookworm or registry.example.com/img:tag"
    images = {}
    for key in ("build", "runtime"):
        n = m.get(key)
        images[key] = (
            _text(ctx, n, m.path(key), IMAGE_RE, expected) if n is not None else None
        ) or getattr(base, key)
    return BaseImages(**images)


def _read_bazel(ctx: _Ctx, node: yaml.Node | None, base: BazelSettings) -> BazelSettings:
    if node is None or (m := _as_mapping(ctx, node, "defaults.bazel")) is None:
        return base
    m.check_keys(["cache", "disk_cache", "remote_cache", "remote_executor", "flags", "network"])
    cache = base.cache
    if (n := m.get("cache")) is not None:
        value = _scalar(ctx, n, m.path("cache"), "a volume name or an absolute path")
        if value is not None and not (VOLUME_RE.fullmatch(value) or HOST_DIR_RE.fullmatch(value)):
            ctx.error(
                n,
                f"defaults.bazel.cache: not valid (got {_show(n)}; expected a Docker volume name "
                "like tfbuild-bazel-cache or an absolute host path without spaces)",
            )
        elif value is not None:
            cache = value
    disk_cache = base.disk_cache
    if (n := m.get("disk_cache")) is not None:
        flag = _bool(ctx, n, m.path("disk_cache"))
        disk_cache = base.disk_cache if flag is None else flag
    url_rule = "a grpc://, grpcs://, http:// or https:// URL without credentials"
    remote = {}
    for key in ("remote_cache", "remote_executor"):
        n = m.get(key)
        remote[key] = _text(ctx, n, m.path(key), URL_RE, url_rule) if n is not None else None
    flags: tuple[str, ...] = ()
    if (n := m.get("flags")) is not None:
        flags = _list(
            ctx,
            n,
            m.path("flags"),
            lambda c, w: _text(ctx, c, w, BAZEL_FLAG_RE, "a bazel flag like --jobs=8"),
        )
    network = base.network
    if (n := m.get("network")) is not None:
        network = _choice(ctx, n, m.path("network"), BUILD_NETWORKS, "network") or network
    return BazelSettings(
        cache, disk_cache, remote["remote_cache"], remote["remote_executor"], flags, network
    )


def _read_pip(ctx: _Ctx, node: yaml.Node | None, base: PipSettings) -> PipSettings:
    if node is None or (m := _as_mapping(ctx, node, "defaults.pip")) is None:
        return base
    m.check_keys(["index_url", "extra_index_urls", "ca_bundle", "trusted_hosts"])

    def url(n: yaml.Node, where: str) -> str | None:
        if isinstance(n, yaml.ScalarNode) and n.value == "inherit":
            return "inherit"
        return _text(ctx, n, where, INDEX_URL_RE, "inherit or an https:// or file:// URL")

    index_url = base.index_url
    if (n := m.get("index_url")) is not None:
        index_url = url(n, m.path("index_url")) or index_url
    extra: tuple[str, ...] | Literal["inherit"] = base.extra_index_urls
    if (n := m.get("extra_index_urls")) is not None:
        if isinstance(n, yaml.ScalarNode) and n.value == "inherit":
            extra = "inherit"
        else:
            extra = _list(
                ctx,
                n,
                m.path("extra_index_urls"),
                lambda c, w: _text(ctx, c, w, INDEX_URL_RE, "an https:// or file:// URL"),
            )
    ca_bundle = base.ca_bundle
    if (n := m.get("ca_bundle")) is not None:
        value = _scalar(ctx, n, m.path("ca_bundle"), "inherit, none, or an absolute path")
        if (
            value is not None
            and value not in ("inherit", "none")
            and not (value.startswith("/") and PATH_RE.fullmatch(value))
        ):
            ctx.error(
                n,
                f"defaults.pip.ca_bundle: not valid (got {_show(n)}; expected inherit, none, or "
                "an absolute path to a PEM bundle)",
            )
        elif value is not None:
            ca_bundle = value
    trusted: tuple[str, ...] = base.trusted_hosts
    if (n := m.get("trusted_hosts")) is not None:
        trusted = _list(
            ctx,
            n,
            m.path("trusted_hosts"),
            lambda c, w: _text(ctx, c, w, HOST_RE, "a host name, optionally with :port"),
        )
    return PipSettings(index_url, extra, ca_bundle, trusted)


_COMMON_VARIANT_KEYS = ["name", "id", "source", "python", "tensorflow", "runtime"]
_SOURCE_KEYS: dict[str, list[str]] = {
    "bazel": ["configs", "cpu_flags", "march", "copts", "cuda"],
    "pypi": ["requirement", "constraints"],
    "wheel": ["path", "sha256", "constraints"],
}
_ALL_VARIANT_KEYS = list(
    dict.fromkeys(_COMMON_VARIANT_KEYS + [k for keys in _SOURCE_KEYS.values() for k in keys])
)


def _requirement(ctx: _Ctx, node: yaml.Node, where: str) -> Requirement | None:
    expected = "a requirement like intel-tensorflow==2.14.0 or numpy<2"
    value = _text(ctx, node, where, REQUIREMENT_RE, expected)
    if value is None:
        return None
    try:
        req = Requirement(value)
    except InvalidRequirement as exc:
        ctx.error(node, f"{where}: not a valid requirement (got {_show(node)}; {exc})")
        return None
    return req


def _pinned_version(req: Requirement) -> str | None:
    pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return pins[0] if len(pins) == 1 and "*" not in pins[0] else None


def _read_variant(ctx: _Ctx, node: yaml.Node, where: str, defaults: Defaults) -> Variant | None:
    m = _as_mapping(ctx, node, where)
    if m is None:
        return None
    name_node = m.get("name")
    name = _text(ctx, name_node, m.path("name"), NAME_RE, NAME_RULE) if name_node else None
    if name is not None:
        m.where = f"variant {name!r}"
    source_node = m.get("source")
    source = _choice(ctx, source_node, m.path("source"), SOURCES, "source") if source_node else None
    m.check_keys(_ALL_VARIANT_KEYS, required=["name", "source"])
    if source is not None:
        for key in _ALL_VARIANT_KEYS:
            if key in m.items and key not in _COMMON_VARIANT_KEYS + _SOURCE_KEYS[source]:
                owners = [s for s, keys in _SOURCE_KEYS.items() if key in keys]
                ctx.error(
                    m.items[key][0],
                    f"{m.where}: key {key!r} applies to source: {' or '.join(owners)} only "
                    f"(got it on source: {source})",
                )
    python = defaults.python
    if (n := m.get("python")) is not None:
        python = _text(ctx, n, m.path("python"), PY_VERSION_RE, "a version like 3.11") or python
    tf_node = m.get("tensorflow")
    tensorflow = (
        _text(ctx, tf_node, m.path("tensorflow"), TF_VERSION_RE, "a release like 2.17.1")
        if tf_node is not None
        else None
    )
    if name is None or source is None:
        return None
    runtime = "auto"
    if (n := m.get("runtime")) is not None:
        runtime = _choice(ctx, n, m.path("runtime"), RUNTIMES, "runtime") or runtime
    given_id = None
    if (n := m.get("id")) is not None:
        given_id = _text(ctx, n, m.path("id"), ID_RE, NAME_RULE.replace("64", "128"))

    fields: dict[str, Any] = {}
    if source == "bazel":
        tensorflow = tensorflow or defaults.tensorflow
        fields = _read_bazel_variant(ctx, m, tensorflow, python, tf_node)
    elif source == "pypi":
        req_node = m.get("requirement")
        if req_node is None:
            ctx.error(m.node, f"{m.where}: source: pypi needs a 'requirement' key")
            return None
        req = _requirement(ctx, req_node, m.path("requirement"))
        if req is None:
            return None
        if req.url:
            ctx.error(
                req_node,
                f"{m.path('requirement')}: direct URLs are not accepted here "
                "(use source: wheel with a path)",
            )
        pinned = _pinned_version(req)
        if tensorflow and pinned and tensorflow != pinned:
            ctx.error(
                tf_node or req_node,
                f"{m.path('tensorflow')}: disagrees with the requirement's pin "
                f"(got {tensorflow!r}; the requirement pins {pinned!r})",
            )
        tensorflow = pinned or tensorflow
        fields = {"requirement": str(req), "constraints": _read_constraints(ctx, m)}
    else:
        fields, wheel_tf, wheel_py = _read_wheel_variant(ctx, m)
        tensorflow = tensorflow or wheel_tf
        if wheel_py and m.get("python") is None:
            python = wheel_py
    minor = ".".join(tensorflow.split(".")[:2]) if tensorflow else "latest"
    return Variant(
        name=name,
        id=given_id or f"tf{minor}-py{python}-{name}",
        source=source,  # type: ignore[arg-type]  # checked by _choice
        python=python,
        tensorflow=tensorflow,
        runtime=runtime,
        where=Where(ctx.file, m.node.start_mark.line + 1),
        **fields,
    )


def _read_constraints(ctx: _Ctx, m: _Mapping) -> tuple[str, ...]:
    n = m.get("constraints")
    if n is None:
        return ()
    reqs = _list(ctx, n, m.path("constraints"), lambda c, w: _requirement(ctx, c, w))
    return tuple(str(r) for r in reqs)


def _read_wheel_variant(ctx: _Ctx, m: _Mapping) -> tuple[dict[str, Any], str | None, str | None]:
    n = m.get("path")
    if n is None:
        ctx.error(m.node, f"{m.where}: source: wheel needs a 'path' key")
        return {}, None, None
    value = _text(ctx, n, m.path("path"), PATH_RE, "a path to a .whl file")
    if value is None:
        return {}, None, None
    path = Path(value)
    tf_version = py_version = None
    try:
        _, version, _, tags = parse_wheel_filename(path.name)
    except (InvalidWheelFilename, InvalidVersion) as exc:
        ctx.error(n, f"{m.path('path')}: not a wheel file name (got {value!r}; {exc})")
    else:
        tf_version = version.base_version
        interpreters = {t.interpreter for t in tags if re.fullmatch(r"cp3\d+", t.interpreter)}
        if len(interpreters) == 1:
            py_version = "3." + interpreters.pop()[3:]
    if not path.is_absolute():
        path = ctx.base_dir / path
    fields: dict[str, Any] = {"path": path, "constraints": _read_constraints(ctx, m)}
    if (pin := m.get("sha256")) is not None:
        fields["sha256"] = _text(ctx, pin, m.path("sha256"), SHA256_RE, "64 lowercase hex digits")
    return fields, tf_version, py_version


def _read_bazel_variant(
    ctx: _Ctx, m: _Mapping, tensorflow: str, python: str, tf_node: yaml.Node | None
) -> dict[str, Any]:
    release = _tf_release(tensorflow)
    if release is None:
        ctx.error(
            tf_node or m.node,
            f"{m.path('tensorflow')}: no build recipe for this release (got {tensorflow!r}; "
            f"expected a release of {', '.join(_known_releases())})",
        )
    else:
        low, high = release["python"]
        if not _version_tuple(low) <= _version_tuple(python) <= _version_tuple(high):
            ctx.error(
                m.get("python") or m.node,
                f"{m.path('python')}: TensorFlow {tensorflow} does not build for this Python "
                f"(got {python!r}; expected {low} to {high})",
            )
    configs: tuple[str, ...] = ()
    if (n := m.get("configs")) is not None:
        configs = _list(ctx, n, m.path("configs"), lambda c, w: _config(ctx, c, w, tensorflow))
    cpu_flags: tuple[str, ...] = ()
    if (n := m.get("cpu_flags")) is not None:
        flag_names = list(cpu.tf_flag_table())
        cpu_flags = _list(
            ctx, n, m.path("cpu_flags"), lambda c, w: _choice(ctx, c, w, flag_names, "CPU flag")
        )
    march = None
    if (n := m.get("march")) is not None:
        march = _choice(ctx, n, m.path("march"), [*cpu.marches(), "host", "native"], "-march")
    copts: tuple[str, ...] = ()
    if (n := m.get("copts")) is not None:
        rule = "a compiler option like -O3 or -mtune=haswell (no spaces, quotes or $)"
        copts = _list(ctx, n, m.path("copts"), lambda c, w: _text(ctx, c, w, COPT_RE, rule))
    cuda = None
    if (n := m.get("cuda")) is not None:
        cuda = _read_cuda(ctx, n, m.path("cuda"), release)
    cuda_configs = [c for c in configs if c.startswith("cuda")]
    if cuda_configs and cuda is None:
        ctx.error(
            m.items["configs"][1],
            f"{m.path('configs')}: {cuda_configs[0]!r} needs a cuda: block "
            "(version, cudnn, compute_capabilities)",
        )
    return {
        "configs": configs,
        "cpu_flags": cpu_flags,
        "march": march,
        "copts": copts,
        "cuda": cuda,
    }


def _config(ctx: _Ctx, node: yaml.Node, where: str, tensorflow: str) -> str | None:
    known: Mapping[str, Mapping[str, str]] = load_table("tensorflow")["configs"]
    value = _text(ctx, node, where, CONFIG_RE, "a bazel --config name like mkl")
    if value is None:
        return None
    if value not in known:
        ctx.error(
            node,
            f"{where}: unknown bazel config (got {value!r}; expected one of "
            f"{', '.join(known)})" + did_you_mean(value, known),
        )
        return None
    span = known[value]
    minor = _version_tuple(".".join(tensorflow.split(".")[:2]))
    since, until = span.get("since"), span.get("until")
    if (since and minor < _version_tuple(since)) or (until and minor > _version_tuple(until)):
        limits = f"from {since}" if since else ""
        limits += (" " if limits else "") + (f"up to {until}" if until else "")
        ctx.error(
            node,
            f"{where}: TensorFlow {tensorflow} has no --config={value} (got {value!r}; "
            f"it is defined {limits.strip()})",
        )
        return None
    return value


def _read_cuda(
    ctx: _Ctx, node: yaml.Node, where: str, release: Mapping[str, Any] | None
) -> Cuda | None:
    m = _as_mapping(ctx, node, where)
    if m is None:
        return None
    m.check_keys(["version", "cudnn", "compute_capabilities"], required=["compute_capabilities"])
    versions = {}
    for key in ("version", "cudnn"):
        n = m.get(key)
        default = str(release[key if key == "cudnn" else "cuda"]) if release else None
        versions[key] = (
            _text(ctx, n, m.path(key), CUDA_VERSION_RE, "a version like 12.5.1")
            if n is not None
            else default
        )
    caps: tuple[str, ...] = ()
    if (n := m.get("compute_capabilities")) is not None:
        caps = _list(ctx, n, m.path("compute_capabilities"), lambda c, w: _capability(ctx, c, w))
        if not caps:
            ctx.error(n, f"{m.path('compute_capabilities')}: needs at least one entry")
    if versions["version"] is None or versions["cudnn"] is None or not caps:
        return None
    return Cuda(versions["version"], versions["cudnn"], caps)


def _capability(ctx: _Ctx, node: yaml.Node, where: str) -> str | None:
    value = _scalar(ctx, node, where, "a compute capability like sm_90, compute_90 or 9.0")
    if value is None:
        return None
    if CC_RE.fullmatch(value):
        return value
    if match := CC_NUMBER_RE.fullmatch(value):
        return f"sm_{match.group(1)}{match.group(2)}"
    ctx.error(
        node,
        f"{where}: not a compute capability (got {_show(node)}; expected sm_NN, compute_NN or N.N)",
    )
    return None


def _read_tuning(ctx: _Ctx, node: yaml.Node, where: str) -> Tuning | None:
    m = _as_mapping(ctx, node, where)
    if m is None:
        return None
    name_node = m.get("name")
    name = _text(ctx, name_node, m.path("name"), NAME_RE, NAME_RULE) if name_node else None
    if name is not None:
        m.where = f"tuning {name!r}"
    m.check_keys(["name", "intra_op", "inter_op", "env"], required=["name"])
    threads: dict[str, ThreadCount | None] = {}
    for key in ("intra_op", "inter_op"):
        n = m.get(key)
        threads[key] = _threads(ctx, n, m.path(key)) if n is not None else None
    env: list[tuple[str, str]] = []
    if (n := m.get("env")) is not None and (em := _as_mapping(ctx, n, m.path("env"))) is not None:
        for var, (key_node, value_node) in em.items.items():
            item = _env_item(ctx, var, key_node, value_node, m.path("env"))
            if item is not None:
                env.append(item)
    if name is None:
        return None
    return Tuning(
        name=name,
        intra_op=threads["intra_op"],
        inter_op=threads["inter_op"],
        env=tuple(env),
        where=Where(ctx.file, m.node.start_mark.line + 1),
    )


def _threads(ctx: _Ctx, node: yaml.Node, where: str) -> ThreadCount | None:
    expected = "a thread count from 1 to 1024, physical, or logical"
    value = _scalar(ctx, node, where, expected)
    if value is None:
        return None
    if value in THREAD_WORDS:
        return value
    if re.fullmatch(r"\d{1,4}", value) and 1 <= int(value) <= 1024:
        return int(value)
    ctx.error(
        node,
        f"{where}: not a thread count (got {_show(node)}; expected {expected})"
        + did_you_mean(value, THREAD_WORDS),
    )
    return None


def _env_item(
    ctx: _Ctx, var: str, key_node: yaml.Node, value_node: yaml.Node, where: str
) -> tuple[str, str] | None:
    if not ENV_NAME_RE.fullmatch(var):
        ctx.error(key_node, f"{where}: not an environment variable name (got {var!r})")
        return None
    if var not in KNOWN_ENV:
        hint = did_you_mean(var, KNOWN_ENV, cutoff=0.85)
        if hint:
            ctx.error(
                key_node,
                f"{where}: unknown variable (got {var!r}; a misspelt variable is silently "
                f"ignored at run time){hint}",
            )
            return None
    value = _scalar(ctx, value_node, f"{where}.{var}", "a value")
    if value is None:
        return None
    kind = KNOWN_ENV.get(var, "text")
    accepted = {
        "threads": (r"\d{1,4}|physical|logical", "a thread count, physical, or logical"),
        "blocktime": (r"\d{1,6}|infinite", "milliseconds or infinite"),
        "bool01": (r"[01]", "0 or 1"),
        "text": (ENV_VALUE_RE.pattern, "letters, digits, spaces and . , : = + / @ % _ -"),
    }[kind]
    if not re.fullmatch(accepted[0], value):
        ctx.error(
            value_node,
            f"{where}.{var}: not accepted (got {_show(value_node)}; expected {accepted[1]})",
        )
        return None
    return var, value


_SUITE_KEYS = ["benchmarks", "min_rounds", "max_rounds", "budget", "resolve", "rounds"]
_FIXED_BY_SUITE = {
    "warmup": "warm-up is fixed by the suite since version 2",
    "samples": "samples and iterations are fixed per benchmark by the suite since version 2 "
    "(`tfbuild calibrate` shows why)",
}


def _read_suite(ctx: _Ctx, node: yaml.Node | None) -> Suite:
    default = SuiteSettings(tuple(BENCHMARKS))
    if node is None or (m := _as_mapping(ctx, node, "suite")) is None:
        return Suite(default, _builtin_presets(default))
    _refuse_fixed(ctx, m)
    m.check_keys([*_SUITE_KEYS, "presets", *_FIXED_BY_SUITE])
    settings = _suite_settings(ctx, m, default)
    presets = _builtin_presets(settings)
    if (n := m.get("presets")) is not None and (pm := _as_mapping(ctx, n, "suite.presets")):
        for preset, (key, value) in pm.items.items():
            if not NAME_RE.fullmatch(preset):
                ctx.error(key, f"suite.presets: not a valid preset name (got {preset!r})")
                continue
            if (sub := _as_mapping(ctx, value, f"suite.presets.{preset}")) is not None:
                _refuse_fixed(ctx, sub)
                sub.check_keys([*_SUITE_KEYS, *_FIXED_BY_SUITE])
                presets[preset] = _suite_settings(ctx, sub, settings)
    return Suite(settings, presets)


def _builtin_presets(settings: SuiteSettings) -> dict[str, SuiteSettings]:
    """quick: a small time budget and a coarse target, over the file's own benchmark list."""
    quick = dataclasses.replace(settings, budget_s=10 * 60.0, resolve=0.10, rounds=None)
    return {"quick": quick, "full": settings}


def _refuse_fixed(ctx: _Ctx, m: _Mapping) -> None:
    for key, why in _FIXED_BY_SUITE.items():
        if (n := m.get(key)) is not None:
            ctx.error(n, f"{m.path(key)}: {why}; remove it (got {_show(n)})")


def _suite_settings(ctx: _Ctx, m: _Mapping, base: SuiteSettings) -> SuiteSettings:
    values: dict[str, Any] = {}
    if (n := m.get("benchmarks")) is not None:
        names = list(BENCHMARKS)
        values["benchmarks"] = _list(
            ctx, n, m.path("benchmarks"), lambda c, w: _choice(ctx, c, w, names, "benchmark")
        )
        if not values["benchmarks"] and isinstance(n, yaml.SequenceNode) and not n.value:
            ctx.error(n, f"{m.path('benchmarks')}: needs at least one benchmark")
    for key, low in (("min_rounds", 2), ("max_rounds", 2), ("rounds", 1)):
        if (n := m.get(key)) is not None and (v := _int(ctx, n, m.path(key), low, 1000)):
            values[key] = v
    parsed: list[tuple[str, str, Callable[[str], float | None], str, str]] = [
        ("budget", "budget_s", parse_duration, "a duration", "like 20m, 1h30m or 90s"),
        ("resolve", "resolve", parse_percent, "a percentage", "between 0% and 100%, like 5%"),
    ]
    for key, field_name, parse, noun, example in parsed:
        if (n := m.get(key)) is None:
            continue
        text = _scalar(ctx, n, m.path(key), f"{noun} {example}")
        if text is not None:
            if (value := parse(text)) is None:
                ctx.error(
                    n, f"{m.path(key)}: not {noun} (got {_show(n)}; expected {noun} {example})"
                )
            else:
                values[field_name] = value
    settings = dataclasses.replace(base, **values)
    if settings.min_rounds > settings.max_rounds and (n := m.get("min_rounds")) is not None:
        ctx.error(
            n,
            f"{m.path('min_rounds')}: larger than max_rounds (got "
            f"{settings.min_rounds}; expected at most {settings.max_rounds})",
        )
    return settings


def _read_baseline(
    ctx: _Ctx, node: yaml.Node | None, variants: Sequence[Variant], tunings: Sequence[Tuning]
) -> Baseline | None:
    if node is None:
        if variants and tunings:
            return Baseline(variants[0].name, tunings[0].name)
        return None
    m = _as_mapping(ctx, node, "baseline")
    if m is None:
        return None
    m.check_keys(["variant", "tuning"], required=["variant"])
    names = {"variant": [v.name for v in variants], "tuning": [t.name for t in tunings]}
    chosen: dict[str, str | None] = {}
    for key in ("variant", "tuning"):
        n = m.get(key)
        if n is None:
            chosen[key] = names[key][0] if names[key] else None
        else:
            chosen[key] = _choice(ctx, n, m.path(key), names[key], key)
    if chosen["variant"] is None or chosen["tuning"] is None:
        return None
    return Baseline(chosen["variant"], chosen["tuning"])


def _unique(
    ctx: _Ctx, items: Sequence[Any], key: str, kind: str, nodes: Sequence[yaml.Node]
) -> None:
    seen: dict[str, int] = {}
    for item, node in zip(items, nodes, strict=True):
        value = getattr(item, key)
        if value in seen:
            ctx.error(
                node,
                f"{kind} {key} {value!r} is used twice (first on line {seen[value]}); "
                f"expected each {kind} to have its own {key}",
            )
        else:
            seen[value] = node.start_mark.line + 1


# --------------------------------------------------------------------------------------------
# Entry points


def parse_matrix(text: str, file: str, base_dir: Path, tensorflow: str | None = None) -> Matrix:
    """Validate matrix text; raises MatrixError listing every problem with its position.
    `tensorflow` replaces defaults.tensorflow (`--tensorflow`: a new release): the source
    variants that do not pin their own release are read, and checked, for it."""
    ctx = _Ctx(file=file, base_dir=base_dir)
    root = _compose(ctx, text)
    if root is None:
        if not ctx.problems:
            ctx.problems.append(
                Problem(file, 1, 1, "the file is empty; expected a 'variants' list")
            )
        raise MatrixError(ctx.problems)
    top = _as_mapping(ctx, root, "")
    if top is None:
        raise MatrixError(ctx.problems)
    top.where = "matrix"
    top.check_keys(
        ["schema_version", "defaults", "variants", "tunings", "suite", "baseline"],
        required=["variants"],
    )
    if (n := top.get("schema_version")) is not None:
        _int(ctx, n, "schema_version", SCHEMA_VERSION, SCHEMA_VERSION)
    defaults = _read_defaults(ctx, top.get("defaults"))
    if tensorflow is not None:
        defaults = _override_tensorflow(defaults, tensorflow)

    def entries(key: str) -> list[yaml.Node]:
        n = top.get(key)
        if n is None:
            return []
        if not isinstance(n, yaml.SequenceNode):
            ctx.error(
                n,
                f"{key}: expected a list of entries, each starting with '- name:' (got {_show(n)})",
            )
            return []
        return list(n.value)

    variant_nodes = entries("variants")
    variants, vnodes = [], []
    for i, n in enumerate(variant_nodes):
        v = _read_variant(ctx, n, f"variants[{i}]", defaults)
        if v is not None:
            variants.append(v)
            vnodes.append(n)
    if "variants" in top.items and not variant_nodes and not ctx.problems:
        ctx.error(top.items["variants"][1], "variants: the list is empty; expected at least one")
    tunings, tnodes = [], []
    for i, n in enumerate(entries("tunings")):
        t = _read_tuning(ctx, n, f"tunings[{i}]")
        if t is not None:
            tunings.append(t)
            tnodes.append(n)
    _unique(ctx, variants, "name", "variant", vnodes)
    _unique(ctx, variants, "id", "variant", vnodes)
    _unique(ctx, tunings, "name", "tuning", tnodes)
    if "tunings" not in top.items:
        tunings.append(Tuning(name="default"))
    suite = _read_suite(ctx, top.get("suite"))
    baseline = _read_baseline(ctx, top.get("baseline"), variants, tunings)
    if ctx.problems or baseline is None:
        if not ctx.problems:
            ctx.error(root, "matrix: needs at least one variant and one tuning")
        raise MatrixError(sorted(ctx.problems, key=lambda p: (p.line, p.column)))
    return Matrix(
        path=Path(file),
        defaults=defaults,
        variants=tuple(variants),
        tunings=tuple(tunings),
        suite=suite,
        baseline=baseline,
    )


def _override_tensorflow(defaults: Defaults, version: str) -> Defaults:
    if not has_recipe(version):
        raise UsageError(
            f"--tensorflow {version!r}: no build recipe for this release; expected one of "
            f"{', '.join(_known_releases())} (a newer release needs its era in "
            "tfbuild/data/tensorflow.yaml first)"
        )
    return dataclasses.replace(defaults, tensorflow=version)


def load_matrix(path: Path, tensorflow: str | None = None) -> Matrix:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise MatrixError([Problem(str(path), 1, 1, f"cannot read ({exc.strerror})")]) from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise MatrixError([Problem(str(path), line, 1, "not UTF-8 text")]) from exc
    return parse_matrix(text, str(path), path.resolve().parent, tensorflow)
