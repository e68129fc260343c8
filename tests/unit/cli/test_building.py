"""`tfbuild build` as a user meets it: builds for a saved profile, a TensorFlow release override;
and its steps on their own: the variants asked for, what no recipe builds, what will not run
where it goes, and when an engine is missing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.cli.building import (
    BuildOrder,
    BuildSettings,
    chosen_variants,
    engine_refusal,
    first_recipe_refusal,
    wont_run_warnings,
)
from tfbuild.cli.values import Selection
from tfbuild.config.load import load_matrix
from tfbuild.engine import DockerInfo
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.plan.make import make_plan
from tfbuild.store import WheelStore

SKYLAKE = FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo"
HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"
NOTHING = Selection(only=(), skip=(), opt_in=())


def test_build_for_a_saved_profile(tmp_path: Path) -> None:
    """`march: host` resolves to the saved machine's -march; build tools stay at TF's
    defaults (they run on the build machine); `march: native` cannot be built for another
    machine and says so."""
    profile = tmp_path / "runner.json"
    assert (
        run_tfbuild("detect", "--cpuinfo", str(SKYLAKE), "--output", str(profile)).returncode == 0
    )
    proc = run_tfbuild("build", "--variant", "native", "--host", str(profile), "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    command = proc.stdout.split("bazel command =====\n", 1)[1].splitlines()[0]
    assert "--copt=-march=skylake-avx512" in command
    assert "--host_copt=-m" not in command  # build tools keep TensorFlow's flags only
    assert "the wheel is built for another machine (Intel(R) Xeon(R) Gold 6132" in proc.stdout
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text("variants:\n  - {name: mine, source: bazel, march: native}\n")
    proc = run_tfbuild("build", "--matrix", str(matrix), "--variant", "mine", "--host",
                       str(profile), "--dry-run")  # fmt: skip
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "march: native builds for the CPU of the build machine" in proc.stderr


def test_tensorflow_release_override(tmp_path: Path) -> None:
    proc = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.17.1", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    as_json = run_tfbuild("build", "--variant", "avx2-fma", "--dry-run", "--format", "json",
                          cwd=REPO)  # fmt: skip
    assert as_json.returncode == 64 and as_json.stdout == ""
    assert "--dry-run prints the recipes, not a JSON document" in as_json.stderr
    assert "tensorflow/tools/pip_package:wheel" in proc.stdout  # the 2.17 era's target
    assert "git_ref v2.17.1" in proc.stdout or "v2.17.1" in proc.stdout
    proc = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.99.0", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 64
    assert "--tensorflow '2.99.0': no build recipe for this release" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_new_release_builds_mkl_from_the_last_release_that_has_it() -> None:
    """The nightly's build step for a new release without --config=mkl (2.22.0): the default
    matrix's mkl-avx2 renders TensorFlow 2.21.0 with --config=mkl, said on stderr, instead of
    being refused; avx2-fma renders the new release."""
    proc = run_tfbuild("build", "--variant", "mkl-avx2", "--tensorflow", "2.22.0", "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "TensorFlow 2.21.0, hermetic_cc era" in proc.stdout
    command = proc.stdout.split("bazel command =====\n", 1)[1].splitlines()[0]
    assert "--config=mkl " in command
    assert (
        "note: variant 'mkl-avx2': TensorFlow 2.22.0 (--tensorflow) has no --config=mkl (its "
        ".bazelrc defines it up to 2.21): it builds 2.21.0, the matrix's defaults.tensorflow"
    ) in proc.stderr
    other = run_tfbuild("build", "--variant", "avx2-fma", "--tensorflow", "2.22.0", "--dry-run",
                        cwd=REPO)  # fmt: skip
    assert other.returncode == 0, other.stderr
    assert "TensorFlow 2.22.0, hermetic_cc era" in other.stdout and "note:" not in other.stderr


def asked(**given: Any) -> BuildSettings:
    """`build`'s settings with these options, the others at their defaults."""
    defaults = BuildSettings(
        matrix=None, variants=("stock",), build_all=False, selection=NOTHING,
        store=Path("wheels"), dry_run=True, force=False, tf_source=None, jobs=1,
        bazel_cache=None, tensorflow=None, host=None, quiet=True,
    )  # fmt: skip
    return dataclasses.replace(defaults, **given)


def names(settings: BuildSettings) -> list[str]:
    return [v.name for v in chosen_variants(load_matrix(REPO / "matrix.yaml"), settings)]


def test_the_variants_asked_for_each_once_in_the_order_asked() -> None:
    """--variant names (or ids) as given, a repeat once; --all: every variant, the opt-in sets'
    too; `--with SET` alone: that set's variants only; with --only or --skip, --with adds the
    set to what they pick from."""
    avx512 = load_matrix(REPO / "matrix.yaml").variant("avx512")
    assert names(asked(variants=("avx512", "stock", avx512.id))) == ["avx512", "stock"]
    assert names(asked(variants=(), build_all=True)) == [
        "stock", "stock-2.22rc0", "nightly", "stock-2.14", "intel-2.14", "intel-avx512-2.14",
        "native", "avx2-fma", "mkl-avx2", "avx512", "cuda-sm90",
    ]  # fmt: skip
    newer = Selection(only=(), skip=(), opt_in=("newer",))
    assert names(asked(variants=(), selection=newer)) == ["stock-2.22rc0", "nightly"]
    with_stock = Selection(only=("stock*",), skip=(), opt_in=("newer",))
    assert names(asked(variants=(), selection=with_stock)) == ["stock", "stock-2.22rc0"]
    sources = Selection(only=("avx*",), skip=("avx512",), opt_in=())
    assert names(asked(variants=(), selection=sources)) == ["avx2-fma"]


def order_of(matrix: Path, variants: list[str], cpuinfo: Path, store: Path) -> BuildOrder:
    plan = make_plan(load_matrix(matrix), profile_from_cpuinfo(cpuinfo), only=variants)
    return BuildOrder(
        plan=plan,
        planned=tuple(plan.planned(v) for v in variants),
        host=None,
        store=WheelStore(store),
    )


UNBUILDABLE = """\
variants:
  - {name: stock, source: pypi, requirement: tensorflow-cpu}
  - {name: avx2-fma, source: bazel, cpu_flags: [avx2, fma]}
  - {name: trt, source: bazel, configs: [tensorrt]}
  - {name: old, source: bazel, tensorflow: 2.12.1}
"""


def test_a_source_variant_no_recipe_builds_is_refused_first(tmp_path: Path) -> None:
    """The first source variant asked for that no recipe builds is the refusal (tensorrt is
    gone from TensorFlow's .bazelrc after 2.17; 2.12's toolchain is retired); when every one
    has a recipe (a prebuilt variant needs none), there is none."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(UNBUILDABLE)
    wanted = ["stock", "avx2-fma", "old", "trt"]
    refusal = first_recipe_refusal(order_of(matrix, wanted, SKYLAKE, tmp_path))
    assert refusal is not None
    assert refusal.startswith("variant 'old': TensorFlow 2.12 is retired here: ")
    trt = first_recipe_refusal(order_of(matrix, [*wanted[:2], "trt"], SKYLAKE, tmp_path))
    assert trt is not None and "has no --config=tensorrt" in trt
    assert first_recipe_refusal(order_of(matrix, wanted[:2], SKYLAKE, tmp_path)) is None


def test_a_source_variant_that_will_not_run_where_it_goes_is_built_with_a_warning(
    tmp_path: Path,
) -> None:
    """On Haswell, avx512 will not run: warned, naming the machine (this one, or the saved
    profile's) and why; native is built for Haswell and runs; prebuilt variants are never
    warned about."""
    order = order_of(REPO / "matrix.yaml", ["avx512", "native", "stock"], HASWELL, tmp_path)
    (warning,) = wont_run_warnings(order)
    assert warning.startswith(
        "avx512 will not run on this machine: needs AVX512F, AVX512CD, AVX512BW, AVX512DQ, "
        "AVX512VL; this CPU has up to AVX2"
    )
    assert warning.endswith("; built as asked")
    saved = dataclasses.replace(order, host=Path("runner.json"))
    assert wont_run_warnings(saved)[0].startswith(
        "avx512 will not run on the machine in runner.json: "
    )


def test_source_variants_need_an_engine_prebuilt_ones_do_not(tmp_path: Path) -> None:
    order = order_of(REPO / "matrix.yaml", ["stock", "avx2-fma"], HASWELL, tmp_path)
    gone = DockerInfo(reachable=False, host="unix:///nowhere.sock", error="no such file")
    assert engine_refusal(order, gone) == (
        "building source variants needs a Docker engine; none answers at unix:///nowhere.sock "
        "(no such file). Start dockerd or set DOCKER_HOST; --dry-run shows the recipe."
    )
    assert engine_refusal(order, DockerInfo(reachable=True, host="unix:///docker.sock")) is None
    prebuilt = order_of(REPO / "matrix.yaml", ["stock"], HASWELL, tmp_path)
    assert engine_refusal(prebuilt, gone) is None
