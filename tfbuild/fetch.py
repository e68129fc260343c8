"""The fetch stage: put a prebuilt variant's wheel in the store, with a manifest saying where it
came from. ``source: pypi`` downloads the requirement once; ``source: wheel`` records a local file;
``source: bazel`` wheels come from ``tfbuild build``."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

from packaging.requirements import Requirement

from tfbuild import __version__, pip
from tfbuild.config.model import PipSettings, Variant
from tfbuild.errors import InstallError, NotBuiltError
from tfbuild.files import locked, sha256_of
from tfbuild.store import Artifact, Manifest, WheelStore

PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _artifact(variant: Variant, wheel: Path, manifest: Manifest) -> Artifact:
    if variant.source == "pypi" and variant.requirement is not None:
        # the wheel is installed from the store: the requirement's extras go with it
        extras = tuple(sorted(Requirement(variant.requirement).extras))
    else:
        extras = ("and-cuda",) if variant.source == "bazel" and variant.cuda is not None else ()
    assert manifest.sha256 is not None  # a stored manifest's wheel was checked against it
    return Artifact(variant.id, wheel, manifest.sha256, variant.constraints, manifest, extras)


def fetch(
    variant: Variant, store: WheelStore, settings: PipSettings, refresh: bool = False
) -> tuple[Artifact, bool]:
    """The variant's wheel in the store; returns it and whether anything was downloaded.

    Index wheels are resolved by this machine's pip for this Python (the local runtime's), and
    reused from the store until --refresh; an unpinned requirement then picks up a new release.
    """
    if variant.source == "bazel":
        stored = store.stored(variant.id)
        if stored is None:
            raise NotBuiltError(
                f"variant {variant.name!r} is built from source and has no wheel in "
                f"{store.folder(variant.id)}; run `tfbuild build --variant {variant.name}`"
            )
        return _artifact(variant, *stored), False
    if variant.source == "wheel":
        return _local_wheel(variant, store), False
    return _from_index(variant, store, settings, refresh)


def _from_index(
    variant: Variant, store: WheelStore, settings: PipSettings, refresh: bool
) -> tuple[Artifact, bool]:
    # Sessions sharing a store fetch a variant one at a time: the second finds the first's wheel.
    with locked(store.root / f".{variant.id}.fetch.lock"):
        return _fetch_from_index(variant, store, settings, refresh)


def _fetch_from_index(
    variant: Variant, store: WheelStore, settings: PipSettings, refresh: bool
) -> tuple[Artifact, bool]:
    assert variant.requirement is not None
    stored = store.stored(variant.id)
    if (
        stored
        and not refresh
        and stored[1].requirement == variant.requirement
        and stored[1].python == PYTHON
    ):
        return _artifact(variant, *stored), False
    resolved = pip.resolve(variant.requirement, settings)
    if stored and stored[1].sha256 == resolved.sha256 and resolved.sha256:
        return _artifact(variant, *stored), False
    folder = store.folder(variant.id)
    wheel = pip.download(resolved, folder, settings)
    for old in folder.glob("*.whl"):
        if old != wheel:
            old.unlink()
    manifest = Manifest(
        variant=variant.definition(),
        source="pypi",
        requirement=variant.requirement,
        constraints=variant.constraints,
        name=resolved.name,
        version=resolved.version,
        wheel=wheel.name,
        sha256=sha256_of(wheel),
        index_url=resolved.url,
        tags=tuple(pip.wheel_tags(wheel.name)),
        python=PYTHON,
        fetched_at=_now(),
        tfbuild_version=__version__,
    )
    store.write_manifest(variant.id, manifest)
    return _artifact(variant, wheel, manifest), True


def _local_wheel(variant: Variant, store: WheelStore) -> Artifact:
    assert variant.path is not None
    if not variant.path.is_file():
        raise InstallError(f"variant {variant.name!r}: wheel file not found: {variant.path}")
    digest = sha256_of(variant.path)
    if variant.sha256 is not None and digest != variant.sha256:
        where = f" ({variant.where})" if variant.where else ""
        raise InstallError(
            f"variant {variant.name!r}{where}: {variant.path} has sha256 {digest}, but the "
            f"matrix pins {variant.sha256}; the file changed, or the pin is wrong"
        )
    manifest = store.read_manifest(variant.id)
    if manifest is None or manifest.sha256 != digest:
        from packaging.utils import parse_wheel_filename

        name, version, _, _ = parse_wheel_filename(variant.path.name)
        manifest = Manifest(
            variant=variant.definition(),
            source="wheel",
            path=str(variant.path),
            constraints=variant.constraints,
            name=str(name),
            version=str(version),
            sha256=digest,
            tags=tuple(pip.wheel_tags(variant.path.name)),
            recorded_at=_now(),
            tfbuild_version=__version__,
        )
        store.write_manifest(variant.id, manifest)
    return Artifact(variant.id, variant.path, digest, variant.constraints, manifest)
