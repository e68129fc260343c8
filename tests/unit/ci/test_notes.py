"""What the generated workflow's header and `tfbuild ci github`'s output say about it, for the
default matrix and variations of it: where the build jobs run (nowhere on a standard runner,
with a warning when one is named, remotely with a remote executor), what is not built and
why, what `march: host` variants are built for, and the header's comments wrapped at 96
columns without breaking a word."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from support.env import FIXTURES, REPO

from tfbuild.ci.notes import build_note, build_where, left_out_note, summary, tuned_note
from tfbuild.ci.settings import Settings
from tfbuild.config.load import load_matrix
from tfbuild.config.model import Matrix
from tfbuild.machine.detect import profile_from_cpuinfo

DEFAULT = load_matrix(REPO / "matrix.yaml")
"""Source variants: native (march: host), avx2-fma, mkl-avx2, avx512, cuda-sm90."""
BUILDS = "avx2-fma (for any), mkl-avx2 (for any), avx512 (for any)"
CUDA_LEFT_OUT = (
    "not built: cuda-sm90: a CUDA build (sm_90, compute_90), and no bench runner has a GPU "
    "that runs it to measure it (--bench-host RUNNER=PROFILE with such a GPU in the profile)"
)


def with_bazel(matrix: Matrix, **changed: str | None) -> Matrix:
    bazel = dataclasses.replace(matrix.defaults.bazel, **changed)  # type: ignore[arg-type]
    return dataclasses.replace(matrix, defaults=dataclasses.replace(matrix.defaults, bazel=bazel))


def settings(**changed: object) -> Settings:
    plain = Settings("matrix.yaml", ".github/workflows/n.yml")
    return dataclasses.replace(plain, **changed)  # type: ignore[arg-type]


def test_without_a_build_runner_no_build_is_scheduled_and_the_output_says_which() -> None:
    assert summary(DEFAULT, settings()) == [
        f"build: none scheduled for the 3 source build(s) ({BUILDS}), and bench skips them: a "
        "TensorFlow wheel does not build in 360 min on a standard hosted runner (4 vCPUs, 16 GB "
        "of RAM); pass --build-runner a larger or self-hosted runner, or set "
        "defaults.bazel.remote_executor in the matrix",
        "bench: one job per runner: ubuntu-latest",
        CUDA_LEFT_OUT,
    ]


def test_a_named_build_runner_runs_every_build_and_the_output_lists_them() -> None:
    assert summary(DEFAULT, settings(build_runner="linux-64-core")) == [
        f"build: 3 job(s) on linux-64-core, up to 360 min each: {BUILDS}",
        "bench: one job per runner: ubuntu-latest",
        CUDA_LEFT_OUT,
    ]


def test_a_standard_runner_named_for_builds_is_warned_about() -> None:
    """With a remote cache the warning adds that a cache helps only once warm."""
    assert build_where(DEFAULT, settings(build_runner="ubuntu-24.04"), 3) == [
        "build: 3 job(s) on ubuntu-24.04, up to 360 min each",
        "warning: ubuntu-24.04 is a standard hosted runner (4 vCPUs, 16 GB of RAM, a 14 GB SSD), "
        "on which a TensorFlow wheel does not build in 360 min: pass --build-runner a larger or "
        "self-hosted runner, or set defaults.bazel.remote_executor in the matrix",
    ]
    cached = with_bazel(DEFAULT, remote_cache="grpcs://cache.example.com")
    warning = build_where(cached, settings(build_runner="ubuntu-22.04"), 3)[1]
    assert warning.startswith("warning: ubuntu-22.04 is a standard hosted runner")
    assert warning.endswith("in the matrix (its remote cache helps only once it is warm)")


def test_a_remote_executor_runs_the_builds_from_a_standard_runner_without_a_warning() -> None:
    remote = with_bazel(DEFAULT, remote_executor="grpcs://rbe.example.com")
    assert build_where(remote, settings(), 3) == [
        "build: 3 job(s) on ubuntu-latest, up to 360 min each",
        "bazel executes remotely at grpcs://rbe.example.com",
    ]
    named = build_where(remote, settings(build_runner="ubuntu-24.04"), 3)
    assert named == [
        "build: 3 job(s) on ubuntu-24.04, up to 360 min each",
        "bazel executes remotely at grpcs://rbe.example.com",
    ]


def test_nothing_to_build_says_nothing() -> None:
    assert build_where(DEFAULT, settings(), 0) == []
    assert build_note(DEFAULT, settings(build_runner="ubuntu-latest"), 0) == ""


def test_the_header_says_it_as_sentences_in_wrapped_comments() -> None:
    """Each line a sentence, capitalised, with a full stop; a continuation indented; no line
    over 96 columns; `--build-runner` and `defaults.bazel.remote_executor` never split."""
    note = build_note(DEFAULT, settings(build_runner="ubuntu-24.04"), 3)
    lines = note.splitlines()
    assert lines[0] == "# Build: 3 job(s) on ubuntu-24.04, up to 360 min each."
    assert lines[1].startswith("# Warning: ubuntu-24.04 is a standard hosted runner")
    assert all(line.startswith("#   ") for line in lines[2:]) and len(lines) > 2
    assert max(len(line) for line in lines) <= 96
    words = note.replace("#", " ").split()
    assert "--build-runner" in words and "defaults.bazel.remote_executor" in words
    warning = " ".join(line.removeprefix("#").strip() for line in lines[1:])
    assert (
        warning == "W" + build_where(DEFAULT, settings(build_runner="ubuntu-24.04"), 3)[1][1:] + "."
    )


def test_what_is_not_built_is_said_variant_by_variant() -> None:
    long = "https://rbe.example.com/" + "x" * 100
    note = left_out_note({"cuda-sm90": "no bench runner has a GPU", "native": f"see {long}"})
    assert note.splitlines() == [
        "# Not built: cuda-sm90, no bench runner has a GPU.",
        "# Not built: native, see",
        f"#   {long}.",  # a word longer than a line is not broken
    ]
    assert left_out_note({}) == ""


def test_host_tuned_variants_are_built_for_runners_with_a_saved_profile_only() -> None:
    s = settings(
        bench_runners=("ubuntu-latest", "skx-box", "zen-box"),
        bench_hosts={"skx-box": "hosts/skx.json", "zen-box": "hosts/zen.json", "gone": "g.json"},
    )
    assert tuned_note(["native", "native-fast"], s).splitlines() == [
        "# march: host variants (native, native-fast) are built for each bench runner's saved "
        "profile",
        "# (built for: skx-box from hosts/skx.json, zen-box from hosts/zen.json)",
        "# and skipped on runners without one (ubuntu-latest: save one with `tfbuild detect "
        "--output hosts/RUNNER.json` there, pass --bench-host)",
    ]
    every = settings(bench_hosts={"ubuntu-latest": "hosts/u.json"})
    assert tuned_note(["native"], every).splitlines()[1:] == [
        "# (built for: ubuntu-latest from hosts/u.json)"
    ]
    assert tuned_note([], s) == ""


def test_the_output_of_a_nightly_with_a_saved_profile_and_a_workload(tmp_path: Path) -> None:
    """The runner with a saved profile (a Xeon Gold 6132's) gets the native build; bench
    measures the user's model in the matrix's forms."""
    profile = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo")
    saved = tmp_path / "skx.json"
    saved.write_text(json.dumps(profile.to_json()))
    s = settings(
        build_runner="big-builder",
        bench_runners=("ubuntu-latest", "skx-box"),
        bench_hosts={"skx-box": str(saved)},
        workload="models/my model.keras",
    )
    forms = dataclasses.replace(DEFAULT, forms=("as-given", "litert"))
    assert summary(forms, s) == [
        f"build: 4 job(s) on big-builder, up to 360 min each: native (for skx-box), {BUILDS}",
        "bench: one job per runner: ubuntu-latest, skx-box",
        "bench measures models/my model.keras (not the fixed suite), in the forms as-given, litert",
        CUDA_LEFT_OUT,
    ]
