"""`tfbuild build`, `tfbuild fetch` and `tfbuild base-image`: wheels into the store."""

from __future__ import annotations

import glob
import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from tfbuild.cli.app import cli
from tfbuild.cli.options import (
    QUIET_OPTION,
    TENSORFLOW_OPTION,
    Layered,
    debug_option,
    json_option,
    matrix_option,
    selection_options,
    store_option,
)
from tfbuild.cli.planning import build_target, read_matrix
from tfbuild.cli.values import Selection, printable_path
from tfbuild.config.model import Variant
from tfbuild.config.settings import BAZEL_CACHE_ENV, TF_SOURCE_ENV
from tfbuild.errors import BuildFailed, EngineUnavailable, UsageError
from tfbuild.plan.make import Plan, PlannedVariant

if TYPE_CHECKING:
    from tfbuild.build.stage import BuildOptions, BuildOutcome
    from tfbuild.store import WheelStore


@dataclass(frozen=True, kw_only=True)
class BuildSettings:
    matrix: Path | None
    variants: tuple[str, ...]
    build_all: bool
    selection: Selection
    store: Path
    dry_run: bool
    force: bool
    tf_source: Path | None
    jobs: int
    bazel_cache: str | None
    tensorflow: str | None
    host: Path | None
    quiet: bool

    def __post_init__(self) -> None:
        chosen = self.selection.only or self.selection.skip or self.selection.opt_in
        if not (self.variants or self.build_all or chosen):
            raise UsageError(
                "name what to build: --variant NAME, --only PATTERN, --with SET or --all"
            )


@cli.command()
@matrix_option
@click.option(
    "--variant",
    "variants",
    multiple=True,
    metavar="NAME",
    help="Variant to build (name or id; repeatable).",
)
@click.option("--all", "build_all", is_flag=True, help="Build every variant of the matrix.")
@selection_options
@store_option
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the rendered Dockerfile, build script and bazel command; build nothing.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the content key is unchanged.")
@click.option(
    "--tf-source",
    cls=Layered,
    variable=TF_SOURCE_ENV,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    callback=lambda _ctx, _param, value: printable_path(value),
    help=f"Build this local TensorFlow tree (copied in) instead of cloning the tag. Also set by "
    f"{TF_SOURCE_ENV}.",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Variants built at the same time on the engine.",
)
@click.option(
    "--bazel-cache",
    metavar="VOLUME_OR_PATH",
    help=f"Override defaults.bazel.cache: a Docker volume name or an absolute path. Also set by "
    f"{BAZEL_CACHE_ENV}.",
)
@TENSORFLOW_OPTION
@click.option(
    "--host",
    "host_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Build for the machine this saved `tfbuild detect --format json` describes (march: host, "
    "copts), e.g. the runner that will benchmark the wheels; default: this machine.",
)
@QUIET_OPTION
@json_option("each variant's outcome (built, up to date, fetched, failed), wheel, sha256, log")
@debug_option
def build(
    matrix_path: Path | None,
    variants: tuple[str, ...],
    build_all: bool,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    opt_in: tuple[str, ...],
    store_path: Path,
    dry_run: bool,
    force: bool,
    tf_source: Path | None,
    jobs: int,
    bazel_cache: str | None,
    tensorflow: str | None,
    host_path: Path | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Build wheels of source variants in Docker (bazel with their configs and copts).

    The recipe for the variant's TensorFlow era is rendered from templates/ (a templates/ folder
    next to matrix.yaml overrides the packaged one), built on the engine DOCKER_HOST points to,
    and the wheel lands in STORE/<variant-id>/ with manifest.json and build.log. The wheel's
    version carries the variant as a local label (2.17.1+mkl.avx2) and its manifest inside.
    Building an unchanged variant again is a no-op (--force rebuilds). Prebuilt variants are
    fetched instead.
    """
    from tfbuild.build.stage import (
        BuildOptions,
        build_many,
        build_plan_lines,
        in_store,
    )
    from tfbuild.engine import docker_status
    from tfbuild.plan.make import make_plan
    from tfbuild.plan.select import select
    from tfbuild.plan.target import recipe_refusal
    from tfbuild.progress import make_reporter
    from tfbuild.store import WheelStore

    settings = BuildSettings(
        matrix=matrix_path,
        variants=variants,
        build_all=build_all,
        selection=Selection(only=only, skip=skip, opt_in=opt_in),
        store=store_path,
        dry_run=dry_run,
        force=force,
        tf_source=tf_source,
        jobs=jobs,
        bazel_cache=bazel_cache,
        tensorflow=tensorflow,
        host=host_path,
        quiet=quiet,
    )
    matrix = read_matrix(settings.matrix, settings.tensorflow, settings.bazel_cache)
    chosen: list[Variant]
    if settings.variants:
        chosen = list(dict.fromkeys(matrix.variant(name) for name in settings.variants))
    else:
        only, skip = settings.selection.only, settings.selection.skip
        sets = [s.name for s in matrix.opt_in] if settings.build_all else settings.selection.opt_in
        if sets and not (only or skip or settings.build_all):  # `--with SET` alone: that set
            only = tuple(glob.escape(v) for v in matrix.opted_in(sets))
        chosen = list(dict.fromkeys(v for v, _, _ in select(matrix, only, skip, sets)))
    for v in chosen:
        if v.name in matrix.notes:
            click.echo(f"note: {matrix.notes[v.name]}", err=True)
    exact = [glob.escape(v.name) for v in chosen]
    plan = make_plan(matrix, build_target(settings.host), only=exact)
    planned = [plan.planned(v.name) for v in chosen]
    options = BuildOptions(force=settings.force, tf_source=settings.tf_source)
    target = f"the machine in {settings.host}" if settings.host else "this machine"
    for pv in planned:  # before any estimate: what no recipe builds is refused outright
        if pv.variant.needs_build and (refusal := recipe_refusal(pv.variant)) is not None:
            raise UsageError(refusal)
    for pv in planned:
        if pv.variant.needs_build and pv.verdict.runs is False:
            click.echo(
                f"tfbuild: warning: {pv.variant.name} will not run on {target}: "
                f"{'; '.join(pv.verdict.reasons)}; built as asked",
                err=True,
            )
    store = WheelStore(settings.store)
    to_build = [pv for pv in planned if pv.variant.needs_build and not in_store(store, pv)]
    for line in build_plan_lines(to_build, plan, store):
        click.echo(f"build {line}", err=True)
    if settings.dry_run:
        if as_json:
            raise UsageError(
                "--dry-run prints the recipes, not a JSON document: drop --format json"
            )
        for pv in planned:
            _print_dry_run(pv, plan, options)
        return
    status = docker_status()
    if any(v.needs_build for v in chosen) and not status.reachable:
        raise EngineUnavailable(
            f"building source variants needs a Docker engine; none answers at {status.host} "
            f"({status.error}). Start dockerd or set DOCKER_HOST; --dry-run shows the recipe."
        )
    reporter = make_reporter(settings.quiet)
    outcomes: list[BuildOutcome] = []
    with reporter:
        failures = build_many(planned, plan, store, reporter, options, settings.jobs, outcomes)
    if as_json:
        ids = {pv.variant.name: pv.variant.id for pv in planned}
        click.echo(json.dumps(_built_json(store, outcomes, ids), indent=2))
    if failures:
        raise BuildFailed(f"{len(failures)} of {len(planned)} builds failed; see above")


def _built_json(
    store: WheelStore, outcomes: list[BuildOutcome], ids: dict[str, str]
) -> dict[str, object]:
    """`build --format json`: every variant's outcome in the order asked, with what the store
    now holds for it (its wheel and that wheel's sha256, from the manifest beside it)."""
    order = list(ids)
    rows = []
    for outcome in sorted(outcomes, key=lambda o: order.index(o.variant)):
        manifest = store.read_manifest(ids[outcome.variant]) if outcome.wheel else None
        rows.append({
            "variant": outcome.variant,
            "status": outcome.status,
            "wheel": str(outcome.wheel) if outcome.wheel else None,
            "sha256": manifest.sha256 if manifest else None,
            "detail": outcome.message,
            "seconds": round(outcome.seconds, 1),
            "log": str(outcome.log) if outcome.log else None,
        })  # fmt: skip
    return {"store": str(store.root), "builds": rows}


def _print_dry_run(planned: PlannedVariant, plan: Plan, options: BuildOptions) -> None:
    from tfbuild.build.stage import prepare

    variant = planned.variant
    if variant.source != "bazel":
        what = variant.requirement or variant.path
        click.echo(f"# {variant.name}: source {variant.source} ({what}); `tfbuild fetch` gets it\n")
        return
    recipe, rendered, settings = prepare(planned, plan, options)
    click.echo(f"# ===== {variant.name} ({variant.id}): Dockerfile =====")
    click.echo(rendered.dockerfile)
    click.echo(f"# ===== {variant.name}: tfbuild-build =====")
    click.echo(rendered.build_script)
    click.echo(f"# ===== {variant.name}: bazel command =====")
    click.echo(" ".join(shlex.quote(a) for a in recipe.bazel_command))
    for note in (*recipe.notes, *settings.notes):
        click.echo(f"# note: {note}")
    click.echo("")


@dataclass(frozen=True, kw_only=True)
class FetchSettings:
    matrix: Path | None
    selection: Selection
    store: Path
    refresh: bool


@cli.command()
@matrix_option
@selection_options
@store_option
@click.option("--refresh", is_flag=True, help="Ask the index again (picks up a new release).")
@json_option("each variant's wheel, its sha256 and whether it was downloaded now")
@debug_option
def fetch(
    matrix_path: Path | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    opt_in: tuple[str, ...],
    store_path: Path,
    refresh: bool,
    as_json: bool,
) -> None:
    """Download the prebuilt variants (source: pypi) into the wheel store, once.

    Each lands in STORE/<variant-id>/ with a manifest.json: name, version, sha256, the index URL
    it came from and its tags. source: wheel variants get a manifest with their sha256.
    Source builds are made by `tfbuild build`.
    """
    from tfbuild.fetch import fetch as fetch_variant
    from tfbuild.plan.select import select
    from tfbuild.store import WheelStore

    settings = FetchSettings(
        matrix=matrix_path,
        selection=Selection(only=only, skip=skip, opt_in=opt_in),
        store=store_path,
        refresh=refresh,
    )
    matrix = read_matrix(settings.matrix)
    store = WheelStore(settings.store)
    seen: set[str] = set()
    fetched: list[dict[str, object]] = []
    selection = settings.selection
    for variant, _, _ in select(matrix, selection.only, selection.skip, selection.opt_in):
        if variant.name in seen or variant.source == "bazel":
            continue
        seen.add(variant.name)
        artifact, downloaded = fetch_variant(variant, store, matrix.defaults.pip, settings.refresh)
        fetched.append({"variant": variant.name, "wheel": str(artifact.wheel),
                        "sha256": artifact.sha256, "downloaded": downloaded})  # fmt: skip
        if not as_json:
            state = "downloaded" if downloaded else "already in store"
            click.echo(f"{variant.name}: {artifact.wheel} ({state}, sha256 {artifact.sha256[:16]})")
    if as_json:
        click.echo(json.dumps({"store": str(settings.store), "fetched": fetched}, indent=2))
    elif not seen:
        click.echo("nothing to fetch: the selection has only source builds (`tfbuild build`)")


@cli.command("base-image")
@click.argument("tags", nargs=-1, metavar="[TAG]...")
@matrix_option
@click.option(
    "--from",
    "source",
    metavar="IMAGE@sha256:DIGEST",
    default=None,
    help="Registry image, pinned by digest, to make the base image from. "
    "Default: the matrix's defaults.base_images.from.",
)
@click.option(
    "--debootstrap",
    is_flag=True,
    help="Make it with debootstrap (root) even where a registry answers.",
)
@debug_option
def base_image(
    tags: tuple[str, ...], matrix_path: Path | None, source: str | None, debootstrap: bool
) -> None:
    """Put the base image of build and runtime containers on the engine: pulled by digest
    from a registry (defaults.base_images.from) where one answers, made with debootstrap where
    none does. Default TAG: the matrix's build and runtime base images."""
    from tfbuild.build.base import make
    from tfbuild.config.values import IMAGE_RE, PINNED_EXPECTED, PINNED_RE

    matrix = read_matrix(matrix_path)
    images = matrix.defaults.base_images
    if source is not None and not (IMAGE_RE.fullmatch(source) and PINNED_RE.search(source)):
        raise UsageError(f"--from {source}: not pinned by digest (expected {PINNED_EXPECTED})")
    chosen = source or images.source
    for tag in tags or tuple(dict.fromkeys((images.build, images.runtime))):
        made = make(tag, chosen, lambda line: click.echo(line, err=True), debootstrap)
        click.echo(f"{made.tag}: {made.how}, {made.detail}")
