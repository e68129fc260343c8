"""TensorFlow release facts as records: every release, era, compiler and --config of
tfbuild/data/tensorflow.yaml, read back as the table states them."""

from __future__ import annotations

import pytest
import yaml

from tfbuild.config import tensorflow
from tfbuild.resources import data_path, load_table

TABLE = yaml.safe_load(data_path("tensorflow.yaml").read_text(encoding="utf-8"))


def test_every_release_has_its_era_and_compiler_as_the_table_says() -> None:
    minors = [r.minor for r in tensorflow.releases()]
    assert minors == sorted(TABLE["releases"], key=tensorflow.version_tuple)
    for release in tensorflow.releases():
        entry = TABLE["releases"][release.minor]
        assert release.era.name == entry["era"] and release.compiler.name == entry["compiler"]
        assert release.era.table == TABLE["eras"][entry["era"]]
        assert release.compiler.table == TABLE["compilers"][entry["compiler"]]
        assert release.bazel == entry["bazel"] and list(release.python) == entry["python"]
        assert release.floor == tuple(entry.get("floor", ["avx"]))
        assert release.verify is bool(entry.get("verify")) and dict(release.repo_env) == entry.get(
            "repo_env", {}
        )
        assert release.era.cuda is TABLE["eras"][entry["era"]]["cuda"]
        assert release.compiler.cc == TABLE["compilers"][entry["compiler"]]["cc"]
    assert tensorflow.tf_release("2.22.0rc0") == tensorflow.tf_release("2.22")
    assert tensorflow.tf_release("2.11.0") is None and tensorflow.tf_release("3.0") is None


@pytest.mark.parametrize(
    ("minor", "python", "builds"),
    [("2.21", "3.10", True), ("2.21", "3.13", True), ("2.21", "3.9", False),
     ("2.21", "3.14", False), ("2.22", "3.14", True), ("2.14", "3.9", True)],
)  # fmt: skip
def test_a_release_builds_for_its_python_range(minor: str, python: str, builds: bool) -> None:
    release = tensorflow.tf_release(minor)
    assert release is not None and release.builds_for(python) is builds


def test_configs_and_distributions_as_the_table_says() -> None:
    assert tensorflow.known_configs() == tuple(TABLE["configs"])
    mkl = tensorflow.config_span("mkl")
    assert mkl is not None and mkl.until == "2.21" and mkl.inferred and mkl.instead
    assert tensorflow.config_span("monolithic") == tensorflow.ConfigSpan(name="monolithic")
    assert tensorflow.config_span("no_such_config") is None
    assert tensorflow.lacking_config(["mkl", "nogcp"], "2.21.0") is None
    assert tensorflow.lacking_config(["cuda_wheel"], "2.17.1") == ("cuda_wheel", "from 2.18")
    assert tensorflow.inferred_lack(["mkl"], "2.22.0") == ("mkl", "2.21")
    for project, entry in TABLE["distributions"].items():
        assert tensorflow.distribution_floor(project) == tuple(entry["cpu_flags"])
    assert tensorflow.distribution_floor("jax") is None
    assert tensorflow.source_repository() == TABLE["repository"]
    assert tensorflow.bazelisk() == TABLE["bazelisk"] == load_table("tensorflow")["bazelisk"]
