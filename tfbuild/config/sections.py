"""Reading the other sections of matrix.yaml: defaults (TensorFlow, Python, base images, bazel
and pip settings), tunings, the suite and its presets, the baseline, the opt-in sets."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal

import yaml

from tfbuild.config.model import (
    INHERIT_PIP,
    QUICK_BUDGET,
    BaseImages,
    Baseline,
    BazelSettings,
    Budget,
    Defaults,
    OptIn,
    PipSettings,
    Suite,
    SuiteSettings,
    ThreadCount,
    Tuning,
    Variant,
    Where,
)
from tfbuild.config.suite import BENCHMARKS
from tfbuild.config.tensorflow import accepted_releases, tf_release
from tfbuild.config.values import (
    BAZEL_FLAG_RE,
    BUDGET_EXAMPLE,
    BUILD_NETWORKS,
    ENV_NAME_RE,
    ENV_VALUE_RE,
    HOST_DIR_RE,
    HOST_RE,
    IMAGE_RE,
    INDEX_URL_RE,
    KNOWN_ENV,
    NAME_RE,
    NAME_RULE,
    PATH_RE,
    PINNED_EXPECTED,
    PINNED_RE,
    PY_VERSION_RE,
    TF_VERSION_RE,
    THREAD_WORDS,
    URL_RE,
    VOLUME_RE,
    XLA_MODES,
    did_you_mean,
    parse_budget,
    parse_percent,
)
from tfbuild.config.yamlread import (
    Ctx,
    Keys,
    as_mapping,
    boolean,
    choice,
    integer,
    listed,
    matched,
    scalar,
    show,
)


def read_defaults(ctx: Ctx, node: yaml.Node | None) -> Defaults:
    base = Defaults(
        tensorflow="2.21.0",
        python="3.11",
        base_images=BaseImages(build="tfbuild/base:bookworm", runtime="tfbuild/base:bookworm"),
        bazel=BazelSettings("tfbuild-bazel-cache", True, None, None, (), "bridge"),
        pip=INHERIT_PIP,
    )
    if node is None:
        return base
    m = as_mapping(ctx, node, "defaults")
    if m is None:
        return base
    m.check_keys(["tensorflow", "python", "base_images", "bazel", "pip"])
    tensorflow, python = base.tensorflow, base.python
    if (n := m.get("tensorflow")) is not None:
        value = matched(ctx, n, m.path("tensorflow"), TF_VERSION_RE, "a release like 2.17.1")
        if value is not None and tf_release(value) is None:
            ctx.error(
                n,
                f"defaults.tensorflow: no build recipe for this release (got {value!r}; "
                f"expected {accepted_releases()})",
            )
        tensorflow = value or tensorflow
    if (n := m.get("python")) is not None:
        python = matched(ctx, n, m.path("python"), PY_VERSION_RE, "a version like 3.11") or python
    return Defaults(
        tensorflow=tensorflow,
        python=python,
        base_images=_read_base_images(ctx, m.get("base_images"), base.base_images),
        bazel=_read_bazel(ctx, m.get("bazel"), base.bazel),
        pip=_read_pip(ctx, m.get("pip"), base.pip),
        set_at=_positions(ctx, node, "defaults"),
    )


def _positions(ctx: Ctx, node: yaml.Node, path: str) -> dict[str, Where]:
    """Every key of a mapping node and of the mappings inside it, dotted from `path`, with the
    line that sets it."""
    found: dict[str, Where] = {}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                name = f"{path}.{key.value}"
                found[name] = Where(ctx.file, key.start_mark.line + 1)
                found |= _positions(ctx, value, name)
    return found


def _read_base_images(ctx: Ctx, node: yaml.Node | None, base: BaseImages) -> BaseImages:
    if node is None or (m := as_mapping(ctx, node, "defaults.base_images")) is None:
        return base
    m.check_keys(["build", "runtime", "from"])
    expected = "an image reference like debian:bookworm or registry.example.com/img:tag"
    images: dict[str, str | None] = {}
    for key in ("build", "runtime"):
        n = m.get(key)
        images[key] = (
            matched(ctx, n, m.path(key), IMAGE_RE, expected) if n is not None else None
        ) or getattr(base, key)
    source = base.source
    if (n := m.get("from")) is not None:
        source = None  # null: debootstrap everywhere
        if not n.tag.endswith(":null"):
            value = matched(ctx, n, m.path("from"), IMAGE_RE, PINNED_EXPECTED)
            if value is not None and not PINNED_RE.search(value):
                ctx.error(
                    n,
                    f"defaults.base_images.from: not pinned by digest (got {show(n)}; "
                    f"expected {PINNED_EXPECTED})",
                )
            source = value
    return BaseImages(build=str(images["build"]), runtime=str(images["runtime"]), source=source)


def _read_bazel(ctx: Ctx, node: yaml.Node | None, base: BazelSettings) -> BazelSettings:
    if node is None or (m := as_mapping(ctx, node, "defaults.bazel")) is None:
        return base
    m.check_keys(["cache", "disk_cache", "remote_cache", "remote_executor", "flags", "network"])
    cache = base.cache
    if (n := m.get("cache")) is not None:
        value = scalar(ctx, n, m.path("cache"), "a volume name or an absolute path")
        if value is not None and not (VOLUME_RE.fullmatch(value) or HOST_DIR_RE.fullmatch(value)):
            ctx.error(
                n,
                f"defaults.bazel.cache: not valid (got {show(n)}; expected a Docker volume name "
                "like tfbuild-bazel-cache or an absolute host path without spaces)",
            )
        elif value is not None:
            cache = value
    disk_cache = base.disk_cache
    if (n := m.get("disk_cache")) is not None:
        flag = boolean(ctx, n, m.path("disk_cache"))
        disk_cache = base.disk_cache if flag is None else flag
    url_rule = "a grpc://, grpcs://, http:// or https:// URL without credentials"
    remote = {}
    for key in ("remote_cache", "remote_executor"):
        n = m.get(key)
        remote[key] = matched(ctx, n, m.path(key), URL_RE, url_rule) if n is not None else None
    flags: tuple[str, ...] = ()
    if (n := m.get("flags")) is not None:
        flags = listed(
            ctx,
            n,
            m.path("flags"),
            lambda c, w: matched(ctx, c, w, BAZEL_FLAG_RE, "a bazel flag like --jobs=8"),
        )
    network = base.network
    if (n := m.get("network")) is not None:
        network = choice(ctx, n, m.path("network"), BUILD_NETWORKS, "network") or network
    return BazelSettings(
        cache, disk_cache, remote["remote_cache"], remote["remote_executor"], flags, network
    )


def _read_pip(ctx: Ctx, node: yaml.Node | None, base: PipSettings) -> PipSettings:
    if node is None or (m := as_mapping(ctx, node, "defaults.pip")) is None:
        return base
    m.check_keys(["index_url", "extra_index_urls", "ca_bundle", "trusted_hosts"])

    def url(n: yaml.Node, where: str) -> str | None:
        if isinstance(n, yaml.ScalarNode) and n.value == "inherit":
            return "inherit"
        return matched(ctx, n, where, INDEX_URL_RE, "inherit or an https:// or file:// URL")

    index_url = base.index_url
    if (n := m.get("index_url")) is not None:
        index_url = url(n, m.path("index_url")) or index_url
    extra: tuple[str, ...] | Literal["inherit"] = base.extra_index_urls
    if (n := m.get("extra_index_urls")) is not None:
        if isinstance(n, yaml.ScalarNode) and n.value == "inherit":
            extra = "inherit"
        else:
            extra = listed(
                ctx,
                n,
                m.path("extra_index_urls"),
                lambda c, w: matched(ctx, c, w, INDEX_URL_RE, "an https:// or file:// URL"),
            )
    ca_bundle = base.ca_bundle
    if (n := m.get("ca_bundle")) is not None:
        value = scalar(ctx, n, m.path("ca_bundle"), "inherit, none, or an absolute path")
        if (
            value is not None
            and value not in ("inherit", "none")
            and not (value.startswith("/") and PATH_RE.fullmatch(value))
        ):
            ctx.error(
                n,
                f"defaults.pip.ca_bundle: not valid (got {show(n)}; expected inherit, none, or "
                "an absolute path to a PEM bundle)",
            )
        elif value is not None:
            ca_bundle = value
    trusted: tuple[str, ...] = base.trusted_hosts
    if (n := m.get("trusted_hosts")) is not None:
        trusted = listed(
            ctx,
            n,
            m.path("trusted_hosts"),
            lambda c, w: matched(ctx, c, w, HOST_RE, "a host name, optionally with :port"),
        )
    return PipSettings(index_url, extra, ca_bundle, trusted)


def read_tuning(ctx: Ctx, node: yaml.Node, where: str) -> Tuning | None:
    m = as_mapping(ctx, node, where)
    if m is None:
        return None
    name_node = m.get("name")
    name = matched(ctx, name_node, m.path("name"), NAME_RE, NAME_RULE) if name_node else None
    if name is not None:
        m.where = f"tuning {name!r}"
    m.check_keys(["name", "intra_op", "inter_op", "env", "xla"], required=["name"])
    threads: dict[str, ThreadCount | None] = {}
    for key in ("intra_op", "inter_op"):
        n = m.get(key)
        threads[key] = _threads(ctx, n, m.path(key)) if n is not None else None
    env: list[tuple[str, str]] = []
    if (n := m.get("env")) is not None and (em := as_mapping(ctx, n, m.path("env"))) is not None:
        for var, (key_node, value_node) in em.items.items():
            item = _env_item(ctx, var, key_node, value_node, m.path("env"))
            if item is not None:
                env.append(item)
    xla = (
        choice(ctx, n, m.path("xla"), list(XLA_MODES), "XLA mode") if (n := m.get("xla")) else None
    )
    if xla == "auto" and any(var == "TF_XLA_FLAGS" for var, _ in env):
        ctx.error(
            m.get("xla") or m.node,
            f"{m.path('xla')}: auto sets TF_XLA_FLAGS, which env sets too; expected one of them",
        )
    if name is None:
        return None
    return Tuning(
        name=name,
        intra_op=threads["intra_op"],
        inter_op=threads["inter_op"],
        env=tuple(env),
        xla=xla,
        where=Where(ctx.file, m.node.start_mark.line + 1),
    )


def _threads(ctx: Ctx, node: yaml.Node, where: str) -> ThreadCount | None:
    expected = "a thread count from 1 to 1024, physical, or logical"
    value = scalar(ctx, node, where, expected)
    if value is None:
        return None
    if value in THREAD_WORDS:
        return value
    if re.fullmatch(r"\d{1,4}", value) and 1 <= int(value) <= 1024:
        return int(value)
    ctx.error(
        node,
        f"{where}: not a thread count (got {show(node)}; expected {expected})"
        + did_you_mean(value, THREAD_WORDS),
    )
    return None


def _env_item(
    ctx: Ctx, var: str, key_node: yaml.Node, value_node: yaml.Node, where: str
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
    value = scalar(ctx, value_node, f"{where}.{var}", "a value")
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
            f"{where}.{var}: not accepted (got {show(value_node)}; expected {accepted[1]})",
        )
        return None
    return var, value


_SUITE_KEYS = ["benchmarks", "min_rounds", "max_rounds", "budget", "resolve", "rounds"]


_FIXED_BY_SUITE = {
    "warmup": "warm-up is fixed by the suite since version 2",
    "samples": "samples and iterations are fixed per benchmark by the suite since version 2 "
    "(`tfbuild calibrate` shows why)",
}


def read_suite(ctx: Ctx, node: yaml.Node | None) -> Suite:
    default = SuiteSettings(tuple(BENCHMARKS))
    if node is None or (m := as_mapping(ctx, node, "suite")) is None:
        return Suite(default, _builtin_presets(default))
    _refuse_fixed(ctx, m)
    m.check_keys([*_SUITE_KEYS, "presets", *_FIXED_BY_SUITE])
    settings = _suite_settings(ctx, m, default)
    presets = _builtin_presets(settings)
    set_at = _positions(ctx, node, "suite")
    if (n := m.get("presets")) is not None and (pm := as_mapping(ctx, n, "suite.presets")):
        for preset, (key, value) in pm.items.items():
            if not NAME_RE.fullmatch(preset):
                ctx.error(key, f"suite.presets: not a valid preset name (got {preset!r})")
                continue
            if (sub := as_mapping(ctx, value, f"suite.presets.{preset}")) is not None:
                _refuse_fixed(ctx, sub)
                sub.check_keys([*_SUITE_KEYS, *_FIXED_BY_SUITE])
                presets[preset] = _suite_settings(ctx, sub, settings)
    return Suite(settings, presets, set_at)


def _builtin_presets(settings: SuiteSettings) -> dict[str, SuiteSettings]:
    """quick: a small time budget (10 min, a minute per config beyond ten) and a coarse target,
    over the file's own benchmark list."""
    quick = dataclasses.replace(settings, budget=QUICK_BUDGET, resolve=0.10, rounds=None)
    return {"quick": quick, "full": settings}


def _refuse_fixed(ctx: Ctx, m: Keys) -> None:
    for key, why in _FIXED_BY_SUITE.items():
        if (n := m.get(key)) is not None:
            ctx.error(n, f"{m.path(key)}: {why}; remove it (got {show(n)})")


def _budget(text: str) -> Budget | None:
    found = parse_budget(text)
    return None if found is None else Budget(*found)


def _suite_settings(ctx: Ctx, m: Keys, base: SuiteSettings) -> SuiteSettings:
    values: dict[str, Any] = {}
    if (n := m.get("benchmarks")) is not None:
        names = list(BENCHMARKS)
        values["benchmarks"] = listed(
            ctx, n, m.path("benchmarks"), lambda c, w: choice(ctx, c, w, names, "benchmark")
        )
        if not values["benchmarks"] and isinstance(n, yaml.SequenceNode) and not n.value:
            ctx.error(n, f"{m.path('benchmarks')}: needs at least one benchmark")
    for key, low in (("min_rounds", 2), ("max_rounds", 2), ("rounds", 1)):
        if (n := m.get(key)) is not None and (v := integer(ctx, n, m.path(key), low, 1000)):
            values[key] = v
    parsed: list[tuple[str, str, Callable[[str], Any], str, str]] = [
        ("budget", "budget", _budget, "a budget", BUDGET_EXAMPLE),
        ("resolve", "resolve", parse_percent, "a percentage", "between 0% and 100%, like 5%"),
    ]
    for key, field_name, parse, noun, example in parsed:
        if (n := m.get(key)) is None:
            continue
        text = scalar(ctx, n, m.path(key), f"{noun} {example}")
        if text is not None:
            if (value := parse(text)) is None:
                ctx.error(
                    n, f"{m.path(key)}: not {noun} (got {show(n)}; expected {noun} {example})"
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


def read_baseline(
    ctx: Ctx, node: yaml.Node | None, variants: Sequence[Variant], tunings: Sequence[Tuning]
) -> Baseline | None:
    if node is None:
        if variants and tunings:
            return Baseline(variants[0].name, tunings[0].name)
        return None
    m = as_mapping(ctx, node, "baseline")
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
            chosen[key] = choice(ctx, n, m.path(key), names[key], key)
    if chosen["variant"] is None or chosen["tuning"] is None:
        return None
    return Baseline(chosen["variant"], chosen["tuning"])


def read_opt_in(
    ctx: Ctx, node: yaml.Node | None, variants: Sequence[Variant], baseline: Baseline | None
) -> tuple[OptIn, ...]:
    """opt_in: NAME -> {about, variants}: sets of variants the default run leaves out."""
    if node is None or (m := as_mapping(ctx, node, "opt_in")) is None:
        return ()
    names = [v.name for v in variants]
    sets = []
    for name, (key, value) in m.items.items():
        if not NAME_RE.fullmatch(name):
            ctx.error(key, f"opt_in: not a valid set name (got {name!r}; expected {NAME_RULE})")
            continue
        if (sub := as_mapping(ctx, value, f"opt_in.{name}")) is None:
            continue
        sub.check_keys(["about", "variants"], required=["about", "variants"])
        about = sub.get("about")
        text = scalar(ctx, about, sub.path("about"), "a sentence") if about else None
        listed_node = sub.get("variants")
        if listed_node is None:
            continue
        chosen = listed(
            ctx,
            listed_node,
            sub.path("variants"),
            lambda c, w: choice(ctx, c, w, names, "variant"),
        )
        if isinstance(listed_node, yaml.SequenceNode) and not listed_node.value:
            ctx.error(listed_node, f"{sub.path('variants')}: needs at least one variant")
        children = listed_node.value if isinstance(listed_node, yaml.SequenceNode) else []
        for child in children:
            if baseline is not None and getattr(child, "value", None) == baseline.variant:
                ctx.error(
                    child,
                    f"{sub.path('variants')}: the baseline variant {baseline.variant!r} cannot be "
                    "opt-in (every run compares with it); expected other variants",
                )
        if text:
            where = Where(ctx.file, key.start_mark.line + 1)
            sets.append(OptIn(name, " ".join(text.split()), chosen, where=where))
    return tuple(sets)


def unique(ctx: Ctx, items: Sequence[Any], key: str, kind: str, nodes: Sequence[yaml.Node]) -> None:
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
