"""Planning: selection patterns, can-it-run verdicts and tunings resolved per host."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.config.load import load_matrix
from tfbuild.config.model import Tuning, Variant
from tfbuild.errors import SelectionError
from tfbuild.machine.detect import profile_from_cpuinfo
from tfbuild.machine.profile import Gpu, GpuInfo, HostProfile
from tfbuild.plan.make import make_plan
from tfbuild.plan.select import select

CPUINFO = FIXTURES / "cpuinfo"
MATRIX = load_matrix(REPO / "matrix.yaml")
EVERY_SET = [s.name for s in MATRIX.opt_in]


def fleet(name: str) -> HostProfile:
    return profile_from_cpuinfo(CPUINFO / f"{name}.cpuinfo")


def verdicts(profile: HostProfile) -> dict[str, tuple[bool | None, str]]:
    plan = make_plan(MATRIX, profile, opt_in=EVERY_SET)
    return {pv.variant.name: (pv.verdict.runs, pv.verdict.summary) for pv in plan.variants}


def test_haswell_cannot_run_avx512_builds() -> None:
    v = verdicts(fleet("haswell-xeon-e5-2680v3"))
    assert v["avx512"][0] is False
    assert (
        "needs AVX512F, AVX512CD, AVX512BW, AVX512DQ, AVX512VL; this CPU has up to AVX2"
        in v["avx512"][1]
    )
    assert v["intel-avx512-2.14"][0] is False
    assert v["avx2-fma"][0] is True and v["mkl-avx2"][0] is True and v["stock"][0] is True
    # native resolves to this host's own name, so it always runs on the host it was planned for
    assert v["native"][0] is True


def test_nehalem_cannot_run_stock_tensorflow() -> None:
    v = verdicts(fleet("nehalem-xeon-x3430"))
    assert v["stock"][0] is False and "needs AVX; this CPU has up to SSE4.2" in v["stock"][1]
    assert v["avx2-fma"][0] is False
    assert v["native"][0] is True


def test_saved_cpuinfo_has_no_gpu_information() -> None:
    v = verdicts(fleet("zen4-epyc-9654"))
    assert v["cuda-sm90"][0] is None
    assert "no GPU information" in v["cuda-sm90"][1]
    assert v["avx512"][0] is True


def test_native_march_resolves_per_host() -> None:
    plan = make_plan(MATRIX, fleet("skylake-sp-xeon-gold-6132"), only=["native"])
    assert plan.variants[0].march == "skylake-avx512"
    assert plan.variants[0].compiler_flags == ("-march=skylake-avx512",)
    plan = make_plan(MATRIX, fleet("zen3-ryzen9-5950x"), only=["native"])
    assert plan.variants[0].compiler_flags == ("-march=znver3",)


def with_gpus(profile: HostProfile, *caps: str | None) -> HostProfile:
    """GPU lists are made up: no GPU exists on the machines tfbuild is tested on."""
    gpus = GpuInfo(
        nvidia_smi="/usr/bin/nvidia-smi",
        devices=tuple(Gpu(i, f"GPU {cap}", cap, "550.54.15", 81920) for i, cap in enumerate(caps)),
    )
    return dataclasses.replace(profile, gpus=gpus)


@pytest.mark.parametrize(
    ("caps", "runs"),
    [
        (("9.0",), True),  # H100/H200: sm_90 SASS
        (("10.0",), True),  # newer GPU: compute_90 PTX JIT-compiles
        (("8.9",), False),  # L4: older than every binary in the wheel
        ((), False),
        ((None,), None),  # driver cannot report compute capability
    ],
)
def test_cuda_verdicts(caps: tuple[str | None, ...], runs: bool | None) -> None:
    """Made-up GPU lists (no GPU here) against the cuda-sm90 variant (sm_90, compute_90)."""
    profile = with_gpus(fleet("zen4-epyc-9654"), *caps)
    assert verdicts(profile)["cuda-sm90"][0] is runs


def test_python_outside_release_range() -> None:
    m = load_matrix(REPO / "matrix.yaml")
    variant = dataclasses.replace(m.variant("stock-2.14"), python="3.12")
    matrix = dataclasses.replace(m, variants=(variant,), baseline=m.baseline, opt_in=())
    plan = make_plan(matrix, fleet("haswell-xeon-e5-2680v3"))
    assert plan.variants[0].verdict.runs is False
    assert "TensorFlow 2.14 has no wheels for Python 3.12 (supports 3.9 to 3.11)" in (
        plan.variants[0].verdict.summary
    )


def test_missing_local_wheel(tmp_path: Path) -> None:
    text = (
        "variants:\n  - name: w\n    source: wheel\n"
        "    path: gone/tensorflow-2.17.1-cp311-cp311-linux_x86_64.whl\n"
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    plan = make_plan(load_matrix(path), fleet("haswell-xeon-e5-2680v3"))
    verdict = plan.variants[0].verdict
    assert verdict.runs is False and "wheel file not found" in verdict.summary
    assert "`tfbuild inspect`" in verdict.summary


def names(picked: list[tuple[Variant, Tuning, str]]) -> list[str]:
    return [f"{v.name}:{t.name}" for v, t, _ in picked]


def test_selection_patterns() -> None:
    # the default run leaves the opt-in sets out
    default = {v.name for v, _, _ in select(MATRIX)}
    assert default == {v.name for v in MATRIX.variants} - MATRIX.left_out
    assert {"stock-2.14", "intel-2.14", "nightly", "stock-2.22rc0"} <= MATRIX.left_out
    assert "stock" in default and MATRIX.baseline.variant == "stock"
    assert len(select(MATRIX, opt_in=EVERY_SET)) == len(MATRIX.variants) * len(MATRIX.tunings)
    # a set adds its variants; a pattern naming an opt-in variant adds it alone
    assert {v.name for v, _, _ in select(MATRIX, opt_in=["intel-2023"], only=["intel-*"])} == {
        "intel-2.14",
        "intel-avx512-2.14",
    }
    assert names(select(MATRIX, only=["intel-2.14:single-*"])) == ["intel-2.14:single-thread"]
    with pytest.raises(SelectionError, match=r"opt-in variants come with --with SET \(newer: "):
        select(MATRIX, only=["intel-*"])  # a wildcard does not reach into an opt-in set
    picked = select(
        MATRIX, only=["stock*"], skip=["*:onednn-off", "stock-2.14"], opt_in=["intel-2023"]
    )
    assert names(picked) == ["stock:default", "stock:single-thread", "stock:physical-cores"]
    # ids match as well as names
    assert names(select(MATRIX, only=["tf2.21-py3.11-mkl-avx2:default"])) == ["mkl-avx2:default"]
    with pytest.raises(SelectionError, match=r"selects nothing in .*; did you mean 'mkl-avx2'"):
        select(MATRIX, only=["mkl-avx3"])
    with pytest.raises(SelectionError, match="; did you mean 'stock:default'"):
        select(MATRIX, only=["stock:defualt"])
    with pytest.raises(SelectionError) as nothing_close:  # a pattern: no guess
        select(MATRIX, only=["zz*"])
    assert "did you mean" not in str(nothing_close.value)
    with pytest.raises(SelectionError, match=r"unknown opt-in set 'intel-2024'.*intel-2023"):
        select(MATRIX, opt_in=["intel-2024"])


def test_unknown_variant_suggests() -> None:
    with pytest.raises(SelectionError, match="did you mean 'mkl-avx2'"):
        MATRIX.variant("mkl-avx3")


def test_tunings_resolve_per_host() -> None:
    sapphire = make_plan(MATRIX, fleet("sapphirerapids-xeon-platinum-8488c"))
    tunings = {t.name: t for t in sapphire.tunings}
    assert tunings["physical-cores"].intra_op == 8
    assert dict(tunings["physical-cores"].env)["OMP_NUM_THREADS"] == "8"
    assert tunings["single-thread"].intra_op == 1
    assert tunings["default"].intra_op is None
    assert dict(tunings["onednn-off"].env) == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    xla = (Tuning(name="jit", xla="jit"), Tuning(name="auto", xla="auto"))
    jit, auto = make_plan(dataclasses.replace(MATRIX, tunings=xla), fleet("zen4-epyc-9654")).tunings
    assert (jit.xla, jit.env) == ("jit", ())  # the payload compiles its functions itself
    assert dict(auto.env) == {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"}


def test_plan_json_lists_every_config() -> None:
    plan = make_plan(
        MATRIX, fleet("haswell-xeon-e5-2680v3"), only=["stock*", "avx512"], opt_in=["intel-2023"]
    )
    doc = plan.to_json()
    assert doc["schema"] == "tfbuild.plan/1"
    assert [c["key"] for c in doc["configs"]][:2] == ["stock:default", "stock:single-thread"]
    assert len(doc["configs"]) == 3 * 4
    assert {c["form"] for c in doc["configs"]} == {"as-given"}
    forms = dataclasses.replace(MATRIX, forms=("as-given", "litert"))
    keyed = make_plan(forms, fleet("haswell-xeon-e5-2680v3"), only=["stock:default"]).to_json()
    assert [(c["key"], c["form"]) for c in keyed["configs"]] == [
        ("stock:default", "as-given"),
        ("stock:default:litert", "litert"),
    ]
    avx512 = next(v for v in doc["variants"] if v["name"] == "avx512")
    assert avx512["runs_here"] is False and "avx512f" in avx512["required_cpu_flags"]


NEXT = """\
defaults: {tensorflow: "2.22.0rc0"}
variants:
  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.22.0rc0}
  - {name: mkl-avx2, source: bazel, configs: [mkl], cpu_flags: [avx2, fma]}
  - {name: mkl-2.21, source: bazel, tensorflow: 2.21.0, configs: [mkl], cpu_flags: [avx2, fma]}
  - {name: avx2-fma, source: bazel, cpu_flags: [avx2, fma]}
  - {name: py314, source: bazel, python: "3.14"}
  - {name: clang-2.17, source: bazel, tensorflow: 2.17.1, configs: [clang_local]}
  - {name: trt, source: bazel, tensorflow: 2.21.0, configs: [tensorrt]}
  - name: blackwell
    source: bazel
    cuda: {compute_capabilities: [sm_90, sm_120]}
"""


def test_each_line_of_a_2_22_plan_says_what_will_happen(tmp_path: Path) -> None:
    """A 2.22.0rc0 matrix plans: a config the release's files show it lacks is refused for
    that variant alone (clang_local before 2.21; tensorrt after 2.17); mkl, which master lost
    after 2.21 but 2.22's own .bazelrc was not read for, is a warning that the build's preflight
    decides (it reads the tree before bazel starts), not a refusal; Blackwell
    capabilities are refused with the path TensorFlow builds them by, F16C joins a variant
    naming AVX2 and FMA, Python 3.14 is 2.22's, and the facts not read from a tag say so."""
    (tmp_path / "matrix.yaml").write_text(NEXT)
    plan = make_plan(load_matrix(tmp_path / "matrix.yaml"), fleet("skylake-sp-xeon-gold-6132"))
    got = {pv.variant.name: pv for pv in plan.variants}
    runs = {name: pv.verdict.runs for name, pv in got.items()}
    said = {name: "; ".join(pv.verdict.reasons) for name, pv in got.items()}
    assert runs == {"stock": True, "mkl-avx2": True, "mkl-2.21": True, "avx2-fma": True,
                    "py314": True, "clang-2.17": False, "trt": False,
                    "blackwell": False}  # fmt: skip
    assert (
        "--config=mkl is probably gone from TensorFlow 2.22 (master lost it after 2.21; this "
        "release's .bazelrc is not read here): the build's preflight reads the tree and stops "
        "before bazel if it is" in said["mkl-avx2"]
    )
    assert "--config=mkl" not in said["mkl-2.21"]
    assert "has no --config=clang_local (its .bazelrc defines it from 2.21)" in said["clang-2.17"]
    assert "has no --config=tensorrt (its .bazelrc defines it up to 2.17)" in said["trt"]
    assert said["blackwell"].startswith(
        "variant 'blackwell': sm_120 (Blackwell) is built by TensorFlow with nvcc and CUDA 13"
    )
    assert "ask for compute_90 instead" in said["blackwell"]
    assert got["avx2-fma"].compiler_flags == ("-mavx2", "-mfma", "-mf16c")
    assert "F16C added: TensorFlow 2.22's own wheels have it" in said["avx2-fma"]
    assert "2.22's build facts are not confirmed from a release tag" in said["py314"]
    assert got["py314"].variant.python == "3.14" and "no wheels for Python" not in said["py314"]


def test_tfbuild_matrix_prints_the_same_for_each_line(tmp_path: Path) -> None:
    """The same plan as `tfbuild matrix --format json` gives it, for a saved Skylake profile."""
    import json

    (tmp_path / "matrix.yaml").write_text(NEXT)
    profile = tmp_path / "skylake.json"
    made = run_tfbuild("detect", "--cpuinfo", str(CPUINFO / "skylake-sp-xeon-gold-6132.cpuinfo"),
                       "--output", str(profile))  # fmt: skip
    assert made.returncode == 0, made.stderr
    proc = run_tfbuild("matrix", "--matrix", str(tmp_path / "matrix.yaml"), "--host",
                       str(profile), "--format", "json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = {v["name"]: v for v in json.loads(proc.stdout)["variants"]}
    assert lines["mkl-avx2"]["runs_here"] is True
    assert any(r.startswith("--config=mkl is probably gone from TensorFlow 2.22")
               for r in lines["mkl-avx2"]["reasons"])  # fmt: skip
    assert lines["trt"]["runs_here"] is False
    assert (
        "has no --config=tensorrt (its .bazelrc defines it up to 2.17)"
        in (lines["trt"]["reasons"][0])
    )
    assert lines["blackwell"]["runs_here"] is False
    assert lines["blackwell"]["reasons"][0].startswith("variant 'blackwell': sm_120 (Blackwell)")
    assert lines["avx2-fma"]["compiler_flags"] == ["-mavx2", "-mfma", "-mf16c"]
    assert "f16c" in lines["avx2-fma"]["required_cpu_flags"]
    assert lines["py314"]["python"] == "3.14" and lines["py314"]["runs_here"] is True
    assert lines["stock"]["tensorflow"] == "2.22.0rc0" and lines["stock"]["runs_here"] is True


RETIRED = """\
defaults:
  tensorflow: "2.12.1"
  python: "3.11"
variants:
  - {name: stock, source: pypi, requirement: "tensorflow-cpu==2.12.1"}
  - {name: avx2-fma, source: bazel, cpu_flags: [avx2, fma]}
  - {name: next, source: bazel, tensorflow: "2.13.1", cpu_flags: [avx2, fma]}
tunings:
  - name: default
"""


def test_a_retired_era_is_refused_at_plan_time_with_why(tmp_path: Path) -> None:
    """TensorFlow 2.12's toolchain (gcc-9) is not in the bookworm base: its source variant is
    refused in the plan, saying why and what to do instead; 2.13 (clang-16) plans, and the
    2.12 wheel from the index runs. `tfbuild build` refuses it before any estimate or build."""
    (tmp_path / "matrix.yaml").write_text(RETIRED)
    plan = make_plan(load_matrix(tmp_path / "matrix.yaml"), fleet("skylake-sp-xeon-gold-6132"))
    verdicts = {pv.variant.name: pv.verdict for pv in plan.variants}
    assert verdicts["avx2-fma"].runs is False
    (reason,) = verdicts["avx2-fma"].reasons
    assert reason.startswith("variant 'avx2-fma': TensorFlow 2.12 is retired here: its toolchain")
    assert "not in Debian 12 (bookworm)" in reason
    assert reason.endswith("build TensorFlow 2.13 or newer, or use the TensorFlow 2.12 wheel "
                           "from the package index")  # fmt: skip
    assert verdicts["next"].runs is True and verdicts["stock"].runs is True
    proc = run_tfbuild("build", "--matrix", str(tmp_path / "matrix.yaml"), "--variant",
                       "avx2-fma", "--store", str(tmp_path / "wheels"))  # fmt: skip
    assert proc.returncode == 64, proc.stderr
    assert proc.stderr.strip() == f"tfbuild: {reason}" and "about" not in proc.stderr


def test_configs_are_builds_times_tunings_times_forms(tmp_path: Path) -> None:
    """Each selected (variant, tuning) in each model form; as-given keeps the key a session
    without forms wrote (VARIANT:TUNING), another form is VARIANT:TUNING:FORM."""
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "variants:\n  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
        "tunings:\n  - {name: default}\n  - {name: single-thread, intra_op: 1}\n"
        "forms: [as-given, litert]\n"
    )
    plan = make_plan(load_matrix(path), fleet("haswell-xeon-e5-2680v3"))
    assert [(c.key, c.form) for c in plan.configs] == [
        ("stock:default", "as-given"),
        ("stock:default:litert", "litert"),
        ("stock:single-thread", "as-given"),
        ("stock:single-thread:litert", "litert"),
    ]
