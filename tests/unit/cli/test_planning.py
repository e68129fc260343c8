"""The matrix, the machine and the one plan a command works from: which matrix file is read
and why, the options laid over its defaults (--tensorflow, --bazel-cache) and said with
--debug, the machine of a saved profile, the model forms a session measures, and the baseline a
ranking session refuses to leave out, each refused with one clear message before anything
runs; and what `run` does with source variants the store lacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.cli.planning import (
    SessionMachine,
    build_target,
    image_probe,
    machine,
    matrix_file,
    matrix_setting,
    plan_here,
    read_matrix,
    session_plan,
    source_builds,
    with_baseline,
    with_forms,
)
from tfbuild.cli.values import Selection
from tfbuild.config.load import load_matrix
from tfbuild.config.settings import Setting
from tfbuild.engine import DockerInfo
from tfbuild.errors import (
    EngineUnavailable,
    MatrixError,
    NotBuiltError,
    SelectionError,
    UsageError,
)
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.plan.make import Plan, make_plan
from tfbuild.resources import default_matrix_path
from tfbuild.results.model import Workload
from tfbuild.store import WheelStore

HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"
NO_ENGINE = DockerInfo(reachable=False, host="unix:///nonexistent/docker.sock")


def workload(kind: str, atol: float | None = None, rtol: float | None = None) -> Workload:
    return Workload(kind=kind, path="model", digest="0" * 64, version=1, atol=atol, rtol=rtol)


@pytest.fixture
def forms_matrix(tmp_path: Path) -> Path:
    """A matrix of one variant whose `forms:` asks for the optimized form too."""
    path = tmp_path / "forms.yaml"
    path.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "forms: [as-given, optimized]\n"
    )
    return path


@pytest.fixture
def haswell_profile(tmp_path: Path) -> Path:
    """`tfbuild detect --cpuinfo haswell... --format json`, saved."""
    path = tmp_path / "haswell.json"
    path.write_text(json.dumps(profile_from_cpuinfo(HASWELL).to_json()))
    return path


def test_the_matrix_is_the_one_named_else_the_one_here_else_the_packaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    named = tmp_path / "mine.yaml"
    monkeypatch.chdir(tmp_path)
    packaged = default_matrix_path()
    assert packaged.name == "matrix.yaml" and packaged.is_file()
    assert matrix_file(None) == packaged
    assert matrix_setting(None) == Setting(
        "matrix", str(packaged), "default", "packaged with tfbuild"
    )
    (tmp_path / "matrix.yaml").write_text("variants: []\n")
    assert matrix_file(None) == Path("matrix.yaml")
    assert matrix_setting(None) == Setting(
        "matrix", "matrix.yaml", "default", "matrix.yaml in this folder"
    )
    assert matrix_file(named) == named  # named, even when there is none
    assert matrix_setting(named) == Setting("matrix", str(named), "option", "--matrix")


@pytest.mark.parametrize(
    ("given", "cache"),
    [
        ("tfbuild-cache", "tfbuild-cache"),  # a Docker volume
        ("/srv/bazel-cache", "/srv/bazel-cache"),
        ("~/bazel", "{home}/bazel"),
    ],
)
def test_bazel_cache_replaces_the_matrixs_with_a_volume_or_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, cache: str
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    matrix = read_matrix(default_matrix_path(), bazel_cache=given)
    assert matrix.defaults.bazel.cache == cache.format(home=tmp_path)
    unchanged = read_matrix(default_matrix_path())
    assert unchanged.defaults.bazel.cache == "tfbuild-bazel-cache"  # the packaged matrix's
    assert matrix.defaults.bazel.disk_cache == unchanged.defaults.bazel.disk_cache


@pytest.mark.parametrize("given", ["relative/cache", "two words", "-dash"])
def test_a_bazel_cache_that_is_no_volume_or_absolute_path_is_refused(given: str) -> None:
    with pytest.raises(UsageError) as caught:
        read_matrix(default_matrix_path(), bazel_cache=given)
    assert str(caught.value) == (
        f"--bazel-cache {given!r}: expected a Docker volume name or an absolute path"
    )


def test_tensorflow_is_applied_as_the_matrix_is_read(tmp_path: Path) -> None:
    """A matrix whose own release does not build for its Python is read with --tensorflow
    naming one that does: the release is applied while the matrix is read, not after it."""
    old = tmp_path / "old.yaml"
    old.write_text(
        'defaults:\n  tensorflow: 2.17.1\n  python: "3.13"\nvariants:\n'
        "  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "  - {name: native, source: bazel, cpu_flags: [avx2]}\n"
    )
    with pytest.raises(MatrixError, match=r"TensorFlow 2\.17\.1 does not build for this Python"):
        read_matrix(old)
    assert read_matrix(old, "2.21.0").defaults.tensorflow == "2.21.0"


def test_tensorflow_replaces_the_release_the_source_builds_use() -> None:
    """--tensorflow 2.17.1 moves defaults.tensorflow and the variants pinned to it (stock
    says `tensorflow: defaults`); an unknown minor release is refused without asking the
    package index which patch release it means."""
    matrix = read_matrix(default_matrix_path(), "2.17.1")
    assert matrix.defaults.tensorflow == "2.17.1"
    assert matrix.variant("stock").requirement == "tensorflow-cpu==2.17.1"
    assert read_matrix(default_matrix_path()).variant("stock").requirement == (
        "tensorflow-cpu==2.21.0"
    )
    with pytest.raises(UsageError, match=r"--tensorflow '2\.99': no build recipe for this release"):
        read_matrix(default_matrix_path(), "2.99")


def test_debug_says_the_matrix_and_the_defaults_the_options_replaced(tmp_path: Path) -> None:
    """With --debug, the matrix read and why, and each default --tensorflow and --bazel-cache
    replaced, said as coming from those options; those not replaced, from their matrix line."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text((REPO / "matrix.yaml").read_text())
    proc = run_tfbuild("--debug", "build", "--dry-run", "--variant", "avx2-fma", "--matrix",
                       str(matrix), "--tensorflow", "2.17.1", "--bazel-cache", "/srv/bazel",
                       "--store", str(tmp_path / "w"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert f"tfbuild: debug: matrix = {matrix}  [option --matrix]" in lines
    assert "tfbuild: debug: defaults.tensorflow = 2.17.1  [option --tensorflow]" in lines
    assert "tfbuild: debug: defaults.bazel.cache = /srv/bazel  [option --bazel-cache]" in lines
    python_line = next(
        n for n, line in enumerate(matrix.read_text().splitlines(), 1) if "python:" in line
    )
    assert f"tfbuild: debug: defaults.python = 3.11  [matrix {matrix}:{python_line}]" in lines
    quiet = run_tfbuild("build", "--dry-run", "--variant", "avx2-fma", "--matrix", str(matrix),
                        "--bazel-cache", "relative/cache")  # fmt: skip
    assert quiet.returncode == 64
    assert quiet.stderr == (
        "tfbuild: --bazel-cache 'relative/cache': expected a Docker volume name or an absolute "
        "path\n"
    )


def test_a_saved_profile_is_the_machine_and_a_build_target_says_it_is_saved(
    haswell_profile: Path,
) -> None:
    target = machine(haswell_profile)
    assert target.source == "cpuinfo" and target.source_path == str(HASWELL)
    assert target.cpu.march is not None and target.cpu.march.name == "haswell"
    built_for = build_target(haswell_profile)
    assert built_for.source == "saved" and built_for.cpu == target.cpu


def test_no_engine_means_no_image_probe() -> None:
    assert image_probe(NO_ENGINE) is None
    probe = image_probe(DockerInfo(reachable=True, host="unix:///var/run/docker.sock"))
    assert probe is not None and hasattr(probe, "cache_info")  # asked once per image


def test_forms_default_to_the_matrixs_and_as_given_comes_first(forms_matrix: Path) -> None:
    plain = read_matrix(default_matrix_path())
    assert with_forms(plain, (), None).forms == ("as-given",)
    saved = workload("savedmodel")
    asked = with_forms(plain, ("litert", "optimized", "litert"), saved)
    assert asked.forms == ("as-given", "litert", "optimized")
    assert with_forms(read_matrix(forms_matrix), (), saved).forms == ("as-given", "optimized")
    # --forms over the matrix's `forms:`: as-given alone needs no SavedModel
    assert with_forms(read_matrix(forms_matrix), ("as-given",), None).forms == ("as-given",)


def test_a_form_needs_a_savedmodel_and_is_refused_naming_where_it_was_asked(
    forms_matrix: Path,
) -> None:
    matrix = read_matrix(forms_matrix)
    with pytest.raises(UsageError) as caught:
        with_forms(matrix, (), None)
    assert str(caught.value) == (
        f"{forms_matrix}: forms: optimized: a model form is made from a SavedModel's "
        "signature, and this session has no --workload; expected --workload DIR (a SavedModel) "
        "or only as-given"
    )
    with pytest.raises(UsageError) as caught:
        with_forms(matrix, ("as-given", "litert"), workload("keras"))
    said = str(caught.value)
    assert said.startswith("--forms: litert: a model form is made from a SavedModel's signature")
    assert "--workload is a keras" in said


def test_forms_with_the_suite_are_refused_whatever_the_workload(forms_matrix: Path) -> None:
    """The suite runs the same in every form: --with-suite with forms would run it again in
    each. Said before the workload's kind is looked at."""
    with pytest.raises(UsageError) as caught:
        with_forms(read_matrix(forms_matrix), ("litert",), None, with_suite=True)
    assert str(caught.value) == (
        "--with-suite with model forms (litert): the suite runs the same in every form, so "
        "each form would run it again; run the suite in a session of its own"
    )
    assert with_forms(read_matrix(default_matrix_path()), (), workload("script"), True).forms == (
        "as-given",
    )


@pytest.mark.parametrize(
    ("atol", "rtol", "named"),
    [(0.01, None, "--atol"), (None, 0.1, "--rtol"), (0.01, 0.1, "--atol")],
)
def test_a_tolerance_without_a_form_to_hold_to_it_is_refused(
    atol: float | None, rtol: float | None, named: str
) -> None:
    plain = read_matrix(default_matrix_path())
    with pytest.raises(UsageError) as caught:
        with_forms(plain, (), workload("savedmodel", atol, rtol))
    assert str(caught.value) == (
        f"{named}: a tolerance for a model form's outputs, and this session measures only "
        "as-given; add --forms (e.g. --forms litert-int8) or leave it out"
    )
    held = with_forms(plain, ("litert-int8",), workload("savedmodel", atol, rtol))
    assert held.forms == ("as-given", "litert-int8")


def test_a_ranking_plan_must_hold_the_baseline(haswell_profile: Path) -> None:
    """Every config is ranked against matrix.yaml's baseline (stock:default): a selection
    without it is refused with the --only that adds it."""
    matrix = read_matrix(default_matrix_path())
    target = machine(haswell_profile)
    without = plan_here(matrix, target, Selection(only=("avx2-fma:default",)))
    assert [c.key for c in without.configs] == ["avx2-fma:default"]
    with pytest.raises(SelectionError) as caught:
        with_baseline(without)
    assert str(caught.value) == (
        "the selection leaves out the baseline stock:default (matrix.yaml's `baseline:`), which "
        "every config is ranked against: add --only stock:default"
    )
    with_it = plan_here(matrix, target, Selection(only=("avx2-fma:default", "stock:default")))
    assert sorted(c.key for c in with_baseline(with_it).configs) == [
        "avx2-fma:default",
        "stock:default",
    ]


def test_the_baseline_is_the_one_the_matrix_names(tmp_path: Path, haswell_profile: Path) -> None:
    path = tmp_path / "aa.yaml"
    path.write_text(
        "variants:\n"
        "  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "  - {name: again, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "tunings:\n  - {name: default}\n  - {name: one, intra_op: 1}\n"
        "baseline: {variant: again, tuning: one}\n"
    )
    matrix = read_matrix(path)
    target = machine(haswell_profile)
    with pytest.raises(SelectionError, match=r"leaves out the baseline again:one .* add --only "
                                             r"again:one$"):  # fmt: skip
        with_baseline(plan_here(matrix, target, Selection(only=("stock:*", "again:default"))))
    kept = with_baseline(plan_here(matrix, target, Selection(only=("again:one",))))
    assert [c.key for c in kept.configs] == ["again:one"]


def test_a_session_plans_for_this_machine_and_says_the_matrixs_notes(tmp_path: Path) -> None:
    """Local runtimes and no engine: the plan is for the machine detected here, made once;
    the note of a planned variant (mkl-avx2 keeps 2.21.0 under --tensorflow 2.22.0, which has
    no --config=mkl) is said, that of a variant left out is not."""
    matrix = read_matrix(default_matrix_path(), "2.22.0")
    notes: list[str] = []
    wanted = SessionMachine(runtime="local")
    selection = Selection(only=("mkl-avx2:default", "stock:default"))
    plan = session_plan(matrix, selection, wanted, NO_ENGINE, notes.append)
    assert plan.host.source == "live"
    assert sorted(c.key for c in plan.configs) == ["mkl-avx2:default", "stock:default"]
    assert notes == [
        "variant 'mkl-avx2': TensorFlow 2.22.0 (--tensorflow) has no --config=mkl (its .bazelrc "
        "defines it up to 2.21): it builds 2.21.0, the matrix's defaults.tensorflow"
    ]
    notes.clear()
    alone = session_plan(
        matrix, Selection(only=("stock:default",)), wanted, NO_ENGINE, notes.append
    )
    assert [c.key for c in alone.configs] == ["stock:default"] and notes == []


def _run_plan(only: tuple[str, ...], cpuinfo: str = "skylake-sp-xeon-gold-6132") -> Plan:
    host = profile_from_cpuinfo(FIXTURES / "cpuinfo" / f"{cpuinfo}.cpuinfo")
    return make_plan(load_matrix(REPO / "matrix.yaml"), host, only=only)


ENGINE = DockerInfo(reachable=True, host="unix:///var/run/docker.sock")
NO_DOCKER = DockerInfo(reachable=False, host="unix:///nowhere.sock")


def test_run_builds_what_the_store_lacks_only_when_asked_and_an_engine_answers(
    tmp_path: Path,
) -> None:
    """`run`'s source variants (source_builds): with --build and an engine, every source
    variant that runs here and is not in the store is built, the plan kept whole; without
    --build, or without an engine, they are left out of the plan and named, with the command
    and estimate that build them, or with how to get an engine."""
    plan = _run_plan(("stock", "mkl-avx2", "avx2-fma"))
    store = WheelStore(tmp_path / "wheels")
    built = source_builds(plan, store, True, ENGINE)
    assert [pv.variant.name for pv in built.build] == ["avx2-fma", "mkl-avx2"]
    assert built.plan is plan and built.left_out is None and built.notes == ()
    skipped = source_builds(plan, store, False, ENGINE)
    assert skipped.build == () and {pv.variant.name for pv in skipped.plan.variants} == {"stock"}
    assert skipped.left_out is not None and "tfbuild build" in skipped.left_out
    assert skipped.notes == (f"[yellow]{skipped.left_out}[/]",)
    no_engine = source_builds(plan, store, True, NO_DOCKER)
    assert no_engine.build == () and no_engine.left_out == (
        "Skipped the source variants avx2-fma, mkl-avx2: building them needs a Docker engine and "
        "none answers at unix:///nowhere.sock. To include them: install and start Docker "
        "(Debian/Ubuntu: apt-get install docker.io, then start dockerd) or point DOCKER_HOST at "
        "an engine; `tfbuild base-image` puts the base image on it; then run `tfbuild run` again."
    )


def test_run_refuses_to_leave_out_what_would_leave_nothing_to_rank(tmp_path: Path) -> None:
    """Leaving the source variants out leaves only what cannot run here: refused with the
    reason, exit 8 without --build, exit 5 without an engine; a variant that cannot run here
    is never built, and said so."""
    plan = _run_plan(("stock", "mkl-avx2", "avx512"), cpuinfo="haswell-xeon-e5-2680v3")
    store = WheelStore(tmp_path / "wheels")
    built = source_builds(plan, store, True, ENGINE)
    assert [pv.variant.name for pv in built.build] == ["mkl-avx2"]  # avx512: not on Haswell
    assert built.notes[0].startswith("not building avx512: it cannot run here (")
    only_sources = plan.without(["stock"])
    with pytest.raises(NotBuiltError, match="Nothing to rank: every config that runs here needs"):
        source_builds(only_sources, store, False, ENGINE)
    with pytest.raises(EngineUnavailable, match="Skipped the source variants mkl-avx2: "):
        source_builds(only_sources, store, True, NO_DOCKER)
