"""The build stage: render the recipe, build it on the Docker engine, store the wheel.

The image is built up to the recipe's `source` stage; the build script then runs in a container
with the bazel cache volume (shared by all variants) mounted, and the export (the wheel and the
bazel command line) is copied out. The wheel gets the variant as a PEP 440 local label and its
manifest inside its .dist-info; the manifest is also written beside it. A content key (rendered
recipe, source revision, base image) makes an unchanged rebuild a no-op.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename

from tfbuild import __version__, engine, pip, wheelfile
from tfbuild.build.estimate import BazelProgress, BuildEstimate, estimate, plain, rough
from tfbuild.build.recipe import OUT_DIR, REMOTE_HEADER_ENV, Recipe, make_recipe
from tfbuild.build.render import PREFLIGHT, Rendered, render, template_dirs
from tfbuild.errors import BuildFailed, InstallError
from tfbuild.fetch import fetch
from tfbuild.files import digest, sha256_of
from tfbuild.machine.profile import HostProfile
from tfbuild.plan.make import Plan, PlannedVariant
from tfbuild.progress import Reporter
from tfbuild.store import Manifest, SourceBuild, WheelStore

LOG_TAIL = 30


@dataclass(frozen=True)
class BuildOptions:
    force: bool = False
    tf_source: Path | None = None


@dataclass(frozen=True)
class BuildOutcome:
    variant: str
    status: str  # built, up to date, fetched, failed
    wheel: Path | None
    message: str
    seconds: float
    log: Path | None = None
    """The build's log (a source build's, kept beside its wheel)."""


def prepare(
    planned: PlannedVariant, plan: Plan, options: BuildOptions
) -> tuple[Recipe, Rendered, pip.ContainerPip]:
    """The recipe and its rendered files for one planned source variant (no engine needed)."""
    matrix = plan.matrix
    settings = pip.container_pip(matrix.defaults.pip)
    recipe = make_recipe(
        planned,
        matrix.defaults,
        plan.host,
        options.tf_source,
        ca_bundle=settings.ca_bundle is not None,
    )
    return recipe, render(recipe, template_dirs(matrix.path)), settings


def content_key(recipe: Recipe, rendered: Rendered, base_image_id: str) -> str:
    return digest(rendered.key, recipe.source.kind, recipe.source.ref, recipe.source.revision,
                  base_image_id)  # fmt: skip


def _up_to_date(store: WheelStore, planned: PlannedVariant, key: str) -> Path | None:
    """The stored wheel, when it was built from this very recipe (its content key); its
    manifest then records the plan's build key."""
    variant = planned.variant
    stored = store.stored(variant.id)
    if stored is None:
        return None
    wheel, manifest = stored
    if manifest.build is None or manifest.build.content_key != key:
        return None
    if manifest.build_key != planned.build_key:  # the same recipe, asked for anew
        build = replace(manifest.build, build_key=planned.build_key)
        store.write_manifest(variant.id, replace(manifest, build=build))
    return wheel


def _context(recipe: Recipe, rendered: Rendered, ca_bundle: Path | None) -> engine.Context:
    context = engine.Context()
    context.add_text("Dockerfile", rendered.dockerfile)
    context.add_text("tfbuild-build", rendered.build_script, mode=0o755)
    context.add_text(PREFLIGHT, rendered.preflight, mode=0o755)
    if ca_bundle is not None:
        context.add_path("ca-bundle.pem", ca_bundle)
    if recipe.source.kind == "local":
        assert recipe.source.path is not None
        context.add_path("src", recipe.source.path)
    return context


def build_variant(
    planned: PlannedVariant,
    plan: Plan,
    store: WheelStore,
    reporter: Reporter,
    options: BuildOptions,
) -> BuildOutcome:
    """Build one planned variant for the plan's machine (a prebuilt one is fetched)."""
    started = time.monotonic()
    variant, matrix, host = planned.variant, plan.matrix, plan.host
    if variant.source != "bazel":
        artifact, downloaded = fetch(variant, store, matrix.defaults.pip)
        state = "downloaded" if downloaded else "already in store"
        return BuildOutcome(
            variant.name, "fetched", artifact.wheel, state, time.monotonic() - started
        )
    recipe, rendered, settings = prepare(planned, plan, options)
    base = engine.image_info(recipe.base_image)
    if base is None:
        raise InstallError(
            f"base image {recipe.base_image} is not on the engine; {engine.MAKE_BASE_IMAGE}"
        )
    key = content_key(recipe, rendered, base["id"])
    if not options.force and (wheel := _up_to_date(store, planned, key)) is not None:
        return BuildOutcome(variant.name, "up to date", wheel,
                       f"content key {key[:12]} unchanged; --force rebuilds",
                       time.monotonic() - started, wheel.parent / "build.log")  # fmt: skip
    folder = store.folder(variant.id)
    folder.mkdir(parents=True, exist_ok=True)
    log_path = folder / "build.log"
    tail: list[str] = []
    progress = BazelProgress()
    with log_path.open("w", encoding="utf-8") as log_file:

        def log(raw: str) -> None:
            line = plain(raw)
            log_file.write(line + "\n")
            log_file.flush()
            tail.append(line)
            del tail[:-LOG_TAIL]
            if (said := progress.update(line, time.monotonic())) is not None:
                reporter.status(f"{variant.name}: {said}")
            elif line.startswith("Step ") or line.startswith("INFO:"):
                reporter.running(f"{variant.name}: {line[:90]}")

        try:
            wheel = _run_build(planned, recipe, rendered, settings, base, key, store, log,
                               started, host, matrix.defaults.bazel.network)  # fmt: skip
        except BuildFailed as exc:
            raise BuildFailed(f"{variant.name}: {exc}", tail=tail, log=log_path) from exc
    return BuildOutcome(variant.name, "built", wheel, f"content key {key[:12]}",
                   time.monotonic() - started, log_path)  # fmt: skip


def _run_build(
    planned: PlannedVariant,
    recipe: Recipe,
    rendered: Rendered,
    settings: pip.ContainerPip,
    base: dict[str, Any],
    key: str,
    store: WheelStore,
    log: Callable[[str], None],
    started: float,
    host: HostProfile,
    network: str,
) -> Path:
    variant = planned.variant
    folder = store.folder(variant.id)
    tag = f"tfbuild/build:{variant.id}-{key[:12]}"
    log(f"+ docker build --target source -t {tag} (context: Dockerfile, tfbuild-build, ...)")
    engine.build_image(
        _context(recipe, rendered, settings.ca_bundle), tag, log, target="source",
        labels={"org.tfbuild.variant": variant.id, "org.tfbuild.content-key": key},
    )  # fmt: skip
    volume = engine.ensure_volume(recipe.cache_volume)
    environment = {}
    if os.environ.get(REMOTE_HEADER_ENV):  # credentials only at run time, never in the image
        environment[REMOTE_HEADER_ENV] = os.environ[REMOTE_HEADER_ENV]
    shown = "" if network == "bridge" else f" --network {network}"
    log(f"+ docker run{shown} -v {volume}:/cache {tag} tfbuild-build {OUT_DIR}")
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        work = Path(tmp)
        spec = engine.ContainerSpec(
            tag, ("tfbuild-build", OUT_DIR), "build",
            environment=environment,
            mounts=(engine.Mount("/cache", volume, read_only=False),),
            labels={"org.tfbuild.variant": variant.id, "org.tfbuild.store": str(store.root)},
            network=network,
        )  # fmt: skip
        with engine.container(spec) as created:
            code, _ = engine.run_to_end(created, log, timeout=None)
            if code != 0:
                raise BuildFailed(f"the build script exited with code {code}")
            exported = engine.copy_out(created, OUT_DIR, work)
        wheels = [p for p in exported if p.suffix == ".whl"]
        if len(wheels) != 1:
            raise BuildFailed(f"the build exported {len(wheels)} wheels; expected one")
        release_check(wheels[0].name)
        files = {p.name: p for p in exported}
        command = files["bazel-command.txt"].read_text().strip() if "bazel-command.txt" in files \
            else " ".join(recipe.bazel_command)  # fmt: skip
        bazel_version = (
            files["bazel-version.txt"].read_text().strip()
            if "bazel-version.txt" in files
            else recipe.bazel_version
        )
        build = SourceBuild(
            tensorflow=recipe.tensorflow,
            git_ref=recipe.source.ref or recipe.source.revision,
            tf_source=recipe.source.describe(),
            era=recipe.era,
            bazel_version=bazel_version,
            bazel_command=command,
            configs=tuple(recipe.configs),
            copts=tuple(recipe.copts),
            host_copts=tuple(recipe.host_copts),
            base_image={"reference": recipe.base_image, **base},
            builder_host=host.to_json(),
            build_seconds=round(time.monotonic() - started, 1),
            content_key=key,
            build_key=planned.build_key,
            compiler_flags=tuple(planned.compiler_flags),
            recipe_key=rendered.key,
            templates=rendered.sources,
        )
        manifest = Manifest(variant=variant.definition(), source="bazel", build=build,
                            constraints=variant.constraints,
                            tfbuild_version=__version__)  # fmt: skip
        labelled = wheelfile.relabel(wheels[0], recipe.local_label, manifest.to_json(), work)
        metadata = wheelfile.metadata(labelled)
        manifest = replace(manifest, wheel=labelled.name, sha256=sha256_of(labelled),
                           name=metadata["Name"][0], version=metadata["Version"][0],
                           tags=tuple(pip.wheel_tags(labelled.name)))  # fmt: skip
        final = folder / labelled.name
        labelled.replace(final)
    for old in folder.glob("*.whl"):
        if old != final:
            old.unlink()
    store.write_manifest(variant.id, manifest)
    return final


def in_store(store: WheelStore, planned: PlannedVariant) -> bool:
    """Whether the store holds this variant's wheel as the plan asks for it (its build key),
    intact (its sha256)."""
    stored = store.stored(planned.variant.id)
    return stored is not None and stored[1].build_key == planned.build_key


def estimates(
    variants: Sequence[PlannedVariant], plan: Plan, store: WheelStore
) -> dict[str, BuildEstimate]:
    """Each source build's estimate on the plan's machine (where the engine runs)."""
    bazel = plan.matrix.defaults.bazel
    return {
        pv.variant.name: estimate(
            pv.variant.name,
            plan.host,
            store.read_manifest(pv.variant.id),
            remote_executor=bazel.remote_executor is not None,
            cuda=pv.variant.cuda is not None,
            remote_cache=bazel.remote_cache is not None,
        )
        for pv in variants
    }


def build_plan_lines(
    variants: Sequence[PlannedVariant], plan: Plan, store: WheelStore
) -> list[str]:
    """What a person reads before builds start: each build and its estimate, and the total."""
    found = estimates(variants, plan, store)
    lines = [f"{name}: {e.describe()}" for name, e in found.items()]
    total = sum(e.seconds for e in found.values())
    if len(found) > 1:
        lines.append(f"in all about {rough(total)}, one build after another")
    return lines


def left_out_message(variants: Sequence[PlannedVariant], plan: Plan, store: WheelStore) -> str:
    """The source builds a run leaves out (not in the store), with how to build them and how
    long that takes here."""
    return left_out(estimates(variants, plan, store))


def left_out(found: Mapping[str, BuildEstimate]) -> str:
    """What a run says of the source builds it leaves out: that it builds only when asked, the
    command that builds them, and each estimate once, naming every build it is the estimate of
    (five builds for one recipe on one machine share one), then the total."""
    names = list(found)
    builds: dict[str, list[str]] = {}
    for name, e in found.items():
        builds.setdefault(e.describe(), []).append(name)
    said = " ".join(
        f"{', '.join(these)}: {'each ' if len(these) > 1 else ''}{text}."
        for text, these in builds.items()
    )
    if len(names) > 1:
        total = rough(sum(e.seconds for e in found.values()))
        more = " or more (CUDA)" if any(e.cuda for e in found.values()) else ""
        said += f" In all about {total}{more}, one after another."
    command = "tfbuild build " + " ".join(f"--variant {n}" for n in names)
    return (
        f"Left out the source build{'s' if len(names) > 1 else ''} {', '.join(names)}: "
        f"{'they are' if len(names) > 1 else 'it is'} not in the store, and a run builds only "
        f"when asked (--build). To build: `{command}`, then run again. {said}"
    )


def release_check(wheel_name: str) -> None:
    """A built wheel carries a release version: a pre-release or local version means the tree
    built a snapshot (TensorFlow's .bazelrc defaults to ML_WHEEL_TYPE=snapshot, which makes
    X.Y.Z.dev0+selfbuilt), which pip ranks below the release and `tensorflow>=X.Y` refuses."""
    _, version, _, _ = parse_wheel_filename(wheel_name)
    if version.is_prerelease or version.local:
        raise BuildFailed(
            f"the build made {wheel_name}, version {version}: not a release version "
            "(a snapshot tree, or a .bazelrc that overrides --repo_env=ML_WHEEL_TYPE=release)"
        )


def build_many(
    variants: Sequence[PlannedVariant],
    plan: Plan,
    store: WheelStore,
    reporter: Reporter,
    options: BuildOptions,
    jobs: int = 1,
    outcomes: list[BuildOutcome] | None = None,
) -> dict[str, str]:
    """Build the planned variants (`jobs` at a time on the engine), each outcome reported as it
    comes (and appended to `outcomes`, failures too); returns the failures by variant name,
    each message with the build log's tail."""
    failures: dict[str, str] = {}
    causes: dict[str, str] = {}  # what a failure's tail ends with -> the first variant it failed
    reporter.start(len(variants), "building")

    def one(planned: PlannedVariant) -> None:
        name = planned.variant.name
        reporter.running(f"{name}: starting")
        started = time.monotonic()
        try:
            outcome = build_variant(planned, plan, store, reporter, options)
        except (BuildFailed, InstallError) as exc:
            failures[name] = exc.full() if isinstance(exc, BuildFailed) else str(exc)
            if outcomes is not None:
                log = exc.log if isinstance(exc, BuildFailed) else None
                outcomes.append(BuildOutcome(name, "failed", None, str(exc),
                                             time.monotonic() - started, log))  # fmt: skip
            cause = exc.cause(name) if isinstance(exc, BuildFailed) else str(exc)
            if cause in causes:
                where = f" (log: {exc.log})" if isinstance(exc, BuildFailed) and exc.log else ""
                reporter.note(f"[red]failed[/] {name}: as {causes[cause]} did{where}")
            else:
                causes[cause] = name
                reporter.note(f"[red]failed[/] {failures[name]}")
        else:
            reporter.note(
                f"{outcome.variant}: {outcome.status}: {outcome.wheel} "
                f"({outcome.message}, {outcome.seconds:.1f} s)"
            )
            if outcomes is not None:
                outcomes.append(outcome)
        reporter.advance(planned.variant.name)

    if jobs == 1:
        for planned in variants:
            one(planned)
        return failures
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, v) for v in variants]
        try:
            for future in futures:
                future.result()
        except KeyboardInterrupt:
            # Workers are blocked on their containers: kill those, let them clean up.
            engine.cancel()
            for future in futures:
                future.cancel()
            raise
    return failures
