"""One entry of `variants`, read on its own: an index variant's release comes from its pin, or
pins an unpinned requirement; a wheel's release and Python come from its file name and its path
from the matrix's folder; a source variant follows defaults.tensorflow, gets its CUDA versions
from its release's facts and its compute capabilities as sm_NN, and, when --tensorflow names a
release that dropped a --config it asks for, builds the matrix's own release and says so in a
note. Keys of another source, unknown values and releases that cannot build for the Python asked
are refused under the variant's name, at their position."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tfbuild.config.model import (
    INHERIT_PIP,
    BaseImages,
    BazelSettings,
    Cuda,
    Defaults,
    Variant,
    Where,
)
from tfbuild.config.tensorflow import tf_release
from tfbuild.config.variants import read_variant
from tfbuild.config.yamlread import Ctx, compose

DEFAULTS = Defaults(
    tensorflow="2.21.0",
    python="3.11",
    base_images=BaseImages("tfbuild/base:bookworm", "tfbuild/base:bookworm"),
    bazel=BazelSettings("tfbuild-bazel-cache", True, None, None, (), "bridge"),
    pip=INHERIT_PIP,
)
NEWER = dataclasses.replace(DEFAULTS, tensorflow="2.22.0")
"""The defaults after `--tensorflow 2.22.0` replaced the matrix's 2.21.0."""


def read(
    text: str, defaults: Defaults = DEFAULTS, declared: str | None = None
) -> tuple[Variant | None, list[str], dict[str, str]]:
    ctx = Ctx("m.yaml", Path("/srv/conf"))
    node = compose(ctx, text)
    assert node is not None, ctx.problems
    variant = read_variant(ctx, node, "variants[0]", defaults, declared)
    return variant, [str(p) for p in ctx.problems], ctx.notes


def test_an_index_variants_release_is_its_pin_and_its_id_says_release_python_and_name() -> None:
    variant, problems, _ = read(
        "\nname: intel\nsource: pypi\nrequirement: intel-tensorflow==2.14.0\nconstraints: numpy<2\n"
    )
    assert problems == []
    assert variant == Variant(
        "intel",
        "tf2.14-py3.11-intel",
        "pypi",
        "3.11",
        "2.14.0",
        requirement="intel-tensorflow==2.14.0",
        constraints=("numpy<2",),
    )
    assert variant.where == Where("m.yaml", 2)


def test_a_release_named_beside_an_unpinned_requirement_pins_it() -> None:
    """What is installed is what is named: the requirement gets the pin, extras in order."""
    variant, problems, _ = read(
        "{name: gpu, source: pypi, requirement: 'tensorflow[b,a]', tensorflow: 2.17.1}"
    )
    assert problems == []
    assert variant is not None
    assert (variant.requirement, variant.tensorflow, variant.id) == (
        "tensorflow[a,b]==2.17.1",
        "2.17.1",
        "tf2.17-py3.11-gpu",
    )
    variant, _, _ = read(
        "{name: s, source: pypi, requirement: tensorflow-cpu, tensorflow: defaults}"
    )
    assert variant is not None
    assert (variant.requirement, variant.tensorflow) == ("tensorflow-cpu==2.21.0", "2.21.0")


def test_an_unpinned_index_variant_has_no_release_and_an_id_of_the_latest() -> None:
    variant, problems, _ = read("{name: nightly, source: pypi, requirement: tf-nightly}")
    assert problems == []
    assert variant is not None
    assert (variant.tensorflow, variant.id, variant.requirement) == (
        None,
        "tflatest-py3.11-nightly",
        "tf-nightly",
    )


def test_a_release_that_disagrees_with_the_pin_is_refused() -> None:
    _, problems, _ = read(
        "{name: a, source: pypi, requirement: tensorflow-cpu==2.14.1, tensorflow: 2.15.0}"
    )
    assert problems == [
        "m.yaml:1:74: variant 'a'.tensorflow: disagrees with the requirement's pin (got '2.15.0'; "
        "the requirement pins '2.14.1')"
    ]


def test_a_requirement_that_packaging_cannot_read_is_refused_with_its_reason() -> None:
    variant, problems, _ = read("{name: r, source: pypi, requirement: 'tensorflow=='}")
    assert variant is None
    (problem,) = problems
    assert problem.startswith(
        "m.yaml:1:38: variant 'r'.requirement: not a valid requirement (got 'tensorflow=='; "
    ), problem


def test_an_index_variant_needs_a_requirement() -> None:
    variant, problems, _ = read("{name: a, source: pypi}")
    assert variant is None
    assert problems == ["m.yaml:1:1: variant 'a': source: pypi needs a 'requirement' key"]


def test_keys_of_another_source_are_refused_naming_the_sources_they_belong_to() -> None:
    _, problems, _ = read("{name: a, source: pypi, requirement: x, path: w.whl, configs: [mkl]}")
    assert sorted(problems) == [
        "m.yaml:1:41: variant 'a': key 'path' applies to source: wheel only (got it on "
        "source: pypi)",
        "m.yaml:1:54: variant 'a': key 'configs' applies to source: bazel only (got it on "
        "source: pypi)",
    ]
    _, problems, _ = read("{name: a, source: bazel, constraints: [numpy<2]}")
    assert problems == [
        "m.yaml:1:26: variant 'a': key 'constraints' applies to source: pypi or wheel only (got "
        "it on source: bazel)"
    ]


def test_a_wheels_release_and_python_come_from_its_file_name_its_path_from_the_matrix() -> None:
    name = "tensorflow_cpu-2.17.1+mkl.avx2-cp310-cp310-linux_x86_64.whl"
    variant, problems, _ = read(
        f"{{name: w, source: wheel, path: wheels/{name}, sha256: {'ab' * 32}}}"
    )
    assert problems == []
    assert variant is not None
    assert (variant.tensorflow, variant.python, variant.id) == ("2.17.1", "3.10", "tf2.17-py3.10-w")
    assert variant.path == Path("/srv/conf/wheels") / name
    assert variant.sha256 == "ab" * 32


def test_a_wheel_for_several_pythons_takes_the_python_asked_or_the_default() -> None:
    name = "/opt/tensorflow-2.16.1-cp311.cp312-abi3-linux_x86_64.whl"
    variant, problems, _ = read(f"{{name: w, source: wheel, path: {name}, python: '3.12'}}")
    assert problems == []
    assert variant is not None
    assert (variant.path, variant.python, variant.tensorflow) == (Path(name), "3.12", "2.16.1")
    variant, _, _ = read(f"{{name: w, source: wheel, path: {name}}}")
    assert variant is not None and variant.python == "3.11"


def test_a_wheel_needs_a_path_with_a_wheels_file_name_and_a_lowercase_sha256() -> None:
    _, problems, _ = read("{name: w, source: wheel}")
    assert problems == ["m.yaml:1:1: variant 'w': source: wheel needs a 'path' key"]
    _, problems, _ = read("{name: w, source: wheel, path: x.zip}")
    (problem,) = problems
    assert problem.startswith(
        "m.yaml:1:32: variant 'w'.path: not a wheel file name (got 'x.zip'; "
    ), problem
    path = "tensorflow-2.17.1-cp311-cp311-linux_x86_64.whl"
    _, problems, _ = read(f"{{name: w, source: wheel, path: {path}, sha256: ABC}}")
    assert problems == [
        "m.yaml:1:88: variant 'w'.sha256: not valid (got 'ABC'; expected 64 lowercase hex digits)"
    ]


def test_a_source_variant_follows_the_defaults_and_reads_its_build_settings() -> None:
    variant, problems, _ = read(
        "{name: n, source: bazel, configs: [mkl], cpu_flags: [avx2, fma], march: haswell,"
        " copts: [-O3], cuda: {compute_capabilities: ['9.0', sm_80, compute_90]}}"
    )
    assert problems == []
    assert variant is not None
    release = tf_release("2.21.0")
    assert release is not None
    assert variant == Variant(
        "n",
        "tf2.21-py3.11-n",
        "bazel",
        "3.11",
        "2.21.0",
        configs=("mkl",),
        cpu_flags=("avx2", "fma"),
        march="haswell",
        copts=("-O3",),
        cuda=Cuda(release.cuda, release.cudnn, ("sm_90", "sm_80", "compute_90")),
    )


def test_a_source_variant_refuses_a_python_its_release_does_not_build_for() -> None:
    _, problems, _ = read("{name: s, source: bazel, python: '3.13', tensorflow: 2.14.1}")
    assert problems == [
        "m.yaml:1:34: variant 's'.python: TensorFlow 2.14.1 does not build for this Python "
        "(got '3.13'; expected 3.9 to 3.11)"
    ]


def test_a_cuda_config_needs_a_cuda_block_with_a_capability() -> None:
    _, problems, _ = read("{name: c, source: bazel, configs: [cuda]}")
    assert problems == [
        "m.yaml:1:35: variant 'c'.configs: 'cuda' needs a cuda: block (version, cudnn, "
        "compute_capabilities)"
    ]
    _, problems, _ = read("{name: c, source: bazel, cuda: {compute_capabilities: []}}")
    assert problems == [
        "m.yaml:1:55: variant 'c'.cuda.compute_capabilities: needs at least one entry"
    ]


def test_a_capability_is_sm_nn_compute_nn_or_a_version() -> None:
    _, problems, _ = read("{name: c, source: bazel, cuda: {compute_capabilities: [sm_90, sm90]}}")
    assert problems == [
        "m.yaml:1:63: variant 'c'.cuda.compute_capabilities[1]: not a compute capability (got "
        "'sm90'; expected sm_NN, compute_NN or N.N)"
    ]


def test_an_unknown_config_says_the_configs_known_and_the_closest() -> None:
    _, problems, _ = read("{name: c, source: bazel, configs: [mkl_threadpol]}")
    (problem,) = problems
    assert problem.startswith(
        "m.yaml:1:36: variant 'c'.configs[0]: unknown bazel config (got 'mkl_threadpol'; "
        "expected one of mkl, mkl_threadpool, "
    ), problem
    assert problem.endswith("); did you mean 'mkl_threadpool'?"), problem


def test_a_config_the_new_release_dropped_builds_the_declared_release_with_a_note() -> None:
    """--tensorflow 2.22.0 over a matrix of 2.21.0: --config=mkl ends with 2.21."""
    for text in (
        "{name: mkl, source: bazel, configs: [mkl]}",
        "{name: mkl, source: bazel, tensorflow: defaults, configs: [mkl]}",
    ):
        variant, problems, notes = read(text, NEWER, declared="2.21.0")
        assert problems == []
        assert variant is not None
        assert (variant.tensorflow, variant.id) == ("2.21.0", "tf2.21-py3.11-mkl")
        assert notes == {
            "mkl": "variant 'mkl': TensorFlow 2.22.0 (--tensorflow) has no --config=mkl (its "
            ".bazelrc defines it up to 2.21): it builds 2.21.0, the matrix's defaults.tensorflow"
        }


def test_a_variant_that_names_its_release_or_needs_no_dropped_config_takes_the_new_one() -> None:
    variant, problems, notes = read(
        "{name: mkl, source: bazel, tensorflow: 2.22.0, configs: [mkl]}", NEWER, "2.21.0"
    )
    assert (problems, notes) == ([], {})
    assert variant is not None and variant.tensorflow == "2.22.0"
    variant, _, notes = read("{name: plain, source: bazel, configs: [monolithic]}", NEWER, "2.21.0")
    assert notes == {}
    assert variant is not None and variant.id == "tf2.22-py3.11-plain"


def test_an_entry_without_a_name_or_a_known_source_is_not_read() -> None:
    variant, problems, _ = read("{source: pipy}")
    assert variant is None
    assert problems == [
        "m.yaml:1:10: variants[0].source: unknown source (got 'pipy'; expected one of bazel, "
        "pypi, wheel)",
        "m.yaml:1:1: variants[0]: missing required key 'name'",
    ]


def test_a_runtime_and_an_id_of_ones_own_are_checked() -> None:
    variant, problems, _ = read(
        "{name: a, source: pypi, requirement: x, runtime: docker, id: my-own.id}"
    )
    assert problems == []
    assert variant is not None and (variant.runtime, variant.id) == ("docker", "my-own.id")
    _, problems, _ = read("{name: a, source: pypi, requirement: x, runtime: dokcer, id: 'My Id'}")
    assert problems == [
        "m.yaml:1:50: variant 'a'.runtime: unknown runtime (got 'dokcer'; expected one of auto, "
        "local, docker); did you mean 'docker'?",
        "m.yaml:1:62: variant 'a'.id: not valid (got 'My Id'; expected lowercase letters, "
        "digits, '.', '_' or '-', starting and ending with a letter or digit, at most 128 "
        "characters)",
    ]
