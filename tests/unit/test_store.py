"""The wheel store and its Manifest: what each source of wheel records, read back as written."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from support.cext import pure_wheel
from support.env import REPO

from tfbuild import wheelfile
from tfbuild.files import sha256_of
from tfbuild.store import MANIFEST_SCHEMA, Manifest, SourceBuild, WheelStore

SESSIONS = sorted((REPO / "tests" / "fixtures" / "results").glob("*.json"))

BUILT = {
    "schema": MANIFEST_SCHEMA,
    "variant": {"name": "avx2-fma", "source": "bazel", "tensorflow": "2.21.0"},
    "source": "bazel",
    "tensorflow": "2.21.0",
    "git_ref": "v2.21.0",
    "tf_source": "https://github.com/tensorflow/tensorflow@v2.21.0",
    "era": "clang-hermetic",
    "bazel_version": "bazel 7.4.1",
    "bazel_command": "bazel build --copt=-mavx2 --copt=-mfma //tensorflow/tools/pip_package:wheel",
    "configs": ["avx_linux"],
    "copts": ["-mavx2", "-mfma"],
    "host_copts": [],
    "base_image": {"reference": "debian:12", "id": "sha256:" + "1" * 64},
    "builder_host": {"topology": {"logical_cpus": 16}},
    "build_seconds": 5400.0,
    "tfbuild_version": "0.9.0",
    "content_key": "c" * 64,
    "build_key": "b" * 64,
    "compiler_flags": ["-march=haswell"],
    "recipe_key": "r" * 64,
    "templates": {"Dockerfile.j2": "/templates/Dockerfile.j2"},
    "constraints": ["numpy<2.3"],
    "wheel": "tensorflow_cpu-2.21.0+avx2.fma-cp311-cp311-linux_x86_64.whl",
    "sha256": "d" * 64,
    "name": "tensorflow_cpu",
    "version": "2.21.0+avx2.fma",
    "tags": ["cp311-cp311-linux_x86_64"],
}


def test_every_recorded_manifest_reads_and_writes_back_as_recorded() -> None:
    """The manifests the committed sessions hold (index wheels) come back key for key."""
    seen = 0
    for path in SESSIONS:
        for entry in json.loads(path.read_text())["variants"].values():
            if recorded := entry.get("manifest"):
                manifest = Manifest.from_json(recorded)
                assert manifest.source == "pypi" and manifest.build is None
                assert manifest.origin == recorded["index_url"]
                assert manifest.to_json() == recorded
                seen += 1
    assert seen >= 4


def test_a_source_builds_manifest_holds_how_it_was_built() -> None:
    manifest = Manifest.from_json(BUILT)
    assert manifest.build is not None
    assert manifest.build.copts == ("-mavx2", "-mfma") and manifest.build.builder_cpus == 16
    assert manifest.build_key == "b" * 64 and manifest.origin == BUILT["bazel_command"]
    assert manifest.other == {}
    assert manifest.to_json() == BUILT
    # a key a later tfbuild writes is kept; one this tfbuild knows is not left as "other"
    later = Manifest.from_json({**BUILT, "sbom": {"format": "spdx"}})
    assert later.other == {"sbom": {"format": "spdx"}}
    assert later.to_json() == {**BUILT, "sbom": {"format": "spdx"}}
    # an older tfbuild's build, before build keys were recorded
    old = Manifest.from_json({k: v for k, v in BUILT.items() if k != "build_key"})
    assert old.build is not None and old.build_key is None and "build_key" not in old.to_json()


def test_the_store_reads_back_what_it_wrote_and_nothing_else(tmp_path: Path) -> None:
    store = WheelStore(tmp_path / "wheels")
    store.folder("v").mkdir(parents=True)
    wheel = pure_wheel(store.folder("v"), "tfbuild_probe", "1.0", [])
    manifest = replace(Manifest.from_json(BUILT), wheel=wheel.name, sha256=sha256_of(wheel))
    store.write_manifest("v", manifest)
    written = json.loads(store.manifest_path("v").read_text())
    assert written["schema"] == MANIFEST_SCHEMA and written["copts"] == ["-mavx2", "-mfma"]
    assert store.read_manifest("v") == manifest
    assert store.stored("v") == (wheel, manifest)
    wheel.write_bytes(wheel.read_bytes() + b"\0")  # the wheel is not the one recorded any more
    assert store.stored("v") is None and store.read_manifest("v") == manifest
    for damaged in (
        "{",
        json.dumps({**written, "schema": "tfbuild.manifest/0"}),
        json.dumps({k: v for k, v in written.items() if k != "source"}),
        json.dumps([written]),
    ):
        store.manifest_path("v").write_text(damaged)
        assert store.read_manifest("v") is None and store.stored("v") is None
    assert store.read_manifest("absent") is None


def test_a_built_wheel_carries_its_manifest(tmp_path: Path) -> None:
    """Inside the wheel, the manifest has everything but the wheel's own name and digest,
    which it cannot know."""
    wheel = pure_wheel(tmp_path, "tfbuild_probe", "1.0", [])
    build = SourceBuild(tensorflow="2.21.0", copts=("-mavx2",), configs=("avx_linux",))
    made = Manifest(variant={"name": "avx2"}, source="bazel", build=build)
    (tmp_path / "out").mkdir()
    labelled = wheelfile.relabel(wheel, "avx2", made.to_json(), tmp_path / "out")
    assert Manifest.of_wheel(labelled) == made
    assert Manifest.of_wheel(wheel) is None
