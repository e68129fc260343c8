"""The values matrix.yaml accepts, read on their own: durations (90s, 15m, 1h30m, 1.5h or bare
seconds), budgets in all or per config with a floor, percentages (5% or 0.05, strictly between 0
and 1), the "did you mean" hint and the "unknown X" message, and the patterns that keep what
reaches a Dockerfile, a bazel command line or a shell to plain names, versions and options."""

from __future__ import annotations

import re

import pytest

from tfbuild.config.values import (
    COPT_RE,
    ENV_VALUE_RE,
    IMAGE_RE,
    KNOWN_ENV,
    NAME_RE,
    PINNED_RE,
    REQUIREMENT_RE,
    TF_VERSION_RE,
    URL_RE,
    did_you_mean,
    parse_budget,
    parse_duration,
    parse_percent,
    unknown,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h30m", 5400.0),
        ("1.5h", 5400.0),
        ("2.5m", 150.0),
        ("1m30s", 90.0),
        ("45", 45.0),
        (" 2M ", 120.0),
        ("1h30", 3630.0),  # a bare number after the hours is seconds
    ],
)
def test_a_duration_is_hours_minutes_and_seconds_in_that_order(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "0s", "0h0m", "-5", "abc", "m", "1h 30m", "1d", "30m1h"])
def test_what_is_no_positive_duration_is_none(text: str) -> None:
    assert parse_duration(text) is None


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("20m", (1200.0, False, 0.0)),
        ("4m per config", (240.0, True, 0.0)),
        ("4m/config", (240.0, True, 0.0)),
        ("4m a config", (240.0, True, 0.0)),
        ("4M PER CONFIG", (240.0, True, 0.0)),
        ("2m30s per config, at least 20m", (150.0, True, 1200.0)),
        ("1h per config,at least 2h", (3600.0, True, 7200.0)),
        ("4m per config at least 1h", (240.0, True, 3600.0)),
    ],
)
def test_a_budget_is_in_all_or_per_config_with_a_floor_in_all(
    text: str, budget: tuple[float, bool, float]
) -> None:
    assert parse_budget(text) == budget


@pytest.mark.parametrize(
    "text",
    ["20 minutes", "per config", "soon per config", "4m per config, at least soon", "4m per run"],
)
def test_a_budget_with_a_part_that_is_no_duration_is_none(text: str) -> None:
    assert parse_budget(text) is None


@pytest.mark.parametrize(
    ("text", "fraction"),
    [("5%", 0.05), ("0.05", 0.05), (" 12.5% ", 0.125), ("1e-2", 0.01), ("0.999", 0.999)],
)
def test_a_percentage_is_a_fraction_with_or_without_the_percent_sign(
    text: str, fraction: float
) -> None:
    assert parse_percent(text) == fraction


@pytest.mark.parametrize("text", ["0", "0%", "100%", "1", "50", "-5%", "nan", "inf", "%", "five"])
def test_a_percentage_outside_zero_to_one_or_not_a_number_is_none(text: str) -> None:
    """A bare 50 is not read as 50 %: without the sign the number is the fraction itself."""
    assert parse_percent(text) is None


def test_the_hint_names_the_closest_choice_or_nothing() -> None:
    assert did_you_mean("mkl_threadpol", ["mkl", "mkl_threadpool"]) == (
        "; did you mean 'mkl_threadpool'?"
    )
    assert did_you_mean("zzz", ["mkl", "opt"]) == ""


def test_a_stricter_cutoff_keeps_the_hint_to_near_misspellings() -> None:
    assert did_you_mean("OMP_THREADS", KNOWN_ENV) == "; did you mean 'OMP_NUM_THREADS'?"
    assert did_you_mean("OMP_THREADS", KNOWN_ENV, cutoff=0.85) == ""
    assert did_you_mean("OMP_NUM_THREAD", KNOWN_ENV, cutoff=0.85) == (
        "; did you mean 'OMP_NUM_THREADS'?"
    )


def test_unknown_says_the_value_what_is_known_and_the_closest() -> None:
    assert unknown("tuning", "singel-thread", ["default", "single-thread"]) == (
        "unknown tuning 'singel-thread' (expected one of: default, single-thread); "
        "did you mean 'single-thread'?"
    )
    assert unknown("tuning", "x", ["default"]) == "unknown tuning 'x' (expected one of: default)"


@pytest.mark.parametrize(
    ("pattern", "accepted", "refused"),
    [
        (
            NAME_RE,
            ["a", "stock-2.14", "a_b.c", "a" * 64],
            ["-a", "a-", "A", "a b", "a;b", "a" * 65],
        ),
        (TF_VERSION_RE, ["2.17.1", "2.22.0rc0"], ["2.20", "2.20.0-rc0", "v2.17.1"]),
        (
            COPT_RE,
            ["-O3", "-mtune=haswell"],
            ["-O3 -march=native", "-DX='1'", "$(id)", "-O3;reboot", "`id`", "O3"],
        ),
        (
            REQUIREMENT_RE,
            ["intel-tensorflow==2.14.0", "numpy<2", "tensorflow[and-cuda]>=2.15,<2.17"],
            ["x @ https://e/x.whl", "tf; python_version<'3.12'", "-e ."],
        ),
        (
            URL_RE,
            ["https://cache.example.com", "grpc://10.0.0.1:9092", "http://h/p/q"],
            ["https://user:secret@cache.example.com", "ftp://x", "https://h/a b"],
        ),
        (
            IMAGE_RE,
            ["debian:bookworm", "registry.example.com:5000/img:tag", "tfbuild/base:bookworm"],
            ["Ubuntu:22.04", "debian:bookworm;id", "debian bookworm"],
        ),
        (
            ENV_VALUE_RE,
            ["granularity=fine,compact,1,0", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit", ""],
            ["$(id)", "a;b", "a\nb", "'x'"],
        ),
    ],
)
def test_values_that_reach_a_command_line_are_plain(
    pattern: re.Pattern[str], accepted: list[str], refused: list[str]
) -> None:
    assert [v for v in accepted if not pattern.fullmatch(v)] == []
    assert [v for v in refused if pattern.fullmatch(v)] == []


def test_a_pinned_image_ends_in_its_sha256_digest() -> None:
    digest = "@sha256:" + "0123456789abcdef" * 4
    pinned = "docker.io/library/debian:bookworm-slim" + digest
    assert IMAGE_RE.fullmatch(pinned) and PINNED_RE.search(pinned)
    assert not PINNED_RE.search("debian:bookworm-slim")
    assert not PINNED_RE.search("debian:bookworm-slim" + digest[:-1])
    assert not PINNED_RE.search("debian" + digest.upper())
