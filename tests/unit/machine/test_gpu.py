"""Which CUDA device code runs on which GPU: SASS (sm_XY) runs on its own major at the same or a
later minor, PTX (compute_XY) is compiled by the driver for any GPU at or above it, and
arch-specific code (the `a` suffix) runs on its own compute capability only. Pure
arithmetic on names: no GPU is needed to check it."""

from __future__ import annotations

import pytest

from tfbuild.machine.gpu import runs_on


@pytest.mark.parametrize(
    ("code", "device", "runs"),
    [
        ("sm_80", "8.0", True),  # A100 SASS on an A100
        ("sm_80", "8.6", True),  # ... on an A10: same major, later minor
        ("sm_80", "8.9", True),  # ... on an L4
        ("sm_86", "8.0", False),  # A10 SASS on an A100: an earlier minor
        ("sm_80", "9.0", False),  # A100 SASS on an H100: SASS never crosses a major
        ("sm_90", "10.0", False),
        ("sm_75", "7.5", True),
        ("sm_120", "12.1", True),  # three digits: major 12, minor 0
        ("sm_100", "12.0", False),
    ],
)
def test_sass_runs_on_its_own_major_at_the_same_or_a_later_minor(
    code: str, device: str, runs: bool
) -> None:
    assert runs_on(code, device) is runs


@pytest.mark.parametrize(
    ("code", "device", "runs"),
    [
        ("compute_80", "8.0", True),
        ("compute_80", "9.0", True),  # the driver compiles Ampere PTX for a Hopper
        ("compute_90", "12.0", True),  # ... and Hopper PTX for a Blackwell
        ("compute_75", "8.6", True),
        ("compute_90", "8.9", False),  # PTX never runs below the capability it was made for
        ("compute_86", "8.0", False),
    ],
)
def test_ptx_runs_on_every_gpu_at_or_above_its_capability(
    code: str, device: str, runs: bool
) -> None:
    assert runs_on(code, device) is runs


@pytest.mark.parametrize(
    ("code", "device", "runs"),
    [
        ("sm_90a", "9.0", True),
        ("sm_90a", "10.0", False),
        ("compute_90a", "9.0", True),
        ("compute_90a", "10.0", False),  # arch-specific PTX is not compiled forward
        ("compute_90a", "12.0", False),
        ("sm_100a", "10.0", True),
        ("sm_100a", "12.0", False),
        ("sm_100f", "10.0", True),
        ("sm_100f", "12.0", False),
    ],
)
def test_arch_specific_code_runs_only_on_its_own_compute_capability(
    code: str, device: str, runs: bool
) -> None:
    """sm_90a uses Hopper-only instructions (wgmma): even its PTX is no good on a later GPU."""
    assert runs_on(code, device) is runs


def test_a_three_digit_architecture_is_read_as_major_and_one_minor_digit() -> None:
    """sm_100 is compute capability 10.0, not 1.00: it runs on a B200 (10.0) and on nothing
    of major 1."""
    assert runs_on("sm_100", "10.0") is True
    assert runs_on("sm_100", "1.0") is False
    assert runs_on("compute_100", "10.3") is True
    assert runs_on("compute_100", "9.0") is False


def test_a_device_without_a_minor_is_its_major_dot_zero() -> None:
    assert runs_on("sm_90", "9") is True
    assert runs_on("sm_86", "8") is False
    assert runs_on("compute_89", "9") is True
