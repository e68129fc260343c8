"""Reading the variants of matrix.yaml: source bazel (configs, cpu_flags, march, copts, cuda),
pypi (a requirement) and wheel (a file, optionally pinned by sha256)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion

from tfbuild.config.model import (
    Cuda,
    Defaults,
    Variant,
    Where,
)
from tfbuild.config.tensorflow import (
    Release,
    accepted_releases,
    known_configs,
    lacking_config,
    tf_release,
)
from tfbuild.config.values import (
    CC_NUMBER_RE,
    CC_RE,
    CONFIG_RE,
    COPT_RE,
    CUDA_VERSION_RE,
    ID_RE,
    NAME_RE,
    NAME_RULE,
    PATH_RE,
    PY_VERSION_RE,
    REQUIREMENT_RE,
    RUNTIMES,
    SHA256_RE,
    SOURCES,
    TF_VERSION_RE,
    did_you_mean,
)
from tfbuild.config.yamlread import (
    Ctx,
    Keys,
    as_mapping,
    choice,
    listed,
    matched,
    scalar,
    show,
)
from tfbuild.machine import cpu

_COMMON_VARIANT_KEYS = ["name", "id", "source", "python", "tensorflow", "runtime"]


_SOURCE_KEYS: dict[str, list[str]] = {
    "bazel": ["configs", "cpu_flags", "march", "copts", "cuda"],
    "pypi": ["requirement", "constraints"],
    "wheel": ["path", "sha256", "constraints"],
}


_ALL_VARIANT_KEYS = list(
    dict.fromkeys(_COMMON_VARIANT_KEYS + [k for keys in _SOURCE_KEYS.values() for k in keys])
)


def _requirement(ctx: Ctx, node: yaml.Node, where: str) -> Requirement | None:
    expected = "a requirement like intel-tensorflow==2.14.0 or numpy<2"
    value = matched(ctx, node, where, REQUIREMENT_RE, expected)
    if value is None:
        return None
    try:
        req = Requirement(value)
    except InvalidRequirement as exc:
        ctx.error(node, f"{where}: not a valid requirement (got {show(node)}; {exc})")
        return None
    return req


def _pinned_version(req: Requirement) -> str | None:
    pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
    return pins[0] if len(pins) == 1 and "*" not in pins[0] else None


def read_variant(
    ctx: Ctx, node: yaml.Node, where: str, defaults: Defaults, declared: str | None = None
) -> Variant | None:
    """One entry of `variants`. `declared` is the matrix's own defaults.tensorflow when
    --tensorflow replaced it in `defaults`: a source variant that follows the defaults and asks
    for a --config the new release dropped builds the declared release instead, said in a
    note (the nightly's new release must not refuse a variant the matrix can still build)."""
    m = as_mapping(ctx, node, where)
    if m is None:
        return None
    name_node = m.get("name")
    name = matched(ctx, name_node, m.path("name"), NAME_RE, NAME_RULE) if name_node else None
    if name is not None:
        m.where = f"variant {name!r}"
    source_node = m.get("source")
    source = choice(ctx, source_node, m.path("source"), SOURCES, "source") if source_node else None
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
        python = matched(ctx, n, m.path("python"), PY_VERSION_RE, "a version like 3.11") or python
    tf_node = m.get("tensorflow")
    tensorflow = None
    follows = tf_node is None or getattr(tf_node, "value", None) == "defaults"
    if tf_node is not None and follows:
        tensorflow = defaults.tensorflow  # follows defaults.tensorflow (and --tensorflow)
    elif tf_node is not None:
        expected = "a release like 2.17.1, or defaults (defaults.tensorflow)"
        tensorflow = matched(ctx, tf_node, m.path("tensorflow"), TF_VERSION_RE, expected)
    if name is None or source is None:
        return None
    runtime = "auto"
    if (n := m.get("runtime")) is not None:
        runtime = choice(ctx, n, m.path("runtime"), RUNTIMES, "runtime") or runtime
    given_id = None
    if (n := m.get("id")) is not None:
        given_id = matched(ctx, n, m.path("id"), ID_RE, NAME_RULE.replace("64", "128"))

    fields: dict[str, Any] = {}
    if source == "bazel":
        tensorflow = tensorflow or defaults.tensorflow
        before = len(ctx.problems)
        fields = _read_bazel_variant(ctx, m, tensorflow, python, tf_node)
        if follows and declared and declared != tensorflow and len(ctx.problems) == before:
            dropped = lacking_config(fields["configs"], tensorflow)
            if dropped and not lacking_config(fields["configs"], declared):
                ctx.notes[name] = (
                    f"variant {name!r}: TensorFlow {tensorflow} (--tensorflow) has no "
                    f"--config={dropped[0]} (its .bazelrc defines it {dropped[1]}): it builds "
                    f"{declared}, the matrix's defaults.tensorflow"
                )
                tensorflow = declared
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
        if tensorflow and not pinned and not req.specifier:
            # `tensorflow:` pins an unpinned requirement: what is installed is what is named
            req = Requirement(f"{req.name}{_extras(req)}=={tensorflow}")
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
        source=source,  # type: ignore[arg-type]  # checked by choice
        python=python,
        tensorflow=tensorflow,
        runtime=runtime,
        where=Where(ctx.file, m.node.start_mark.line + 1),
        **fields,
    )


def _extras(req: Requirement) -> str:
    return f"[{','.join(sorted(req.extras))}]" if req.extras else ""


def _read_constraints(ctx: Ctx, m: Keys) -> tuple[str, ...]:
    n = m.get("constraints")
    if n is None:
        return ()
    reqs = listed(ctx, n, m.path("constraints"), lambda c, w: _requirement(ctx, c, w))
    return tuple(str(r) for r in reqs)


def _read_wheel_variant(ctx: Ctx, m: Keys) -> tuple[dict[str, Any], str | None, str | None]:
    n = m.get("path")
    if n is None:
        ctx.error(m.node, f"{m.where}: source: wheel needs a 'path' key")
        return {}, None, None
    value = matched(ctx, n, m.path("path"), PATH_RE, "a path to a .whl file")
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
        fields["sha256"] = matched(ctx, pin, m.path("sha256"), SHA256_RE, "64 lowercase hex digits")
    return fields, tf_version, py_version


def _read_bazel_variant(
    ctx: Ctx, m: Keys, tensorflow: str, python: str, tf_node: yaml.Node | None
) -> dict[str, Any]:
    release = tf_release(tensorflow)
    if release is None:
        ctx.error(
            tf_node or m.node,
            f"{m.path('tensorflow')}: no build recipe for this release (got {tensorflow!r}; "
            f"expected {accepted_releases()})",
        )
    else:
        low, high = release.python
        if not release.builds_for(python):
            ctx.error(
                m.get("python") or m.node,
                f"{m.path('python')}: TensorFlow {tensorflow} does not build for this Python "
                f"(got {python!r}; expected {low} to {high})",
            )
    configs: tuple[str, ...] = ()
    if (n := m.get("configs")) is not None:
        configs = listed(ctx, n, m.path("configs"), lambda c, w: _config(ctx, c, w, tensorflow))
    cpu_flags: tuple[str, ...] = ()
    if (n := m.get("cpu_flags")) is not None:
        flag_names = list(cpu.tf_flag_table())
        cpu_flags = listed(
            ctx, n, m.path("cpu_flags"), lambda c, w: choice(ctx, c, w, flag_names, "CPU flag")
        )
    march = None
    if (n := m.get("march")) is not None:
        march = choice(ctx, n, m.path("march"), [*cpu.marches(), "host", "native"], "-march")
    copts: tuple[str, ...] = ()
    if (n := m.get("copts")) is not None:
        rule = "a compiler option like -O3 or -mtune=haswell (no spaces, quotes or $)"
        copts = listed(ctx, n, m.path("copts"), lambda c, w: matched(ctx, c, w, COPT_RE, rule))
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


def _config(ctx: Ctx, node: yaml.Node, where: str, tensorflow: str) -> str | None:
    known = known_configs()
    value = matched(ctx, node, where, CONFIG_RE, "a bazel --config name like mkl")
    if value is None:
        return None
    if value not in known:
        ctx.error(
            node,
            f"{where}: unknown bazel config (got {value!r}; expected one of "
            f"{', '.join(known)})" + did_you_mean(value, known),
        )
        return None
    return value  # whether the variant's release defines it is the plan's (config_refusal)


def _read_cuda(ctx: Ctx, node: yaml.Node, where: str, release: Release | None) -> Cuda | None:
    m = as_mapping(ctx, node, where)
    if m is None:
        return None
    m.check_keys(["version", "cudnn", "compute_capabilities"], required=["compute_capabilities"])
    versions = {}
    for key in ("version", "cudnn"):
        n = m.get(key)
        default = (release.cudnn if key == "cudnn" else release.cuda) if release else None
        versions[key] = (
            matched(ctx, n, m.path(key), CUDA_VERSION_RE, "a version like 12.5.1")
            if n is not None
            else default
        )
    caps: tuple[str, ...] = ()
    if (n := m.get("compute_capabilities")) is not None:
        caps = listed(ctx, n, m.path("compute_capabilities"), lambda c, w: _capability(ctx, c, w))
        if not caps:
            ctx.error(n, f"{m.path('compute_capabilities')}: needs at least one entry")
    if versions["version"] is None or versions["cudnn"] is None or not caps:
        return None
    return Cuda(versions["version"], versions["cudnn"], caps)


def _capability(ctx: Ctx, node: yaml.Node, where: str) -> str | None:
    value = scalar(ctx, node, where, "a compute capability like sm_90, compute_90 or 9.0")
    if value is None:
        return None
    if CC_RE.fullmatch(value):
        return value
    if match := CC_NUMBER_RE.fullmatch(value):
        return f"sm_{match.group(1)}{match.group(2)}"
    ctx.error(
        node,
        f"{where}: not a compute capability (got {show(node)}; expected sm_NN, compute_NN or N.N)",
    )
    return None
