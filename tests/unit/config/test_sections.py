"""The sections of matrix.yaml besides the variants, each read on its own from its YAML node:
defaults keep what the file leaves out as built in and remember the line of every key the file
sets; a tuning's threads and environment are checked by what each variable accepts; the suite's
settings carry into its presets (quick always a sequential one on a small budget) and what the
suite fixes is refused; the baseline falls back to the first variant and tuning; an opt-in set
needs an about and cannot hold the baseline; a name used twice points at its first use."""

from __future__ import annotations

from pathlib import Path

import yaml
from support.yamltext import reading, said

from tfbuild.config.model import (
    DEFAULT_BUDGET,
    QUICK_BUDGET,
    Baseline,
    Budget,
    OptIn,
    Tuning,
    Variant,
    Where,
)
from tfbuild.config.sections import (
    read_baseline,
    read_defaults,
    read_opt_in,
    read_suite,
    read_tuning,
    unique,
)
from tfbuild.config.suite import BENCHMARKS
from tfbuild.config.yamlread import Ctx

VARIANTS = [
    Variant("stock", "s", "pypi", "3.11", "2.21.0"),
    Variant("nightly", "n", "pypi", "3.11", None),
]
TUNINGS = [Tuning("default"), Tuning("single-thread")]
BASELINE = Baseline("stock", "default")


def test_defaults_keep_what_the_file_leaves_out_and_remember_where_each_key_is_set() -> None:
    ctx, node = reading("python: '3.12'\nbazel:\n  cache: /srv/cache\n  disk_cache: false\n")
    given = read_defaults(ctx, node)
    built_in = read_defaults(Ctx("m.yaml", Path("/srv")), None)
    assert said(ctx) == []
    assert (given.python, given.bazel.cache, given.bazel.disk_cache) == (
        "3.12",
        "/srv/cache",
        False,
    )
    assert (given.tensorflow, given.base_images, given.pip) == (
        built_in.tensorflow,
        built_in.base_images,
        built_in.pip,
    )
    assert (given.bazel.network, given.bazel.flags) == (built_in.bazel.network, ())
    assert given.set_at == {
        "defaults.python": Where("m.yaml", 1),
        "defaults.bazel": Where("m.yaml", 2),
        "defaults.bazel.cache": Where("m.yaml", 3),
        "defaults.bazel.disk_cache": Where("m.yaml", 4),
    }
    assert built_in.set_at == {}


def test_a_default_release_without_a_build_recipe_is_refused_with_the_eras_known() -> None:
    ctx, node = reading("tensorflow: 1.15.0\n")
    read_defaults(ctx, node)
    (problem,) = said(ctx)
    assert problem.startswith(
        "m.yaml:1:13: defaults.tensorflow: no build recipe for this release (got '1.15.0'; "
        "expected a release in full, like "
    ), problem


def test_the_image_base_images_are_made_from_must_be_pinned_by_digest() -> None:
    ctx, node = reading("base_images:\n  from: debian:bookworm\n")
    read_defaults(ctx, node)
    (problem,) = said(ctx)
    assert problem.startswith(
        "m.yaml:2:9: defaults.base_images.from: not pinned by digest (got 'debian:bookworm'; "
        "expected an image reference with its digest, like "
    ), problem
    pinned = "docker.io/library/debian:bookworm-slim@sha256:" + "0a" * 32
    ctx, node = reading(f"base_images:\n  from: {pinned}\n  runtime: debian:bookworm\n")
    images = read_defaults(ctx, node).base_images
    assert said(ctx) == []
    assert (images.source, images.runtime) == (pinned, "debian:bookworm")


def test_pip_settings_take_inherit_urls_none_and_a_single_host_as_a_list() -> None:
    ctx, node = reading(
        "pip:\n"
        "  index_url: inherit\n"
        "  extra_index_urls: [https://a.example/simple, 'file:///srv/wheels']\n"
        "  ca_bundle: none\n"
        "  trusted_hosts: a.example:8443\n"
    )
    pip = read_defaults(ctx, node).pip
    assert said(ctx) == []
    assert (pip.index_url, pip.extra_index_urls, pip.ca_bundle, pip.trusted_hosts) == (
        "inherit",
        ("https://a.example/simple", "file:///srv/wheels"),
        "none",
        ("a.example:8443",),
    )
    ctx, node = reading("pip: {extra_index_urls: inherit, ca_bundle: /etc/ssl/ca.pem}\n")
    pip = read_defaults(ctx, node).pip
    assert (pip.extra_index_urls, pip.ca_bundle) == ("inherit", "/etc/ssl/ca.pem")


def test_a_tuning_reads_thread_words_counts_and_its_environment_in_order() -> None:
    ctx, node = reading(
        "\n- name: tuned\n  intra_op: physical\n  inter_op: 2\n"
        "  env: {KMP_BLOCKTIME: infinite, OMP_NUM_THREADS: logical, MY_OWN_VAR: 'a b'}\n"
    )
    assert isinstance(node, yaml.SequenceNode)
    tuning = read_tuning(ctx, node.value[0], "tunings[0]")
    assert said(ctx) == []
    assert tuning == Tuning(
        "tuned",
        intra_op="physical",
        inter_op=2,
        env=(("KMP_BLOCKTIME", "infinite"), ("OMP_NUM_THREADS", "logical"), ("MY_OWN_VAR", "a b")),
    )
    assert tuning.where == Where("m.yaml", 2)


def test_a_tunings_bad_values_are_said_under_its_name_with_what_each_accepts() -> None:
    ctx, node = reading(
        "{name: a, intra_op: physicl, inter_op: 1025,"
        " env: {KMP_BLOCKTIME: forever, OMP_NUM_THREAD: 2, MY_VAR: x}}"
    )
    tuning = read_tuning(ctx, node, "tunings[0]")
    assert said(ctx) == [
        "m.yaml:1:21: tuning 'a'.intra_op: not a thread count (got 'physicl'; expected a thread "
        "count from 1 to 1024, physical, or logical); did you mean 'physical'?",
        "m.yaml:1:40: tuning 'a'.inter_op: not a thread count (got '1025'; expected a thread "
        "count from 1 to 1024, physical, or logical)",
        "m.yaml:1:67: tuning 'a'.env.KMP_BLOCKTIME: not accepted (got 'forever'; expected "
        "milliseconds or infinite)",
        "m.yaml:1:76: tuning 'a'.env: unknown variable (got 'OMP_NUM_THREAD'; a misspelt "
        "variable is silently ignored at run time); did you mean 'OMP_NUM_THREADS'?",
    ]
    assert tuning is not None and tuning.env == (("MY_VAR", "x"),)  # far from any known one


def test_a_tuning_without_a_name_is_said_where_it_is_and_not_read() -> None:
    ctx, node = reading("{intra_op: 2}")
    assert read_tuning(ctx, node, "tunings[1]") is None
    assert said(ctx) == ["m.yaml:1:1: tunings[1]: missing required key 'name'"]


def test_no_suite_section_is_every_benchmark_with_a_quick_and_a_full_preset() -> None:
    suite = read_suite(Ctx("m.yaml", Path("/srv")), None)
    assert suite.settings.benchmarks == tuple(BENCHMARKS)
    assert suite.settings.budget == DEFAULT_BUDGET
    assert list(suite.presets) == ["quick", "full"]
    assert suite.presets["full"] == suite.settings
    quick = suite.presets["quick"]
    assert (quick.budget, quick.resolve, quick.benchmarks) == (
        QUICK_BUDGET,
        0.10,
        tuple(BENCHMARKS),
    )


def test_the_suites_settings_carry_into_its_presets_and_quick_stays_sequential() -> None:
    ctx, node = reading(
        "benchmarks: matmul-fed\nrounds: 12\nmin_rounds: 3\nbudget: 4m per config, at least 30m\n"
        "presets:\n  long: {max_rounds: 50}\n"
    )
    suite = read_suite(ctx, node)
    assert said(ctx) == []
    settings = suite.settings
    assert (settings.benchmarks, settings.rounds, settings.min_rounds, settings.budget) == (
        ("matmul-fed",),
        12,
        3,
        Budget(240, True, 1800),
    )
    assert not settings.sequential
    long = suite.presets["long"]
    assert (long.benchmarks, long.rounds, long.min_rounds, long.max_rounds) == (
        ("matmul-fed",),
        12,
        3,
        50,
    )
    quick = suite.presets["quick"]
    assert quick.sequential and quick.budget == QUICK_BUDGET and quick.benchmarks == ("matmul-fed",)


def test_what_the_suite_fixes_and_values_out_of_range_are_refused() -> None:
    ctx, node = reading(
        "warmup: 3\nsamples: 5\nmin_rounds: 40\nbudget: 20 minutes\nresolve: 150%\n"
        "benchmarks: []\npresets: {Big: {}, long: {warmup: 1}}\n"
    )
    read_suite(ctx, node)
    assert said(ctx) == [
        "m.yaml:1:9: suite.warmup: warm-up is fixed by the suite since version 2; remove it "
        "(got '3')",
        "m.yaml:2:10: suite.samples: samples and iterations are fixed per benchmark by the suite "
        "since version 2 (`tfbuild calibrate` shows why); remove it (got '5')",
        "m.yaml:6:13: suite.benchmarks: needs at least one benchmark",
        "m.yaml:4:9: suite.budget: not a budget (got '20 minutes'; expected a budget like 20m or "
        "1h30m in all, or 2m30s per config, at least 20m)",
        "m.yaml:5:10: suite.resolve: not a percentage (got '150%'; expected a percentage between "
        "0% and 100%, like 5%)",
        "m.yaml:3:13: suite.min_rounds: larger than max_rounds (got 40; expected at most 30)",
        "m.yaml:7:11: suite.presets: not a valid preset name (got 'Big')",
        "m.yaml:7:35: suite.presets.long.warmup: warm-up is fixed by the suite since version 2; "
        "remove it (got '1')",
    ]


def test_round_counts_have_their_own_lower_bounds() -> None:
    ctx, node = reading("min_rounds: 1\nrounds: 0\nmax_rounds: 1001\n")
    read_suite(ctx, node)
    assert said(ctx) == [
        "m.yaml:1:13: suite.min_rounds: out of range (got '1'; expected a whole number from 2 "
        "to 1000)",
        "m.yaml:3:13: suite.max_rounds: out of range (got '1001'; expected a whole number from 2 "
        "to 1000)",
        "m.yaml:2:9: suite.rounds: out of range (got '0'; expected a whole number from 1 to 1000)",
    ]


def test_without_a_baseline_section_the_first_variant_and_tuning_are_the_baseline() -> None:
    ctx = Ctx("m.yaml", Path("/srv"))
    assert read_baseline(ctx, None, VARIANTS, TUNINGS) == Baseline("stock", "default")
    assert read_baseline(ctx, None, [], TUNINGS) is None
    ctx, node = reading("{variant: nightly}")
    assert read_baseline(ctx, node, VARIANTS, TUNINGS) == Baseline("nightly", "default")
    assert said(ctx) == []


def test_a_baseline_names_a_variant_and_tunings_there_are() -> None:
    ctx, node = reading("{variant: nigthly, tuning: single}")
    assert read_baseline(ctx, node, VARIANTS, TUNINGS) is None
    assert said(ctx) == [
        "m.yaml:1:11: baseline.variant: unknown variant (got 'nigthly'; expected one of stock, "
        "nightly); did you mean 'nightly'?",
        "m.yaml:1:28: baseline.tuning: unknown tuning (got 'single'; expected one of default, "
        "single-thread); did you mean 'single-thread'?",
    ]
    ctx, node = reading("{tuning: single-thread}")
    read_baseline(ctx, node, VARIANTS, TUNINGS)
    assert said(ctx) == ["m.yaml:1:1: baseline: missing required key 'variant'"]


def test_an_opt_in_sets_about_is_one_line_and_a_single_variant_a_list_of_one() -> None:
    ctx, node = reading(
        "newer:\n  about: >\n    the nightly,\n      which moves\n  variants: nightly\n"
    )
    assert read_opt_in(ctx, node, VARIANTS, BASELINE) == (
        OptIn("newer", "the nightly, which moves", ("nightly",)),
    )
    assert said(ctx) == []
    (newer,) = read_opt_in(ctx, node, VARIANTS, BASELINE)
    assert newer.where == Where("m.yaml", 1)


def test_an_opt_in_set_cannot_hold_the_baseline_or_lack_its_about() -> None:
    ctx, node = reading(
        "newer: {about: x, variants: [stock, nightly]}\nquiet: {variants: [nightly]}\n"
    )
    assert [s.name for s in read_opt_in(ctx, node, VARIANTS, BASELINE)] == ["newer"]
    assert said(ctx) == [
        "m.yaml:1:30: opt_in.newer.variants: the baseline variant 'stock' cannot be opt-in "
        "(every run compares with it); expected other variants",
        "m.yaml:2:8: opt_in.quiet: missing required key 'about'",
    ]


def test_a_name_used_twice_points_at_its_first_use() -> None:
    ctx, node = reading("- {name: a}\n- {name: b}\n- {name: a}\n")
    assert isinstance(node, yaml.SequenceNode)
    unique(ctx, [Tuning("a"), Tuning("b"), Tuning("a")], "name", "tuning", node.value)
    assert said(ctx) == [
        "m.yaml:3:3: tuning name 'a' is used twice (first on line 1); expected each tuning to "
        "have its own name"
    ]
