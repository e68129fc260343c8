"""The verdict on a wheel for a target: --gpu values, and the per-GPU verdict on synthetic
architecture sets (SASS of the GPU's major, PTX at or below it, arch-specific code)."""

from __future__ import annotations

from typing import Any

import pytest
from support.cli import run_tfbuild
from support.devicecode import TF_LIKE

from tfbuild.audit.model import CudaSummary
from tfbuild.audit.verdict import cuda_verdict as verdict_of
from tfbuild.audit.verdict import gpu_for_arch
from tfbuild.machine.profile import Gpu, GpuInfo


def cuda_verdict(listed: dict[str, Any] | None, on: GpuInfo | None) -> tuple[bool | None, str]:
    """The verdict on a wheel with one object of this device code (as cuobjdump lists it)."""
    if listed is None:
        return verdict_of(None, on)
    summary = CudaSummary(1, listed["checked"], tuple(listed["sass"]), tuple(listed["ptx"]),
                          None, listed["note"])  # fmt: skip
    return verdict_of(summary, on)


# What cuobjdump 13.5 prints for tensorflow 2.21.0's libtensorflow_framework.so.2 (its first
# kernels; every kernel there has the same five cubins and one PTX).
def gpus(*archs: str) -> GpuInfo:
    return GpuInfo(None, tuple(gpu_for_arch(a, i) for i, a in enumerate(archs)))


@pytest.mark.parametrize(
    ("value", "name", "capability"),
    [("sm_90", "sm_90", "9.0"), ("SM_90a", "sm_90a", "9.0"), ("compute_86", "sm_86", "8.6"),
     ("12.0", "sm_120", "12.0"), ("sm_100f", "sm_100f", "10.0"), (" 7.5 ", "sm_75", "7.5")],
)  # fmt: skip
def test_gpu_values(value: str, name: str, capability: str) -> None:
    gpu = gpu_for_arch(value)
    assert (gpu.name, gpu.compute_capability) == (name, capability)


@pytest.mark.parametrize("value", ["sm_5", "90", "9", "sm90", "9.10", "sm_09", "hopper", ""])
def test_bad_gpu_values_say_what_is_accepted(value: str) -> None:
    with pytest.raises(ValueError, match=r"give an architecture sm_XY .* capability X\.Y"):
        gpu_for_arch(value)


def test_bad_gpu_on_the_command_line_is_a_usage_error() -> None:
    proc = run_tfbuild("inspect", "any.whl", "--gpu", "sm_5")
    assert proc.returncode == 64, proc.stderr
    assert "Invalid value for '--gpu': 'sm_5' is not a GPU" in proc.stderr
    assert "sm_XY (sm_90, sm_90a, sm_120)" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    ("arch", "how"),
    [("sm_90", "sm_90 (SASS sm_90)"), ("8.6", "sm_86 (SASS sm_80)"),
     ("sm_89", "sm_89 (SASS sm_89)"), ("sm_75", "sm_75 (SASS sm_70)"),
     ("sm_90a", "sm_90a (SASS sm_90)"),
     ("12.0", "sm_120 (PTX compute_90, compiled by the driver on first use)")],
)  # fmt: skip
def test_a_gpu_runs_sass_of_its_major_or_ptx_at_or_below_it(arch: str, how: str) -> None:
    runs, line = cuda_verdict(TF_LIKE, gpus(arch))
    assert runs is True
    assert line == (
        f"runs on {how}; the wheel has SASS sm_60, sm_70, sm_80, sm_89, sm_90 and PTX compute_90"
    )


def test_a_gpu_without_code_names_what_is_missing() -> None:
    runs, line = cuda_verdict(TF_LIKE, gpus("sm_50"))
    assert runs is False
    assert line == (
        "no code for sm_50: no SASS for sm_50 and no PTX at or below compute_50; the wheel has "
        "SASS sm_60, sm_70, sm_80, sm_89, sm_90 and PTX compute_90"
    )
    runs, line = cuda_verdict({**TF_LIKE, "ptx": []}, gpus("sm_90", "12.0", "5.2"))
    assert runs is False
    assert line.startswith(
        "no code for sm_120: no SASS for sm_120 and no PTX at or below compute_120; "
        "no code for sm_52: no SASS for sm_50 to sm_52 and no PTX at or below compute_52; "
    )


def test_arch_specific_code_runs_only_on_its_own_gpu() -> None:
    hopper_only = {"checked": True, "sass": ["sm_90a"], "ptx": ["compute_90a"], "note": None}
    assert cuda_verdict(hopper_only, gpus("9.0"))[0] is True
    assert cuda_verdict(hopper_only, gpus("sm_100"))[0] is False


def test_no_gpu_no_device_code_and_unlisted_code() -> None:
    assert cuda_verdict(None, gpus("sm_50")) == (True, "no device code")
    runs, line = cuda_verdict(TF_LIKE, None)
    assert runs is True and line.endswith("no GPU named (--gpu ARCH gives the verdict for one)")
    runs, line = cuda_verdict(TF_LIKE, GpuInfo(None, ()))
    assert runs is True and line.endswith("no NVIDIA GPU here: runs on the CPU only")
    old_driver = GpuInfo("nvidia-smi", (Gpu(0, "Tesla P100", None, "470", 16000),))
    runs, line = cuda_verdict(TF_LIKE, old_driver)
    assert runs is None and "does not report its compute capability" in line
    unlisted = {"checked": False, "sass": [], "ptx": [], "note": "not checked: no cuobjdump"}
    runs, line = cuda_verdict(unlisted, gpus("sm_90"))
    assert runs is None
    assert line == (
        "device code present; architectures not checked: no cuobjdump; whether it runs on "
        "sm_90 is not known"
    )
    host_gpu = GpuInfo("nvidia-smi", (Gpu(0, "NVIDIA A100", "8.0", "550", 40000),))
    assert cuda_verdict(TF_LIKE, host_gpu) == (
        True,
        "runs on NVIDIA A100 (8.0) (SASS sm_80); the wheel has SASS sm_60, sm_70, sm_80, sm_89, "
        "sm_90 and PTX compute_90",
    )
