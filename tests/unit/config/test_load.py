"""matrix.yaml loading and validation."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import REPO

from tfbuild.config.load import load_matrix, parse_matrix
from tfbuild.config.model import Budget, Matrix
from tfbuild.config.values import NAME_RULE, parse_budget, parse_duration, parse_percent
from tfbuild.errors import MatrixError

MINIMAL = """\
variants:
  - name: stock
    source: pypi
    requirement: tensorflow-cpu==2.21.0
"""


def parse(text: str, base: Path = Path("/srv")) -> Matrix:
    return parse_matrix(textwrap.dedent(text), "matrix.yaml", base)


def problems(text: str) -> list[str]:
    with pytest.raises(MatrixError) as info:
        parse(text)
    return [str(p) for p in info.value.problems]


def test_default_matrix_has_the_promised_entries() -> None:
    m = load_matrix(REPO / "matrix.yaml")
    v = {x.name: x for x in m.variants}
    assert v["stock"].requirement == f"tensorflow-cpu=={m.defaults.tensorflow}"
    assert v["stock"].tensorflow == m.defaults.tensorflow
    assert v["stock-2.14"].requirement == "tensorflow-cpu==2.14.1"
    assert v["intel-2.14"].requirement == "intel-tensorflow==2.14.0"
    assert v["intel-avx512-2.14"].requirement == "intel-tensorflow-avx512==2.14.0"
    for name in ("stock-2.14", "intel-2.14", "intel-avx512-2.14"):
        assert v[name].constraints == ("numpy<2",)
    assert v["native"].source == "bazel" and v["native"].march == "host"
    assert v["avx2-fma"].cpu_flags == ("avx2", "fma")
    assert v["mkl-avx2"].configs == ("mkl",) and v["mkl-avx2"].cpu_flags == ("avx2", "fma")
    assert "avx512f" in v["avx512"].cpu_flags
    cuda = v["cuda-sm90"].cuda
    assert cuda is not None and "sm_90" in cuda.compute_capabilities
    assert [t.name for t in m.tunings] == [
        "default",
        "single-thread",
        "physical-cores",
        "onednn-off",
    ]
    assert (m.baseline.variant, m.baseline.tuning) == ("stock", "default")
    quick, full = m.suite.preset("quick"), m.suite.preset("full")
    assert (quick.budget, quick.resolve, quick.sequential) == (Budget(60, True, 600), 0.10, True)
    assert (full.budget, full.resolve, full.min_rounds, full.max_rounds) == (
        Budget(150.0, True, 1200),
        0.05,
        3,
        30,
    )
    # the default run's four configs and the A/A control get the 20 and 10 minutes the README
    # promises; sixteen and the A/A control 2.5 and 1 minutes a config
    runs = len(m.tunings) + 1
    assert full.budget is not None and quick.budget is not None
    assert (runs, full.budget.total(runs), quick.budget.total(runs)) == (5, 1200, 600)
    assert (full.budget.total(17), quick.budget.total(17)) == (17 * 150, 17 * 60)
    assert v["mkl-avx2"].id == "tf2.21-py3.11-mkl-avx2"
    # what moves or is of another era is opt-in, the baseline is not
    sets = {s.name: s.variants for s in m.opt_in}
    assert sets == {
        "newer": ("stock-2.22rc0", "nightly"),
        "intel-2023": ("stock-2.14", "intel-2.14", "intel-avx512-2.14"),
    }
    assert v["stock-2.22rc0"].requirement == "tensorflow-cpu==2.22.0rc0"
    assert v["nightly"].requirement == "tf-nightly" and v["nightly"].tensorflow is None
    assert all(s.about for s in m.opt_in) and m.baseline.variant not in m.left_out


def test_opt_in_sets_are_validated() -> None:
    found = problems(
        """
        variants:
          - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0}
          - {name: nightly, source: pypi, requirement: tf-nightly}
        opt_in:
          newer:
            about: the nightly
            variants: [nightly, nighty]
          base:
            about: no
            variants: [stock]
          empty: {about: nothing, variants: []}
          quiet: {variants: [nightly]}
          "bad name": {about: x, variants: [nightly]}
        """
    )
    assert found == [
        "matrix.yaml:8:25: opt_in.newer.variants[1]: unknown variant (got 'nighty'; expected "
        "one of stock, nightly); did you mean 'nightly'?",
        "matrix.yaml:11:16: opt_in.base.variants: the baseline variant 'stock' cannot be opt-in "
        "(every run compares with it); expected other variants",
        "matrix.yaml:12:37: opt_in.empty.variants: needs at least one variant",
        "matrix.yaml:13:10: opt_in.quiet: missing required key 'about'",
        "matrix.yaml:14:3: opt_in: not a valid set name (got 'bad name'; expected "
        + NAME_RULE
        + ")",
    ]


def test_ids_are_derived_from_content_or_given() -> None:
    m = parse(
        """
        variants:
          - {name: a, source: bazel, tensorflow: 2.17.1, python: "3.12"}
          - {name: b, source: pypi, requirement: intel-tensorflow==2.14.0}
          - {name: c, source: pypi, requirement: tensorflow-cpu, id: my-own-id}
          - name: d
            source: wheel
            path: w/tensorflow_cpu-2.17.1+mkl.avx2-cp310-cp310-linux_x86_64.whl
        """
    )
    assert [v.id for v in m.variants] == [
        "tf2.17-py3.12-a",
        "tf2.14-py3.11-b",
        "my-own-id",
        "tf2.17-py3.10-d",
    ]
    wheel = m.variants[3]
    assert wheel.path == Path("/srv/w/tensorflow_cpu-2.17.1+mkl.avx2-cp310-cp310-linux_x86_64.whl")
    assert wheel.tensorflow == "2.17.1" and wheel.python == "3.10"


def test_every_message_has_position_got_and_expected() -> None:
    found = problems(
        """
        variants:
          - name: mkl
            source: bazel
            configs: [mkl_threadpol]
        """
    )
    assert found == [
        "matrix.yaml:5:15: variant 'mkl'.configs[0]: unknown bazel config (got 'mkl_threadpol'; "
        "expected one of mkl, mkl_threadpool, monolithic, dynamic_kernels, nogcp, nonccl, noaws, "
        "nohdfs, avx_linux, release_cpu_linux, release_gpu_linux, cuda, cuda_clang, opt, "
        "tensorrt, cuda_nvcc, cuda_wheel, clang_local); did you mean 'mkl_threadpool'?"
    ]


@pytest.mark.parametrize(
    ("snippet", "expected"),
    [
        ("cpuflags: [avx2]", r":4:3: .*unknown key \(got 'cpuflags'.*did you mean 'cpu_flags'\?"),
        ("cpu_flags: [avx-2]", r":4:15: .*unknown CPU flag \(got 'avx-2'.*did you mean 'avx2'\?"),
        ("march: skylake-avx521", r"did you mean 'skylake-avx512'\?"),
        ("configs: [cuda]", r"'cuda' needs a cuda: block"),
        ("tensorflow: 2.20", r"got '2.20'; expected a release like 2.17.1"),
        ("tensorflow: 1.15.0", r"no build recipe for this release"),
        (
            "python: '3.13'\n  tensorflow: 2.14.1",
            r"does not build for this Python \(got '3.13'; expected 3.9 to 3.11\)",
        ),
        ("requirement: tensorflow", r"key 'requirement' applies to source: pypi only"),
        ("cuda: {compute_capabilities: [sm90]}", r"not a compute capability \(got 'sm90'"),
    ],
)
def test_bazel_variant_errors(snippet: str, expected: str) -> None:
    text = "variants:\n- name: v\n  source: bazel\n  " + snippet + "\n"
    with pytest.raises(MatrixError) as info:
        parse_matrix(text, "matrix.yaml", Path("/"))
    message = str(info.value)
    assert re.search(expected, message), message
    assert all(re.match(r"matrix\.yaml:\d+:\d+: ", str(p)) for p in info.value.problems)


@pytest.mark.parametrize(
    "bad",
    [
        'name: "x; rm -rf /"',
        'name: "$(reboot)"',
        "name: UPPER",
        'copts: ["-O3 -march=native"]',
        """copts: ["-DX='1'"]""",
        'copts: ["$(curl evil)"]',
        'copts: ["-O3;reboot"]',
        'copts: ["`id`"]',
        'configs: ["mkl; rm -rf /"]',
        'id: "../../etc"',
        'cpu_flags: ["avx2\\nRUN rm -rf /"]',
    ],
)
def test_shell_and_template_injection_refused(bad: str) -> None:
    body = (
        "variants:\n- source: bazel\n  " + bad + ("\n  name: v\n" if "name:" not in bad else "\n")
    )
    with pytest.raises(MatrixError):
        parse_matrix(body, "matrix.yaml", Path("/"))


def test_yaml11_traps_do_not_apply() -> None:
    m = parse(
        """
        variants:
          - {name: v, source: bazel, tensorflow: 2.17.1, python: 3.10}
        tunings:
          - name: off
            env: {TF_ENABLE_ONEDNN_OPTS: 0, KMP_AFFINITY: "granularity=fine,compact,1,0"}
        """
    )
    assert m.variants[0].python == "3.10"  # not the float 3.1
    assert m.tunings[0].name == "off"  # not the boolean false
    assert dict(m.tunings[0].env) == {
        "TF_ENABLE_ONEDNN_OPTS": "0",
        "KMP_AFFINITY": "granularity=fine,compact,1,0",
    }


def test_tuning_values() -> None:
    m = parse(
        MINIMAL
        + """\
tunings:
  - {name: a, intra_op: physical, inter_op: 2, env: {OMP_NUM_THREADS: logical}}
"""
    )
    t = m.tunings[0]
    assert (t.intra_op, t.inter_op, t.env) == ("physical", 2, (("OMP_NUM_THREADS", "logical"),))
    found = problems(
        MINIMAL
        + """\
tunings:
  - {name: a, intra_op: 0, env: {OMP_NUM_THREAD: 1, TF_ENABLE_ONEDNN_OPTS: "on", "A B": 1}}
"""
    )
    joined = "\n".join(found)
    assert "intra_op: not a thread count (got '0'" in joined
    assert "did you mean 'OMP_NUM_THREADS'?" in joined
    assert "TF_ENABLE_ONEDNN_OPTS: not accepted (got 'on'; expected 0 or 1)" in joined
    assert "not an environment variable name (got 'A B')" in joined


def test_xla_tunings() -> None:
    m = parse(MINIMAL + "tunings:\n  - {name: jit, xla: jit}\n  - {name: auto, xla: auto}\n")
    assert [(t.xla, t.definition()["xla"]) for t in m.tunings] == [("jit", "jit"), ("auto", "auto")]
    assert "xla" not in parse(MINIMAL).tunings[0].definition()
    found = problems(
        MINIMAL
        + "tunings:\n  - {name: a, xla: on}\n"
        + "  - {name: b, xla: auto, env: {TF_XLA_FLAGS: --tf_xla_auto_jit=1}}\n"
    )
    assert found == [
        "matrix.yaml:6:20: tuning 'a'.xla: unknown XLA mode (got 'on'; expected one of jit, auto)",
        "matrix.yaml:7:20: tuning 'b'.xla: auto sets TF_XLA_FLAGS, which env sets too; expected "
        "one of them",
    ]


def test_duplicates_and_baseline() -> None:
    found = problems(
        """
        variants:
          - {name: a, source: pypi, requirement: tensorflow-cpu}
          - {name: a, source: pypi, requirement: tensorflow-cpu==2.14.1}
        tunings:
          - {name: t}
          - {name: t}
        baseline: {variant: b, tuning: t}
        """
    )
    joined = "\n".join(found)
    assert "matrix.yaml:4:5: variant name 'a' is used twice (first on line 3)" in joined
    assert "tuning name 't' is used twice (first on line 6)" in joined
    assert "baseline.variant: unknown variant (got 'b'; expected one of a, a)" in joined


def test_duplicate_keys_and_merge_keys() -> None:
    joined = "\n".join(
        problems(
            """
            variants:
              - name: a
                name: b
                source: pypi
                requirement: x
              - <<: {name: c}
                source: pypi
            """
        )
    )
    assert "duplicate key 'name' (first given on line 3)" in joined
    assert "merge keys (<<) are not supported" in joined


def test_pin_and_tensorflow_must_agree() -> None:
    joined = "\n".join(
        problems(
            """
            variants:
              - {name: a, source: pypi, requirement: tensorflow-cpu==2.14.1, tensorflow: 2.15.0}
            """
        )
    )
    assert (
        "disagrees with the requirement's pin (got '2.15.0'; the requirement pins '2.14.1')"
        in joined
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "matrix.yaml:1:1: the file is empty"),
        ("variants: [\n", "matrix.yaml:2:1: not valid YAML"),
        ("- a\n- b\n", "matrix.yaml:1:1: : expected a mapping"),
        ("variants: {}\n", "variants: expected a list of entries"),
        ("variantz: []\n", "did you mean 'variants'?"),
        ("variants:\n  - name: a\n    source: pypi\n", "source: pypi needs a 'requirement' key"),
        ("variants:\n  - name: a\n    source: wheel\n    path: x.zip\n", "not a wheel file name"),
        ("variants:\n  - a\n", "variants[0]: expected a mapping"),
        (
            "variants:\n  - {name: a, source: pypi, requirement: 'x @ https://e/x.whl'}\n",
            "not valid",
        ),
        ("variants:\n\t- a\n", "matrix.yaml:2:1: not valid YAML"),
    ],
)
def test_structural_errors(text: str, expected: str) -> None:
    assert expected in "\n".join(problems(text))


def test_defaults_are_validated() -> None:
    joined = "\n".join(
        problems(
            MINIMAL
            + """\
defaults:
  base_images: {build: "Ubuntu:22.04"}
  bazel:
    cache: "my cache"
    remote_cache: "https://user:secret@cache.example.com"
    flags: ["--config=x; y"]
    disk_cache: yes
    network: hots
  pip: {index_url: "ftp://x", ca_bundle: relative.pem}
"""
        )
    )
    for expected in (
        "defaults.base_images.build: not valid (got 'Ubuntu:22.04'",
        "defaults.bazel.cache: not valid (got 'my cache'",
        "defaults.bazel.remote_cache: not valid (got 'https://user:secret@cache.example.com'",
        "defaults.bazel.flags[0]: not valid",
        "defaults.bazel.disk_cache: not a boolean (got 'yes'; expected true or false)",
        "defaults.bazel.network: unknown network (got 'hots'; expected one of bridge, host)",
        "defaults.pip.index_url: not valid (got 'ftp://x'",
        "defaults.pip.ca_bundle: not valid (got 'relative.pem'",
    ):
        assert expected in joined


def test_build_network() -> None:
    assert parse(MINIMAL).defaults.bazel.network == "bridge"
    local = parse(
        MINIMAL + "defaults:\n  bazel: {remote_cache: http://127.0.0.1:9092, network: host}\n"
    )
    assert local.defaults.bazel.network == "host"
    assert local.defaults.bazel.remote_cache == "http://127.0.0.1:9092"


def test_suite_presets() -> None:
    m = parse(
        MINIMAL
        + """\
suite:
  benchmarks: [matmul-fed, matmul-pinned]
  min_rounds: 4
  budget: 1h30m
  resolve: 3%
  presets:
    quick: {budget: 90s}
    wide: {budget: "3m per config, at least 1h"}
    fixed: {benchmarks: [matmul-fed], rounds: 12}
"""
    )
    suite = m.suite.preset(None)
    assert (suite.min_rounds, suite.budget, suite.resolve, suite.rounds) == (
        4,
        Budget(5400),
        0.03,
        None,
    )
    assert suite.budget is not None and suite.budget.total(16) == 5400  # in all: any configs
    assert m.suite.preset("quick").benchmarks == ("matmul-fed", "matmul-pinned")
    assert m.suite.preset("quick").budget == Budget(90)
    wide = m.suite.preset("wide").budget
    assert wide == Budget(180, per_config=True, at_least=3600)
    assert (wide.total(16), wide.total(24)) == (3600, 24 * 180)
    fixed = m.suite.preset("fixed")
    assert fixed.rounds == 12 and not fixed.sequential and fixed.benchmarks == ("matmul-fed",)


def test_suite_work_is_fixed_by_the_suite_version() -> None:
    """Samples and warm-up of matrix files written for suite v1 are refused with the reason."""
    with pytest.raises(MatrixError) as caught:
        parse(MINIMAL + "suite:\n  samples: 5\n  warmup: 3\n  presets:\n    quick: {samples: 3}\n")
    text = str(caught.value)
    assert (
        "suite.samples: samples and iterations are fixed per benchmark by the suite since" in text
    )
    assert "suite.warmup: warm-up is fixed by the suite since version 2" in text
    assert "suite.presets.quick.samples:" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "budget: soon",
            "suite.budget: not a budget (got 'soon'; expected a budget like 20m or 1h30m in all, "
            "or 2m30s per config, at least 20m)",
        ),
        ("budget: 4m per run", "suite.budget: not a budget (got '4m per run'; expected"),
        ("resolve: 120%", "suite.resolve: not a percentage (got '120%'; expected a percentage"),
        (
            "min_rounds: 50",
            "suite.min_rounds: larger than max_rounds (got 50; expected at most 30)",
        ),
        ("rounds: 0", "suite.rounds: out of range (got '0'; expected a whole number from 1"),
    ],
)
def test_bad_suite_values(text: str, expected: str) -> None:
    with pytest.raises(MatrixError, match=re.escape(expected)):
        parse(MINIMAL + f"suite:\n  {text}\n")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90),
        ("15m", 900),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("600", 600),
        ("0m", None),
        ("", None),
        ("m", None),
        ("-5m", None),
        ("5 m", None),
    ],
)
def test_durations(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("20m", (1200, False, 0)),
        ("4m per config", (240, True, 0)),
        ("4M Per Config", (240, True, 0)),
        ("90s/config", (90, True, 0)),
        ("2m a config", (120, True, 0)),
        ("2m30s per config, at least 20m", (150, True, 1200)),
        ("1m per config at least 10m", (60, True, 600)),
        ("per config", None),
        ("0m per config", None),
        ("4m per host", None),
        ("4m per config, at least soon", None),
        ("20m, at least 30m", None),
    ],
)
def test_budgets(text: str, budget: tuple[float, bool, float] | None) -> None:
    assert parse_budget(text) == budget


def test_percentages() -> None:
    assert parse_percent("5%") == 0.05 and parse_percent("0.05") == 0.05
    assert parse_percent("0%") is None and parse_percent("100%") is None
    assert parse_percent("nan") is None and parse_percent("five") is None


def test_unreadable_and_non_utf8(tmp_path: Path) -> None:
    with pytest.raises(MatrixError, match=r"missing\.yaml:1:1: cannot read"):
        load_matrix(tmp_path / "missing.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes(b"variants:\n  - name: caf\xe9\n")
    with pytest.raises(MatrixError, match=r"latin1\.yaml:2:1: not UTF-8"):
        load_matrix(bad)


def test_matrix_refuses_a_python_tensorflow_has_no_wheels_for(tmp_path: Path) -> None:
    """TensorFlow 2.21 dropped Python 3.9: no runtime can exist, the matrix is refused with
    the line and the accepted range."""
    path = tmp_path / "matrix.yaml"
    path.write_text(
        "variants:\n  - {name: old, source: bazel, tensorflow: 2.21.0, python: '3.9'}\n"
    )
    proc = run_tfbuild("matrix", "--matrix", str(path))
    assert proc.returncode == 2
    assert "matrix.yaml:2" in proc.stderr
    assert "does not build for this Python (got '3.9'; expected 3.10 to 3.13)" in proc.stderr


def test_base_images_come_from_a_registry_image_pinned_by_digest() -> None:
    """`from` names the image base images are pulled from: only by digest (a tag moves, and a
    build would not say which Debian it started from); null leaves debootstrap to make them."""
    digest = "sha256:" + "0a" * 32
    pinned = parse(
        MINIMAL + f"defaults:\n  base_images: {{from: 'debian:bookworm-slim@{digest}'}}\n"
    )
    assert pinned.defaults.base_images.source == f"debian:bookworm-slim@{digest}"
    assert parse(MINIMAL + "defaults:\n  base_images: {from: null}\n").defaults.base_images.source \
        is None  # fmt: skip
    default = load_matrix(REPO / "matrix.yaml").defaults.base_images
    assert default.source is not None and default.source.startswith("docker.io/library/debian:")
    (problem,) = problems(MINIMAL + "defaults:\n  base_images: {from: 'debian:bookworm-slim'}\n")
    assert problem.startswith("matrix.yaml:6:23: defaults.base_images.from: not pinned by digest")
    assert "(got 'debian:bookworm-slim'; expected an image reference with its digest" in problem


FOLLOWS = """\
defaults: {tensorflow: "2.21.0"}
variants:
  - {name: stock, source: pypi, requirement: "tensorflow-cpu[and-cuda]", tensorflow: defaults}
  - {name: src, source: bazel}
"""


def test_a_prebuilt_baseline_follows_the_release_the_source_builds_use() -> None:
    """`tensorflow: defaults` pins an unpinned requirement to defaults.tensorflow, and
    --tensorflow moves it with the source builds, so the baseline never drifts from them; the
    default matrix's baseline does this."""
    m = parse(FOLLOWS)
    stock, _ = m.variants
    assert stock.requirement == "tensorflow-cpu[and-cuda]==2.21.0" and stock.tensorflow == "2.21.0"
    moved = parse_matrix(FOLLOWS, "matrix.yaml", Path("/srv"), "2.22.0rc0")
    assert [v.tensorflow for v in moved.variants] == ["2.22.0rc0", "2.22.0rc0"]
    assert moved.variants[0].requirement == "tensorflow-cpu[and-cuda]==2.22.0rc0"
    default = load_matrix(REPO / "matrix.yaml")
    baseline = next(v for v in default.variants if v.name == default.baseline.variant)
    assert baseline.requirement == f"tensorflow-cpu=={default.defaults.tensorflow}"
    (problem,) = problems(FOLLOWS.replace('"tensorflow-cpu[and-cuda]"', "tensorflow-cpu==2.20.0"))
    assert "disagrees with the requirement's pin (got '2.21.0'; the requirement pins '2.20.0')" \
        in problem  # fmt: skip


DROPPED = """\
defaults: {tensorflow: "2.21.0"}
variants:
  - {name: mkl, source: bazel, configs: [mkl]}
  - {name: mkl-defaults, source: bazel, configs: [mkl], tensorflow: defaults}
  - {name: mkl-pinned, source: bazel, configs: [mkl], tensorflow: 2.22.0rc0}
  - {name: plain, source: bazel, configs: [monolithic]}
"""


def test_a_new_release_leaves_a_variant_whose_config_it_dropped_on_the_declared_one() -> None:
    """--tensorflow 2.22 (the nightly's new release) moves the source builds, but one asking
    for --config=mkl, which 2.22 dropped, keeps defaults.tensorflow and a note says so; a
    variant pinned to 2.22 itself is left to the plan's refusal, and so is one whose declared
    release lacks the config too."""
    moved = parse_matrix(DROPPED, "matrix.yaml", Path("/srv"), "2.22.0rc0")
    got = {v.name: v.tensorflow for v in moved.variants}
    assert got == {"mkl": "2.21.0", "mkl-defaults": "2.21.0", "mkl-pinned": "2.22.0rc0",
                   "plain": "2.22.0rc0"}  # fmt: skip
    assert [v.id for v in moved.variants][:2] == ["tf2.21-py3.11-mkl", "tf2.21-py3.11-mkl-defaults"]
    assert moved.notes == {
        name: f"variant {name!r}: TensorFlow 2.22.0rc0 (--tensorflow) has no --config=mkl (its "
        ".bazelrc defines it up to 2.21): it builds 2.21.0, the matrix's defaults.tensorflow"
        for name in ("mkl", "mkl-defaults")
    }
    assert parse(DROPPED).notes == {}
    later = DROPPED.replace('"2.21.0"', '"2.22.0rc0"')
    stays = parse_matrix(later, "matrix.yaml", Path("/srv"), "2.22.0rc0")
    assert {v.tensorflow for v in stays.variants} == {"2.22.0rc0"} and stays.notes == {}


def test_forms_are_as_given_unless_listed_and_each_is_checked() -> None:
    """`forms:` lists the model forms a SavedModel workload is measured in: as-given first
    whatever the order written, each once; a form that is unknown, listed twice, or a list
    without as-given (what the others are checked against) is refused at its line."""
    variants = "variants:\n  - {name: v, source: pypi, requirement: tensorflow-cpu==2.21.0}\n"
    assert parse(variants).forms == ("as-given",)
    assert parse(variants + "forms: [litert, as-given, optimized]\n").forms == (
        "as-given", "litert", "optimized"
    )  # fmt: skip
    for forms, expected in [
        ("[as-given, lite]", r"matrix\.yaml:3:19: forms\[1\]: unknown model form \(got 'lite';"),
        ("[as-given, litert, litert]", r"matrix\.yaml:3:27: forms\[2\]: litert is listed twice"),
        ("[optimized]", r"matrix\.yaml:3:8: forms: as-given is missing"),
        ("litert", r"matrix\.yaml:3:8: forms: expected a list of model forms"),
    ]:
        with pytest.raises(MatrixError, match=expected):
            parse(variants + f"forms: {forms}\n")
