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
    BAZEL_CACHE_OPTION,
    QUIET_OPTION,
    TENSORFLOW_OPTION,
    TF_SOURCE_OPTION,
    debug_option,
    json_option,
    matrix_option,
    selection_options,
    store_option,
)
from tfbuild.cli.planning import build_target, read_matrix
from tfbuild.cli.values import Selection
from tfbuild.config.model import Matrix, Variant
from tfbuild.errors import BuildFailed, EngineUnavailable, UsageError
from tfbuild.plan.make import Plan, PlannedVariant

if TYPE_CHECKING:
    from tfbuild.build.stage import BuildOptions, BuildOutcome
    from tfbuild.engine import DockerInfo
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
    as_json: bool = False

    def __post_init__(self) -> None:
        chosen = self.selection.only or self.selection.skip or self.selection.opt_in
        if not (self.variants or self.build_all or chosen):
            raise UsageError(
                "name what to build: --variant NAME, --only PATTERN, --with SET or --all"
            )

    def options(self) -> BuildOptions:
        """What every build of the command shares: --force and --tf-source."""
        from tfbuild.build.stage import BuildOptions

        return BuildOptions(force=self.force, tf_source=self.tf_source)


@dataclass(frozen=True, kw_only=True)
class BuildOrder:
    """The variants `build` was asked for, each once in the order asked, planned for the
    machine the wheels are built for, and the store they go to."""

    plan: Plan
    planned: tuple[PlannedVariant, ...]
    host: Path | None
    """The saved profile of the machine built for (None: this machine)."""
    store: WheelStore

    @property
    def target(self) -> str:
        """The machine built for, as messages name it."""
        return f"the machine in {self.host}" if self.host else "this machine"


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
@TF_SOURCE_OPTION
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Variants built at the same time on the engine.",
)
@BAZEL_CACHE_OPTION
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
        as_json=as_json,
    )
    order = _build_order(settings)
    _say_order(order)
    if settings.dry_run:
        _print_dry_runs(order, settings)
    else:
        _build_into(order, settings)


def chosen_variants(matrix: Matrix, settings: BuildSettings) -> tuple[Variant, ...]:
    """The variants `build` is asked for, each once in the order asked: those named with
    --variant; else those the selection picks (--all: with every opt-in set; `--with SET`
    alone: that set's variants only)."""
    from tfbuild.plan.select import select

    if settings.variants:
        return tuple(dict.fromkeys(matrix.variant(name) for name in settings.variants))
    only, skip = settings.selection.only, settings.selection.skip
    sets = [s.name for s in matrix.opt_in] if settings.build_all else settings.selection.opt_in
    if sets and not (only or skip or settings.build_all):  # `--with SET` alone: that set
        only = tuple(glob.escape(v) for v in matrix.opted_in(sets))
    return tuple(dict.fromkeys(v for v, _, _ in select(matrix, only, skip, sets)))


def _build_order(settings: BuildSettings) -> BuildOrder:
    """The variants asked for, planned for the machine built for, each variant's note from
    reading the matrix said first; refused (UsageError) when no recipe builds one of them."""
    from tfbuild.plan.make import make_plan
    from tfbuild.store import WheelStore

    matrix = read_matrix(settings.matrix, settings.tensorflow, settings.bazel_cache)
    chosen = chosen_variants(matrix, settings)
    for v in chosen:
        if v.name in matrix.notes:
            click.echo(f"note: {matrix.notes[v.name]}", err=True)
    exact = [glob.escape(v.name) for v in chosen]
    plan = make_plan(matrix, build_target(settings.host), only=exact)
    order = BuildOrder(
        plan=plan,
        planned=tuple(plan.planned(v.name) for v in chosen),
        host=settings.host,
        store=WheelStore(settings.store),
    )
    if (refusal := first_recipe_refusal(order)) is not None:
        raise UsageError(refusal)
    return order


def first_recipe_refusal(order: BuildOrder) -> str | None:
    """Why no recipe builds a source variant of the order (the first such), said before any
    estimate; None when every one has a recipe."""
    from tfbuild.plan.target import recipe_refusal as refusal_of

    refusals = (refusal_of(pv.variant) for pv in order.planned if pv.variant.needs_build)
    return next((r for r in refusals if r is not None), None)


def wont_run_warnings(order: BuildOrder) -> list[str]:
    """The source variants of the order that will not run on the machine built for, each with
    why: built anyway, as asked."""
    return [
        f"{pv.variant.name} will not run on {order.target}: "
        f"{'; '.join(pv.verdict.reasons)}; built as asked"
        for pv in order.planned
        if pv.variant.needs_build and pv.verdict.runs is False
    ]


def _say_order(order: BuildOrder) -> None:
    """On stderr, before anything is built: what will not run where it goes, and each build
    the store lacks with its estimate."""
    from tfbuild.build.stage import build_plan_lines, in_store

    for warning in wont_run_warnings(order):
        click.echo(f"tfbuild: warning: {warning}", err=True)
    to_build = [
        pv for pv in order.planned if pv.variant.needs_build and not in_store(order.store, pv)
    ]
    for line in build_plan_lines(to_build, order.plan, order.store):
        click.echo(f"build {line}", err=True)


def engine_refusal(order: BuildOrder, status: DockerInfo) -> str | None:
    """Why the order cannot be built: it has source variants and no engine answers; None when
    it can (prebuilt variants need no engine)."""
    if status.reachable or not any(pv.variant.needs_build for pv in order.planned):
        return None
    return (
        f"building source variants needs a Docker engine; none answers at {status.host} "
        f"({status.error}). Start dockerd or set DOCKER_HOST; --dry-run shows the recipe."
    )


def _build_into(order: BuildOrder, settings: BuildSettings) -> None:
    """Build (or fetch) every variant of the order into its store, --jobs at a time on the
    engine; each outcome as JSON with --format json; BuildFailed naming how many failed."""
    from tfbuild.build.stage import build_many
    from tfbuild.engine import docker_status
    from tfbuild.progress import make_reporter

    if (refusal := engine_refusal(order, docker_status())) is not None:
        raise EngineUnavailable(refusal)
    reporter = make_reporter(settings.quiet)
    outcomes: list[BuildOutcome] = []
    options = settings.options()
    with reporter:
        failures = build_many(
            order.planned, order.plan, order.store, reporter, options, settings.jobs, outcomes
        )
    if settings.as_json:
        click.echo(json.dumps(_built_json(order, outcomes), indent=2))
    if failures:
        raise BuildFailed(f"{len(failures)} of {len(order.planned)} builds failed; see above")


def _built_json(order: BuildOrder, outcomes: list[BuildOutcome]) -> dict[str, object]:
    """`build --format json`: every variant's outcome in the order asked, with what the store
    now holds for it (its wheel and that wheel's sha256, from the manifest beside it)."""
    ids = {pv.variant.name: pv.variant.id for pv in order.planned}
    order_asked = list(ids)
    rows = []
    for outcome in sorted(outcomes, key=lambda o: order_asked.index(o.variant)):
        manifest = order.store.read_manifest(ids[outcome.variant]) if outcome.wheel else None
        rows.append({
            "variant": outcome.variant,
            "status": outcome.status,
            "wheel": str(outcome.wheel) if outcome.wheel else None,
            "sha256": manifest.sha256 if manifest else None,
            "detail": outcome.message,
            "seconds": round(outcome.seconds, 1),
            "log": str(outcome.log) if outcome.log else None,
        })  # fmt: skip
    return {"store": str(order.store.root), "builds": rows}


def _print_dry_runs(order: BuildOrder, settings: BuildSettings) -> None:
    """`build --dry-run`: each variant's rendered recipe on stdout; refused with --format json."""
    if settings.as_json:
        raise UsageError("--dry-run prints the recipes, not a JSON document: drop --format json")
    options = settings.options()
    for pv in order.planned:
        _print_dry_run(pv, order.plan, options)


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
