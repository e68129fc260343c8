"""Recipes per TensorFlow era: golden renders, Dockerfile structure, hadolint and shellcheck,
the preflight against .bazelrc files of each era, and user template overrides."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from dockerfile_parse import DockerfileParser
from support.env import FIXTURES
from support.golden import check_golden
from support.recipes import recipe_for

from tfbuild.build.render import render, template_dirs
from tfbuild.config.load import load_matrix
from tfbuild.errors import UsageError
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.plan.make import make_plan
from tfbuild.resources import data_path

RENDER = FIXTURES / "render"
MATRIX = load_matrix(RENDER / "matrix.yaml")
BUILDER = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "skylake-sp-xeon-gold-6132.cpuinfo")
CASES = ["cpu-2.15", "mkl-avx2", "cuda-sm90", "avx512"]


def rendered(name: str) -> tuple[str, str, list[str]]:
    recipe = recipe_for(MATRIX, name, BUILDER, ca_bundle=False)
    files = render(recipe, template_dirs(None))
    return files.dockerfile, files.build_script, recipe.bazel_command


@pytest.mark.parametrize("name", CASES)
def test_golden_render(name: str) -> None:
    """TFBUILD_UPDATE_GOLDEN=1 rewrites the golden files after an intended change (never in
    CI)."""
    dockerfile, script, _ = rendered(name)
    check_golden({RENDER / f"{name}.Dockerfile": dockerfile, RENDER / f"{name}.build.sh": script})


@pytest.mark.parametrize("name", CASES)
def test_dockerfile_structure(name: str, tmp_path: Path) -> None:
    dockerfile, _, _ = rendered(name)
    path = tmp_path / "Dockerfile"
    path.write_text(dockerfile)
    parser = DockerfileParser(str(path))
    stages = [i["value"] for i in parser.structure if i["instruction"] == "FROM"]
    assert stages == [
        "tfbuild/base:bookworm AS toolchain",
        "toolchain AS source",
        "source AS build",
        "scratch AS export",
    ]
    runs = " ".join(i["value"] for i in parser.structure if i["instruction"] == "RUN")
    assert "install -m 0755 /tmp/package/bazelisk-linux_amd64 /usr/local/bin/bazel" in runs
    assert "sha256sum -c -" in runs
    assert "--mount=type=cache,id=tfbuild-bazel-cache,target=/cache tfbuild-build /out" in runs
    envs = " ".join(i["value"] for i in parser.structure if i["instruction"] == "ENV")
    assert "USE_BAZEL_VERSION=" in envs


@pytest.mark.parametrize("name", CASES)
def test_hadolint_and_shellcheck_pass(name: str, tmp_path: Path) -> None:
    """Every rule the recipes ignore is named with its reason beside it (DL3008)."""
    dockerfile, script, _ = rendered(name)
    (tmp_path / "Dockerfile").write_text(dockerfile)
    (tmp_path / "tfbuild-build").write_text(script)
    hadolint = shutil.which("hadolint")
    shellcheck = shutil.which("shellcheck")
    assert hadolint and shellcheck, "pip install '.[test]' provides hadolint and shellcheck"
    lint = subprocess.run(
        [hadolint, "--failure-threshold", "info", str(tmp_path / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    for script_path in (tmp_path / "tfbuild-build", data_path("templates") / "tfbuild-preflight"):
        check = subprocess.run(
            [shellcheck, "-s", "sh", str(script_path)], capture_output=True, text=True, check=False
        )
        assert check.returncode == 0, check.stdout


def test_era_specific_commands() -> None:
    _, script_215, cmd_215 = rendered("cpu-2.15")
    assert cmd_215[-1] == "//tensorflow/tools/pip_package:build_pip_package"
    assert "./configure < /dev/null" in script_215
    assert "build_pip_package /tmp/tfbuild-wheel --cpu" in script_215
    assert "export CLANG_COMPILER_PATH=/usr/lib/llvm-16/bin/clang" in script_215

    _, script_217, cmd_217 = rendered("mkl-avx2")
    assert cmd_217[-1] == "//tensorflow/tools/pip_package:wheel"
    assert "--config=mkl" in cmd_217 and "--repo_env=WHEEL_NAME=tensorflow_cpu" in cmd_217
    assert [a for a in cmd_217 if a.startswith("--copt")] == [
        "--copt=-mavx2",
        "--copt=-mfma",
        "--copt=-Wno-gnu-offsetof-extensions",
    ]
    assert "--host_copt=-mavx2" in cmd_217  # the Skylake builder runs AVX2 build tools
    assert "--repo_env=CC=/usr/lib/llvm-17/bin/clang" in cmd_217
    assert "./configure" not in script_217

    dockerfile_219, _, cmd_219 = rendered("cuda-sm90")
    for arg in (
        "--config=cuda_clang",
        "--config=cuda_wheel",
        "--repo_env=HERMETIC_CUDA_VERSION=12.5.1",
        "--repo_env=HERMETIC_CUDNN_VERSION=9.3.0",
        "--repo_env=HERMETIC_CUDA_COMPUTE_CAPABILITIES=sm_90,compute_90",
        "--repo_env=WHEEL_NAME=tensorflow",
        "--repo_env=HERMETIC_PYTHON_VERSION=3.11",
    ):
        assert arg in cmd_219
    assert "apt.llvm.org" in dockerfile_219 and "clang-18" in dockerfile_219

    dockerfile_221, _, cmd_221 = rendered("avx512")
    assert "--copt=-mavx512f" in cmd_221
    assert not any(a.startswith("--repo_env=CC=") for a in cmd_221)  # hermetic C++ toolchain
    assert "clang-18" not in dockerfile_221
    assert "USE_BAZEL_VERSION=7.7.0" in dockerfile_221


def test_host_copts_left_out_when_builder_lacks_the_flags() -> None:
    haswell = profile_from_cpuinfo(FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo")
    recipe = recipe_for(MATRIX, "avx512", haswell)
    assert "--copt=-mavx512f" in recipe.bazel_args
    # build tools keep TensorFlow's own flags only
    assert [a for a in recipe.bazel_args if a.startswith("--host_copt")] == [
        "--host_copt=-Wno-gnu-offsetof-extensions"
    ]
    assert any("build machine lacks AVX512F" in n for n in recipe.notes)


def test_remote_cache_and_credentials(tmp_path: Path) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "defaults:\n  bazel: {remote_cache: 'grpcs://cache.example.com:443', flags: [--jobs=8]}\n"
        "variants:\n  - {name: v, source: bazel, tensorflow: 2.17.1}\n"
    )
    m = load_matrix(path)
    recipe = recipe_for(m, "v", BUILDER)
    files = render(recipe, template_dirs(path))
    assert "--remote_cache=grpcs://cache.example.com:443" in recipe.bazel_args
    assert "--jobs=8" in recipe.bazel_args
    # the header is read from the environment when the container runs, never rendered
    assert '"--remote_header=${TFBUILD_BAZEL_REMOTE_HEADER}"' in files.build_script
    assert "remote_header" not in files.dockerfile


def test_user_templates_override_packaged_ones(tmp_path: Path) -> None:
    (tmp_path / "templates" / "partials").mkdir(parents=True)
    (tmp_path / "templates" / "partials" / "export.j2").write_text(
        "FROM scratch AS export\nCOPY --from=build {{ out_dir }}/ /custom/\n"
    )
    (tmp_path / "matrix.yaml").write_text((RENDER / "matrix.yaml").read_text())
    m = load_matrix(tmp_path / "matrix.yaml")
    recipe = recipe_for(m, "mkl-avx2", BUILDER)
    files = render(recipe, template_dirs(tmp_path / "matrix.yaml"))
    assert "COPY --from=build /out/ /custom/" in files.dockerfile
    assert "FROM toolchain AS source" in files.dockerfile  # the rest still packaged


def test_local_source_must_be_a_tree(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a TensorFlow source tree"):
        recipe_for(MATRIX, "mkl-avx2", BUILDER, tf_source=tmp_path)


PREFLIGHT = data_path("templates") / "tfbuild-preflight"


def tree(tmp_path: Path, era: str, bazel: str, mkl: bool = True) -> Path:
    """A TensorFlow tree reduced to what the preflight reads, from the era's .bazelrc."""
    root = tmp_path / era
    root.mkdir(parents=True)
    source = (FIXTURES / "bazelrc" / f"{era}.bazelrc").read_text()
    if not mkl:
        source = "\n".join(
            line for line in source.splitlines() if not line.startswith(("build:mkl", "common:mkl"))
        )
    (root / ".bazelrc").write_text(source)
    (root / ".bazelversion").write_text(f"{bazel}\n# NOTE: Update Bazel version in ...\n")
    return root


@pytest.mark.parametrize(
    ("era", "bazel"),
    [
        ("2.15", "6.1.0"),
        ("2.17", "6.5.0"),
        ("2.19", "6.5.0"),
        ("2.21", "7.4.1"),
        ("2.22dev", "7.7.0"),
    ],
)
def test_preflight_per_era(tmp_path: Path, era: str, bazel: str) -> None:
    root = tree(tmp_path, era, bazel)
    ok = subprocess.run(
        ["sh", str(PREFLIGHT), str(root), bazel, "mkl", "mkl_threadpool"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    missing = subprocess.run(
        ["sh", str(PREFLIGHT), str(tree(tmp_path / "x", era, bazel, mkl=False)), bazel, "mkl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert missing.returncode == 3
    assert "--config=mkl is not defined in" in missing.stderr and "it defines:" in missing.stderr
    assert ok.stdout.strip() == bazel  # the release the build runs, read from the tree
    other = subprocess.run(
        ["sh", str(PREFLIGHT), str(root), "9.9.9", "mkl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert other.returncode == 0 and other.stdout.strip() == bazel, other.stderr
    assert f".bazelversion asks for bazel {bazel} (the recipe's default" in other.stderr
    (root / ".bazelversion").unlink()
    default = subprocess.run(
        ["sh", str(PREFLIGHT), str(root), "9.9.9", "mkl"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert default.returncode == 0 and default.stdout.strip() == "9.9.9", default.stderr
    (root / ".bazelversion").write_text("last_green\n")
    odd = subprocess.run(
        ["sh", str(PREFLIGHT), str(root), "9.9.9"], capture_output=True, text=True, check=False
    )
    assert odd.returncode == 3 and "not a bazel release" in odd.stderr


def test_preflight_reads_imported_bazelrc(tmp_path: Path) -> None:
    root = tree(tmp_path, "2.15", "6.1.0")
    with (root / ".bazelrc").open("a") as fh:
        fh.write("try-import %workspace%/.tf_configure.bazelrc\n")
    (root / ".tf_configure.bazelrc").write_text("build:opt --copt=-Wno-sign-compare\n")
    ok = subprocess.run(
        ["sh", str(PREFLIGHT), str(root), "6.1.0", "opt"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr


FLOOR = """\
variants:
  - {name: tuned-2.21, source: bazel, tensorflow: 2.21.0, cpu_flags: [avx2, fma]}
  - {name: tuned-2.17, source: bazel, tensorflow: 2.17.1, cpu_flags: [avx2, fma]}
  - {name: wide-2.21, source: bazel, tensorflow: 2.21.0, cpu_flags: [avx512f]}
  - {name: v2-2.21, source: bazel, tensorflow: 2.21.0, march: x86-64-v2}
  - {name: plain-2.21, source: bazel, tensorflow: 2.21.0}
"""


def test_no_variant_is_built_below_the_releases_floor(tmp_path: Path) -> None:
    """TensorFlow's own 2.21 wheels are built with AVX and F16C (avx_linux since PR #98786): a
    variant naming AVX2 and FMA gets -mf16c too, and says so; 2.17's floor is AVX alone, which
    AVX2 implies; AVX512F implies F16C; a variant naming nothing gets avx_linux itself, and
    the plan counts F16C among what each of them needs to run."""
    (tmp_path / "matrix.yaml").write_text(FLOOR)
    m = load_matrix(tmp_path / "matrix.yaml")

    def copts(name: str) -> list[str]:
        recipe = recipe_for(m, name, BUILDER, ca_bundle=False)
        return [a for a in recipe.bazel_command if a.startswith("--copt=-m")]

    assert copts("tuned-2.21") == ["--copt=-mavx2", "--copt=-mfma", "--copt=-mf16c"]
    notes = recipe_for(m, "tuned-2.21", BUILDER, ca_bundle=False).notes
    assert "F16C added: TensorFlow 2.21's own wheels are built with it (--config=avx_linux)" \
        in " ".join(notes)  # fmt: skip
    assert copts("tuned-2.17") == ["--copt=-mavx2", "--copt=-mfma"]
    assert copts("wide-2.21") == ["--copt=-mavx512f"]
    assert copts("v2-2.21") == ["--copt=-march=x86-64-v2", "--copt=-mavx", "--copt=-mf16c"]
    plain = recipe_for(m, "plain-2.21", BUILDER, ca_bundle=False)
    assert "--config=avx_linux" in plain.bazel_command and copts("plain-2.21") == []
    plan = make_plan(m, BUILDER)
    by_name = {pv.variant.name: pv for pv in plan.variants}
    for name in ("tuned-2.21", "plain-2.21", "v2-2.21"):
        assert "f16c" in (by_name[name].required_flags or ()), name
    assert "f16c" not in (by_name["tuned-2.17"].required_flags or ())


def test_a_release_candidate_builds_from_its_tag_and_its_tree_decides_on_mkl(
    tmp_path: Path,
) -> None:
    """2.22.0rc0 (the package index's name) is cloned from TensorFlow's tag v2.22.0-rc0 with
    the 2.22 facts. A 2.22 variant asking for --config=mkl renders (that 2.22 lacks it is
    inferred from master, not read from its tree): its build script hands mkl to the
    preflight, which stops the build before bazel on a tree without it (the .bazelrc read just
    after the r2.21 cut, mkl lines taken out) and lets it through on one that defines it."""
    (tmp_path / "matrix.yaml").write_text(
        'defaults: {tensorflow: "2.22.0rc0", python: "3.14"}\n'
        "variants:\n  - {name: plain, source: bazel}\n"
        "  - {name: mkl, source: bazel, configs: [mkl]}\n"
    )
    m = load_matrix(tmp_path / "matrix.yaml")
    recipe = recipe_for(m, "plain", BUILDER, ca_bundle=False)
    files = render(recipe, template_dirs(None))
    assert "git clone --depth 1 --branch v2.22.0-rc0 " in files.dockerfile
    assert "--repo_env=HERMETIC_PYTHON_VERSION=3.14" in recipe.bazel_command
    assert "--config=avx_linux" in recipe.bazel_command
    mkl = recipe_for(m, "mkl", BUILDER, ca_bundle=False)
    assert "--config=mkl" in mkl.bazel_command
    script = render(mkl, template_dirs(None)).build_script
    (call,) = [line for line in script.splitlines() if "tfbuild-preflight" in line]
    assert call.split(")")[0].split()[3:] == ["mkl", "avx_linux"], call
    for defined, status in ((False, 3), (True, 0)):
        root = tree(tmp_path / str(defined), "2.22dev", "7.7.0", mkl=defined)
        checked = subprocess.run(["sh", str(PREFLIGHT), str(root), "7.7.0", "mkl"],
                                 capture_output=True, text=True, check=False)  # fmt: skip
        assert checked.returncode == status, checked.stderr
