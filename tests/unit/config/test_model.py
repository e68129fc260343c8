"""The matrix model read on its own: a variant's plain-data definition holds the keys of its
source only, a tuning's holds xla only when set, where a thing was defined never makes two equal
things differ, a budget per config grows with the configs above its floor, and asking a matrix
or a suite for a variant, tuning, preset or opt-in set it lacks names what it has and the
closest."""

from __future__ import annotations

from pathlib import Path

import pytest

from tfbuild.config.model import (
    DEFAULT_BUDGET,
    INHERIT_PIP,
    QUICK_BUDGET,
    BaseImages,
    Baseline,
    BazelSettings,
    Budget,
    Cuda,
    Defaults,
    Matrix,
    OptIn,
    Suite,
    SuiteSettings,
    Tuning,
    Variant,
    Where,
)
from tfbuild.errors import SelectionError

STOCK = Variant(
    "stock", "tf2.21-py3.11-stock", "pypi", "3.11", "2.21.0",
    requirement="tensorflow-cpu==2.21.0", constraints=("numpy<2",),
)  # fmt: skip
NATIVE = Variant(
    "native", "tf2.21-py3.12-native", "bazel", "3.12", "2.21.0",
    configs=("mkl",), cpu_flags=("avx2", "fma"), march="host", copts=("-O3",),
)  # fmt: skip
NIGHTLY = Variant(
    "nightly", "tflatest-py3.11-nightly", "pypi", "3.11", None, requirement="tf-nightly"
)
SETTINGS = SuiteSettings(("matmul-fed",))


def matrix(opt_in: tuple[OptIn, ...] = ()) -> Matrix:
    return Matrix(
        path=Path("conf/matrix.yaml"),
        defaults=Defaults(
            "2.21.0",
            "3.11",
            BaseImages("tfbuild/base:bookworm", "tfbuild/base:bookworm"),
            BazelSettings("tfbuild-bazel-cache", True, None, None, (), "bridge"),
            INHERIT_PIP,
        ),
        variants=(STOCK, NATIVE, NIGHTLY),
        tunings=(Tuning("default"), Tuning("single-thread", intra_op=1, inter_op=1)),
        suite=Suite(SETTINGS, {"full": SETTINGS}),
        baseline=Baseline("stock", "default"),
        opt_in=opt_in,
    )


def test_where_a_thing_was_defined_is_said_as_file_and_line() -> None:
    assert str(Where("conf/matrix.yaml", 12)) == "conf/matrix.yaml:12"


def test_where_a_thing_was_defined_does_not_make_equal_things_differ() -> None:
    here = Variant("a", "i", "pypi", "3.11", None, where=Where("m.yaml", 3))
    there = Variant("a", "i", "pypi", "3.11", None, where=Where("other.yaml", 40))
    assert here == there
    assert Tuning("t", where=Where("m.yaml", 1)) == Tuning("t", where=Where("m.yaml", 9))


def test_only_a_source_variant_needs_a_build() -> None:
    assert NATIVE.needs_build
    assert not STOCK.needs_build
    assert not Variant("w", "i", "wheel", "3.10", "2.17.1", path=Path("/w.whl")).needs_build


def test_a_variants_minor_release_drops_the_patch_and_candidate() -> None:
    assert STOCK.tf_minor == "2.21"
    assert Variant("rc", "i", "pypi", "3.11", "2.22.0rc0").tf_minor == "2.22"
    assert NIGHTLY.tf_minor is None


def test_a_source_variants_definition_holds_its_build_settings() -> None:
    cuda = Cuda("12.5.1", "9.3.0", ("sm_90", "compute_90"))
    gpu = Variant("gpu", "g", "bazel", "3.11", "2.21.0", configs=("cuda",), cuda=cuda)
    assert gpu.definition() == {
        "name": "gpu",
        "id": "g",
        "source": "bazel",
        "python": "3.11",
        "tensorflow": "2.21.0",
        "runtime": "auto",
        "configs": ["cuda"],
        "cpu_flags": [],
        "march": None,
        "copts": [],
        "cuda": {
            "version": "12.5.1",
            "cudnn": "9.3.0",
            "compute_capabilities": ["sm_90", "compute_90"],
        },
    }
    assert NATIVE.definition()["cuda"] is None
    assert NATIVE.definition()["cpu_flags"] == ["avx2", "fma"]


def test_an_index_variants_definition_holds_its_requirement_and_constraints_only() -> None:
    assert STOCK.definition() == {
        "name": "stock",
        "id": "tf2.21-py3.11-stock",
        "source": "pypi",
        "python": "3.11",
        "tensorflow": "2.21.0",
        "runtime": "auto",
        "requirement": "tensorflow-cpu==2.21.0",
        "constraints": ["numpy<2"],
    }


def test_a_wheel_variants_definition_holds_its_path_and_its_pin_when_pinned() -> None:
    wheel = Variant("w", "i", "wheel", "3.10", "2.17.1", path=Path("/srv/w.whl"), runtime="local")
    assert wheel.definition() == {
        "name": "w",
        "id": "i",
        "source": "wheel",
        "python": "3.10",
        "tensorflow": "2.17.1",
        "runtime": "local",
        "path": "/srv/w.whl",
        "constraints": [],
    }
    pinned = Variant("w", "i", "wheel", "3.10", "2.17.1", path=Path("/w.whl"), sha256="ab" * 32)
    assert pinned.definition()["sha256"] == "ab" * 32


def test_a_tunings_definition_has_its_env_as_a_mapping_and_xla_only_when_set() -> None:
    plain = Tuning("onednn-off", intra_op="physical", env=(("TF_ENABLE_ONEDNN_OPTS", "0"),))
    assert plain.definition() == {
        "name": "onednn-off",
        "intra_op": "physical",
        "inter_op": None,
        "env": {"TF_ENABLE_ONEDNN_OPTS": "0"},
    }
    assert Tuning("jit", xla="jit").definition()["xla"] == "jit"


def test_a_budget_in_all_is_the_same_for_any_number_of_configs() -> None:
    assert [Budget(1200).total(n) for n in (0, 1, 50)] == [1200, 1200, 1200]


def test_a_budget_per_config_grows_with_the_configs_above_its_floor() -> None:
    budget = Budget(150, per_config=True, at_least=1200)
    assert [budget.total(n) for n in (0, 1, 8, 9, 17)] == [1200, 1200, 1200, 1350, 2550]
    assert Budget(60, per_config=True).total(0) == 60  # never less than one config's


def test_the_built_in_budgets_are_the_minutes_the_readme_promises() -> None:
    """20 minutes up to eight configs then 2.5 a config; quick: 10 up to ten, then one."""
    assert [DEFAULT_BUDGET.total(n) / 60 for n in (5, 8, 17)] == [20, 20, 42.5]
    assert [QUICK_BUDGET.total(n) / 60 for n in (5, 10, 11)] == [10, 10, 11]


def test_a_suite_without_fixed_rounds_is_sequential() -> None:
    assert SETTINGS.sequential
    assert not SuiteSettings(("matmul-fed",), rounds=12).sequential


def test_no_preset_is_the_suites_own_settings_and_an_unknown_one_is_refused() -> None:
    quick = SuiteSettings(("matmul-fed",), budget=QUICK_BUDGET)
    suite = Suite(SETTINGS, {"quick": quick, "full": SETTINGS})
    assert suite.preset(None) is SETTINGS
    assert suite.preset("quick") is quick
    with pytest.raises(SelectionError) as refused:
        suite.preset("quik")
    assert str(refused.value) == (
        "unknown suite preset 'quik' (expected one of: quick, full); did you mean 'quick'?"
    )


def test_a_variant_is_found_by_name_or_by_id() -> None:
    m = matrix()
    assert m.variant("native") is NATIVE
    assert m.variant("tf2.21-py3.12-native") is NATIVE


def test_an_unknown_variant_or_tuning_names_the_file_what_it_has_and_the_closest() -> None:
    m = matrix()
    with pytest.raises(SelectionError) as variant:
        m.variant("stok")
    assert str(variant.value) == (
        "conf/matrix.yaml: unknown variant 'stok' (expected one of: stock, native, nightly); "
        "did you mean 'stock'?"
    )
    assert m.tuning("single-thread").intra_op == 1
    with pytest.raises(SelectionError) as tuning:
        m.tuning("tf2.21-py3.11-stock")  # tunings have no ids
    assert str(tuning.value) == (
        "conf/matrix.yaml: unknown tuning 'tf2.21-py3.11-stock' (expected one of: default, "
        "single-thread)"
    )


def test_the_variants_of_opt_in_sets_are_left_out_and_named_sets_bring_them_in() -> None:
    m = matrix(
        (
            OptIn("newer", "the nightly", ("nightly",)),
            OptIn("builds", "from source", ("native", "nightly")),
        )
    )
    assert m.left_out == {"nightly", "native"}
    assert m.opted_in([]) == frozenset()
    assert m.opted_in(["newer"]) == {"nightly"}
    assert m.opted_in(["newer", "builds"]) == {"nightly", "native"}


def test_an_unknown_opt_in_set_names_the_sets_there_are() -> None:
    m = matrix((OptIn("newer", "the nightly", ("nightly",)),))
    with pytest.raises(SelectionError) as unknown:
        m.opted_in(["newer", "newr"])
    said = str(unknown.value)
    assert said.startswith("--with newr: conf/matrix.yaml"), said
    assert said.endswith(
        "unknown opt-in set 'newr' (expected one of: newer); did you mean 'newer'?"
    ), said


def test_asking_for_an_opt_in_set_of_a_matrix_without_any_says_how_to_name_one() -> None:
    with pytest.raises(SelectionError) as none:
        matrix().opted_in(["newer"])
    assert str(none.value) == (
        "--with newer: conf/matrix.yaml has no opt-in sets (an 'opt_in:' section names them)"
    )
    assert matrix().left_out == frozenset()
