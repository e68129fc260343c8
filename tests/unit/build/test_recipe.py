"""Each era's recipe against TensorFlow's own files.

The rendered build script runs for real, in a TensorFlow tree reduced to what it reads: the
.bazelrc and .bazelversion of a cited snapshot (tests/fixtures/bazelrc, each file names its
repository and commit). `bazel` is a stand-in that records the release bazelisk would run and
the arguments it got, and leaves a wheel where the real target does: no TensorFlow build can
finish without network access. Each test names the divergence it covers (D1-D8 of the recipe
audit) and checks the recipe against the line of TensorFlow's file that decides it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from support.env import FIXTURES
from support.recipes import recipe_for

from tfbuild.build.recipe import SOURCE_DIR, Recipe
from tfbuild.build.render import render, template_dirs
from tfbuild.build.stage import release_check
from tfbuild.config.load import load_matrix
from tfbuild.errors import BuildFailed, UsageError
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.plan.make import make_plan
from tfbuild.resources import data_path, load_table

BUILDER = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo")
MATRIX = """\
variants:
  - {name: plain-2.21, source: bazel, tensorflow: 2.21.0}
  - {name: avx512-2.21, source: bazel, tensorflow: 2.21.0, cpu_flags: [avx512f]}
  - {name: tuned-2.21, source: bazel, tensorflow: 2.21.0, copts: [-O3]}
  - {name: mkl-2.17, source: bazel, tensorflow: 2.17.1, configs: [mkl], cpu_flags: [avx2, fma]}
  - {name: plain-2.15, source: bazel, tensorflow: 2.15.1}
  - name: cuda-2.19
    source: bazel
    tensorflow: 2.19.0
    cuda: {version: "12.5.1", cudnn: "9.3.0", compute_capabilities: [sm_90, compute_90]}
  - name: cuda-2.21
    source: bazel
    tensorflow: 2.21.0
    cuda: {version: "12.8.1", cudnn: "9.8.0", compute_capabilities: [sm_90, compute_90]}
  - name: cuda-2.17
    source: bazel
    tensorflow: 2.17.1
    cuda: {version: "12.3", cudnn: "8.9", compute_capabilities: [sm_90]}
  - name: cuda-2.15
    source: bazel
    tensorflow: 2.15.1
    cuda: {version: "12.2", cudnn: "8.9", compute_capabilities: [sm_80]}
"""

STUB_BAZEL = """#!/bin/sh
# Stands in for bazelisk: records the release it would run and its arguments.
if [ "$1" = "--version" ]; then echo "bazel $USE_BAZEL_VERSION"; exit 0; fi
printf '%s\\n' "$USE_BAZEL_VERSION" > .stub-bazel-version
printf '%s\\n' "$@" > .stub-bazel-args
mkdir -p bazel-bin/tensorflow/tools/pip_package/wheel_house
house=bazel-bin/tensorflow/tools/pip_package/wheel_house
for name in tensorflow tensorflow_cpu; do
  case " $* " in *" --repo_env=WHEEL_NAME=$name "*)
    : > "$house/$name-2.21.0-cp311-cp311-linux_x86_64.whl" ;;
  esac
done
cat > bazel-bin/tensorflow/tools/pip_package/build_pip_package <<'EOF'
#!/bin/sh
: > "$1/tensorflow_cpu-2.15.1-cp311-cp311-linux_x86_64.whl"
EOF
chmod +x bazel-bin/tensorflow/tools/pip_package/build_pip_package
"""

STUB_CONFIGURE = """#!/bin/sh
# Stands in for ./configure: records the environment it was given.
env | sort > .stub-configure-env
"""


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    path = tmp_path_factory.mktemp("m") / "matrix.yaml"
    path.write_text(MATRIX)
    return load_matrix(path)


def recipe(matrix, name: str) -> Recipe:  # type: ignore[no-untyped-def]
    return recipe_for(matrix, name, BUILDER)


def run_build(r: Recipe, snapshot: str, bazelversion: str | None, tmp_path: Path) -> Path:
    """Run the rendered build script in a tree made of the snapshot's .bazelrc (and the given
    .bazelversion); returns the tree, with what the stand-ins recorded."""
    tree = tmp_path / "src"
    tree.mkdir(parents=True)
    (tree / ".bazelrc").write_text((FIXTURES / "bazelrc" / f"{snapshot}.bazelrc").read_text())
    if bazelversion is not None:
        (tree / ".bazelversion").write_text(f"{bazelversion}\n# NOTE: Update Bazel version\n")
    (tree / "configure").write_text(STUB_CONFIGURE)
    (tree / "configure").chmod(0o755)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bazel").write_text(STUB_BAZEL)
    shutil.copy(data_path("templates") / "tfbuild-preflight", bin_dir / "tfbuild-preflight")
    for tool in ("bazel", "tfbuild-preflight"):
        (bin_dir / tool).chmod(0o755)
    script = render(r, template_dirs(None)).build_script.replace(SOURCE_DIR, str(tree))
    # In its container the script owns /tmp; here a folder of this test stands in for it.
    script = script.replace("/tmp/tfbuild-wheel", str(tmp_path / "tfbuild-wheel"))
    (tmp_path / "build.sh").write_text(script)
    out = tmp_path / "out"
    proc = subprocess.run(
        ["sh", str(tmp_path / "build.sh"), str(out)],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert len(list(out.glob("*.whl"))) == 1
    return tree


def bazel_args(tree: Path) -> list[str]:
    return (tree / ".stub-bazel-args").read_text().split()


def rc_values(snapshot: str, option: str) -> list[str]:
    """The values an option takes in a snapshot's .bazelrc lines that always apply."""
    text = (FIXTURES / "bazelrc" / f"{snapshot}.bazelrc").read_text()
    return re.findall(rf"^(?:build|common) {re.escape(option)}=(\S+)", text, re.M)


def test_d1_bazel_release_read_from_the_tree(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D1: 2.21's default is 7.7.0 (the .bazelversion just after the r2.21 cut); a tree's own
    .bazelversion wins, so a wrong default cannot stop or misbuild a build."""
    r = recipe(matrix, "avx512-2.21")
    assert r.bazel_version == "7.7.0"
    tree = run_build(r, "2.22dev", "7.7.0", tmp_path / "a")
    assert (tree / ".stub-bazel-version").read_text().strip() == "7.7.0"
    older = run_build(r, "2.21", "7.4.1", tmp_path / "b")  # the Aug 2025 snapshot's value
    assert (older / ".stub-bazel-version").read_text().strip() == "7.4.1"
    bare = run_build(r, "2.21", None, tmp_path / "c")
    assert (bare / ".stub-bazel-version").read_text().strip() == "7.7.0"


def test_d2_cuda_before_hermetic_cuda_is_refused_at_plan_time(matrix) -> None:  # type: ignore[no-untyped-def]
    """D2: before 2.18 CUDA needs a local toolkit and gcc the build image lacks (and 2.17 would
    drop the requested capabilities): the plan says so, and no recipe is made."""
    plan = make_plan(matrix, BUILDER)
    by_name = {pv.variant.name: pv.verdict for pv in plan.variants}
    for name, version in (("cuda-2.17", "2.17.1"), ("cuda-2.15", "2.15.1")):
        verdict = by_name[name]
        assert verdict.runs is False
        assert f"CUDA builds need TensorFlow >= 2.18 here (got {version})" in verdict.summary
        with pytest.raises(UsageError, match=r"CUDA builds need TensorFlow >= 2\.18"):
            recipe(matrix, name)
    assert "CUDA builds need" not in by_name["cuda-2.19"].summary


def test_d3_d6_hermetic_cuda_wheels(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D3: CUDA wheels are built without CUDA libraries (cuda_wheel, as TF's CI does), so the
    runtime installs the and-cuda extra (tests/unit/runtime/test_venv.py). D6: with the
    hermetic C++ toolchain no CLANG_CUDA_COMPILER_PATH is passed (no clang is installed)."""
    tree = run_build(recipe(matrix, "cuda-2.19"), "2.19", "6.5.0", tmp_path / "a")
    args = bazel_args(tree)
    assert {"--config=cuda_clang", "--config=cuda_wheel"} <= set(args)
    assert "--repo_env=HERMETIC_CUDA_COMPUTE_CAPABILITIES=sm_90,compute_90" in args
    assert "--action_env=CLANG_CUDA_COMPILER_PATH=/usr/lib/llvm-18/bin/clang" in args
    r21 = recipe(matrix, "cuda-2.21")
    tree21 = run_build(r21, "2.22dev", "7.7.0", tmp_path / "b")
    args21 = bazel_args(tree21)
    assert "--config=cuda_wheel" in args21
    assert not any("CLANG_CUDA_COMPILER_PATH" in a for a in args21)
    assert "--repo_env=HERMETIC_CUDA_VERSION=12.8.1" in args21


def test_d4_release_wheel_version(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D4: TF's .bazelrc defaults to ML_WHEEL_TYPE=snapshot (X.Y.Z.dev0+selfbuilt); the recipe
    passes release on the command line, after the rc files, as TF's release CI does; and a
    built wheel with a pre-release or local version is refused."""
    assert rc_values("2.22dev", "--repo_env=ML_WHEEL_TYPE") == ['"snapshot"']
    assert rc_values("2.21", "--repo_env=ML_WHEEL_TYPE") == ['"snapshot"']
    for name, snapshot, version in (("avx512-2.21", "2.22dev", "7.7.0"),
                                    ("cuda-2.19", "2.19", "6.5.0")):  # fmt: skip
        args = bazel_args(run_build(recipe(matrix, name), snapshot, version, tmp_path / name))
        assert "--repo_env=ML_WHEEL_TYPE=release" in args
    release_check("tensorflow_cpu-2.21.0-cp311-cp311-linux_x86_64.whl")
    with pytest.raises(BuildFailed, match="not a release version"):
        release_check("tensorflow_cpu-2.21.0.dev0+selfbuilt-cp311-cp311-linux_x86_64.whl")


def test_d5_offsetof_warning_where_configure_does_not_run(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D5: every official Linux config passes -Wno-gnu-offsetof-extensions
    (release_linux_base); eras that skip ./configure (which writes it for clang 16/17) get it."""
    assert "-Wno-gnu-offsetof-extensions" in (FIXTURES / "bazelrc" / "2.22dev.bazelrc").read_text()
    args = bazel_args(run_build(recipe(matrix, "mkl-2.17"), "2.17", "6.5.0", tmp_path))
    assert "--copt=-Wno-gnu-offsetof-extensions" in args
    assert "--host_copt=-Wno-gnu-offsetof-extensions" in args
    configure_era = recipe(matrix, "plain-2.15")
    assert not any("offsetof" in a for a in configure_era.bazel_args)


def test_d7_plain_variants_get_tensorflows_avx_floor(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D7: TF's release_cpu_linux builds with --config=avx_linux; a variant that asks for no
    instruction set gets the same floor (defined in each era's .bazelrc, checked by the
    preflight), and the plan says it needs AVX. A variant that names its own does not."""
    for name, snapshot, version in (("plain-2.21", "2.22dev", "7.7.0"),
                                    ("tuned-2.21", "2.21", "7.4.1"),
                                    ("plain-2.15", "2.15", "6.1.0")):  # fmt: skip
        tree = run_build(recipe(matrix, name), snapshot, version, tmp_path / name)
        assert "--config=avx_linux" in bazel_args(tree)
    assert "--config=avx_linux" not in recipe(matrix, "avx512-2.21").bazel_args
    plan = make_plan(matrix, BUILDER)
    required = {pv.variant.name: pv.required_flags for pv in plan.variants}
    assert required["plain-2.21"] is not None and "avx" in required["plain-2.21"]


def test_d8_pywrap_rules_and_the_hermetic_compiler(matrix, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """D8: TF's CI passes USE_PYWRAP_RULES=True from 2.20 (a global default in the 2.21
    snapshots); 2.21 compiles with the hermetic LLVM, so no clang is installed or named; the
    `common:` lines of the newer .bazelrc satisfy the preflight."""
    assert rc_values("2.22dev", "--repo_env=USE_PYWRAP_RULES") == ["True"]
    r = recipe(matrix, "avx512-2.21")
    args = bazel_args(run_build(r, "2.22dev", "7.7.0", tmp_path))
    assert "--repo_env=USE_PYWRAP_RULES=True" in args
    assert not any(a.startswith("--repo_env=CC=") for a in args)
    assert r.compiler == "hermetic-llvm-18" and not r.needs_compiler
    mkl = run_build(recipe(matrix, "mkl-2.17"), "2.17", "6.5.0", tmp_path / "mkl")
    assert "--repo_env=USE_PYWRAP_RULES=True" not in bazel_args(mkl)


def test_every_fact_names_its_sources() -> None:
    """Each release and era of tensorflow.yaml cites sources, and every cited id is listed
    with a repository and a path."""
    table = load_table("tensorflow")
    sources = table["sources"]
    for key, entry in sources.items():
        assert entry.get("repository") and entry.get("path") and entry.get("what"), key
    for group in ("releases", "eras"):
        for name, entry in table[group].items():
            assert entry.get("sources"), f"{group}.{name} cites no source"
            unknown = set(entry["sources"]) - set(sources)
            assert not unknown, f"{group}.{name} cites unknown sources {unknown}"
