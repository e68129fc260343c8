"""CUDA device code in `tfbuild inspect`: --gpu values, the per-GPU verdict on synthetic
architecture sets, the per-object listing and its view, and what happens without cuobjdump
(the package index unreachable: "not checked" and why, no traceback; a cached report listed
again once a cuobjdump is there)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import require, run_tfbuild
from rich.console import Console

from tfbuild import audit, cuobjdump, isa
from tfbuild.errors import IncompatibleWheel
from tfbuild.host import Gpu, GpuInfo
from tfbuild.report.terminal import inspect_view

# What cuobjdump 13.5 prints for tensorflow 2.21.0's libtensorflow_framework.so.2 (its first
# kernels; every kernel there has the same five cubins and one PTX).
LISTING = """\
ELF file    1: libtensorflow_framework.so.1.sm_60.cubin
ELF file    2: libtensorflow_framework.so.2.sm_70.cubin
ELF file    3: libtensorflow_framework.so.3.sm_80.cubin
ELF file    4: libtensorflow_framework.so.4.sm_89.cubin
ELF file    5: libtensorflow_framework.so.5.sm_90.cubin
PTX file    1: libtensorflow_framework.so.1.sm_90.ptx
ELF file    6: libtensorflow_framework.so.6.sm_100a.cubin
"""

TF_LIKE = {"checked": True, "sass": ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90"],
           "ptx": ["compute_90"], "note": None}  # fmt: skip


def gpus(*archs: str) -> GpuInfo:
    return GpuInfo(None, tuple(audit.gpu_for_arch(a, i) for i, a in enumerate(archs)))


@pytest.mark.parametrize(
    ("value", "name", "capability"),
    [("sm_90", "sm_90", "9.0"), ("SM_90a", "sm_90a", "9.0"), ("compute_86", "sm_86", "8.6"),
     ("12.0", "sm_120", "12.0"), ("sm_100f", "sm_100f", "10.0"), (" 7.5 ", "sm_75", "7.5")],
)  # fmt: skip
def test_gpu_values(value: str, name: str, capability: str) -> None:
    gpu = audit.gpu_for_arch(value)
    assert (gpu.name, gpu.compute_capability) == (name, capability)


@pytest.mark.parametrize("value", ["sm_5", "90", "9", "sm90", "9.10", "sm_09", "hopper", ""])
def test_bad_gpu_values_say_what_is_accepted(value: str) -> None:
    with pytest.raises(ValueError, match=r"give an architecture sm_XY .* capability X\.Y"):
        audit.gpu_for_arch(value)


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
    runs, line = audit.cuda_verdict(TF_LIKE, gpus(arch))
    assert runs is True
    assert line == (
        f"runs on {how}; the wheel has SASS sm_60, sm_70, sm_80, sm_89, sm_90 and PTX compute_90"
    )


def test_a_gpu_without_code_names_what_is_missing() -> None:
    runs, line = audit.cuda_verdict(TF_LIKE, gpus("sm_50"))
    assert runs is False
    assert line == (
        "no code for sm_50: no SASS for sm_50 and no PTX at or below compute_50; the wheel has "
        "SASS sm_60, sm_70, sm_80, sm_89, sm_90 and PTX compute_90"
    )
    runs, line = audit.cuda_verdict({**TF_LIKE, "ptx": []}, gpus("sm_90", "12.0", "5.2"))
    assert runs is False
    assert line.startswith(
        "no code for sm_120: no SASS for sm_120 and no PTX at or below compute_120; "
        "no code for sm_52: no SASS for sm_50 to sm_52 and no PTX at or below compute_52; "
    )


def test_arch_specific_code_runs_only_on_its_own_gpu() -> None:
    hopper_only = {"checked": True, "sass": ["sm_90a"], "ptx": ["compute_90a"], "note": None}
    assert audit.cuda_verdict(hopper_only, gpus("9.0"))[0] is True
    assert audit.cuda_verdict(hopper_only, gpus("sm_100"))[0] is False


def test_no_gpu_no_device_code_and_unlisted_code() -> None:
    assert audit.cuda_verdict(None, gpus("sm_50")) == (True, "no device code")
    runs, line = audit.cuda_verdict(TF_LIKE, None)
    assert runs is True and line.endswith("no GPU named (--gpu ARCH gives the verdict for one)")
    runs, line = audit.cuda_verdict(TF_LIKE, GpuInfo(None, ()))
    assert runs is True and line.endswith("no NVIDIA GPU here: runs on the CPU only")
    old_driver = GpuInfo("nvidia-smi", (Gpu(0, "Tesla P100", None, "470", 16000),))
    runs, line = audit.cuda_verdict(TF_LIKE, old_driver)
    assert runs is None and "does not report its compute capability" in line
    unlisted = {"checked": False, "sass": [], "ptx": [], "note": "not checked: no cuobjdump"}
    runs, line = audit.cuda_verdict(unlisted, gpus("sm_90"))
    assert runs is None
    assert line == (
        "device code present; architectures not checked: no cuobjdump; whether it runs on "
        "sm_90 is not known"
    )
    host_gpu = GpuInfo("nvidia-smi", (Gpu(0, "NVIDIA A100", "8.0", "550", 40000),))
    assert audit.cuda_verdict(TF_LIKE, host_gpu) == (
        True,
        "runs on NVIDIA A100 (8.0) (SASS sm_80); the wheel has SASS sm_60, sm_70, sm_80, sm_89, "
        "sm_90 and PTX compute_90",
    )


def test_listing_parser() -> None:
    assert cuobjdump.architectures(LISTING) == {
        "sass": ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90", "sm_100a"],
        "ptx": ["compute_90"],
    }
    assert cuobjdump.architectures("cuobjdump info : No ELF file found") == {"sass": [], "ptx": []}


def _wheel(tmp_path: Path, objects: dict[str, Path]) -> Path:
    wheel = tmp_path / "gpu-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, path in objects.items():
            archive.write(path, f"gpu/{name}")
        archive.writestr("gpu-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: gpu\n"
                         "Version: 1.0\n\n")  # fmt: skip
        archive.writestr("gpu-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        archive.writestr("gpu-1.0.dist-info/RECORD", "")
    return wheel


def _report(tmp_path: Path, device_code: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    wheel = _wheel(tmp_path, {})
    objects = [isa.ObjectAudit(path, 10, {}, {}, "2.17", None, cuda, 1, 1)
               for path, cuda in device_code.items()]  # fmt: skip
    tool = {"path": "/cache/tools/cuobjdump-13.5.37/bin/cuobjdump", "version": "13.5.37",
            "source": "nvidia-cuda-cuobjdump 13.5.37"}  # fmt: skip
    listed = [c for c in device_code.values() if c]
    report = audit.build_report(wheel, "0" * 64, None, objects, 1.0, tool)
    assert report["cuda"] == audit.cuda_summary(listed, tool)
    return report


def _text(report: dict[str, Any], target: audit.Target) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(inspect_view(report, audit.verdict(report, target), target))
    return console.export_text()


def test_objects_with_the_same_architectures_share_a_row(tmp_path: Path) -> None:
    older = {**TF_LIKE, "sass": ["sm_60", "sm_70"], "ptx": ["compute_70"]}
    report = _report(
        tmp_path,
        {"gpu/a.so": TF_LIKE, "gpu/plain.so": None, "gpu/b.so": TF_LIKE, "gpu/old.so": older},
    )
    cuda = report["cuda"]
    assert cuda["objects"] == 3 and cuda["checked"] is True
    assert cuda["sass"] == ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90"]
    assert cuda["ptx"] == ["compute_70", "compute_90"]
    assert cuda["tool"]["version"] == "13.5.37"
    per_object = {o["path"]: o["cuda"] for o in report["objects"]}
    assert per_object["gpu/old.so"] == older and per_object["gpu/plain.so"] is None
    target = audit.with_gpus(audit.target_for_model("haswell"), [audit.gpu_for_arch("sm_50")])
    text = _text(report, target)
    rows = [line for line in text.splitlines() if "gpu/" in line or "all 3 objects" in line]
    assert "gpu/a.so" in rows[0] and "sm_60, sm_70, sm_80, sm_89, sm_90" in rows[0]
    assert "gpu/b.so" in rows[1] and "sm_" not in rows[1]  # the same row, continued
    assert "gpu/old.so" in rows[2] and "sm_60, sm_70" in rows[2] and "compute_70" in rows[2]
    assert "all 3 objects" in rows[3] and "compute_70, compute_90" in rows[3]
    assert "13.5.37 (nvidia-cuda-cuobjdump 13.5.37, package index)" in text
    assert "no code for sm_50" in text
    result = audit.verdict(report, target)
    assert result.runs is False and result.blockers[0].startswith("CUDA no code for sm_50")
    with pytest.raises(IncompatibleWheel, match="CUDA no code for sm_50: no SASS for sm_50"):
        audit.refuse_if_incompatible(report, target, "variant 'gpu'")
    fits = audit.with_gpus(target, [audit.gpu_for_arch("9.0")])
    assert audit.verdict(report, fits).runs is True


FATBIN = r"""
/* a fat binary section, as nvcc makes one, that holds no kernel */
__attribute__((section(".nv_fatbin"), used)) static const char fatbin[64] = {0};
int answer(void) { return 42; }
"""

FAKE_CUOBJDUMP = f"""#!/bin/sh
case "$1" in
  --version) echo "Cuda compilation tools, release 12.4, V12.4.131" ;;
  *) cat <<'EOF'
{LISTING}EOF
  ;;
esac
"""


def _path_without_cuobjdump(extra: Path | None = None) -> str:
    kept = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "cuobjdump").exists()]  # fmt: skip
    return os.pathsep.join(([str(extra)] if extra else []) + kept)


UNREACHABLE_INDEX = {
    "PIP_CONFIG_FILE": os.devnull,  # no pip.conf: only the index below
    "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
    "PIP_EXTRA_INDEX_URL": "",
    "PIP_FIND_LINKS": "",
    "PIP_RETRIES": "0",
}


def test_without_cuobjdump_or_index_the_report_says_why_then_lists_it_later(
    tmp_path: Path,
) -> None:
    """No cuobjdump on PATH and the package index unreachable: the architectures are "not
    checked" and the report says why (no traceback); the next inspect with a cuobjdump on PATH
    lists them into the cached report, without auditing the wheel again."""
    gcc = shutil.which("gcc")
    require(gcc is not None, "gcc is not installed")
    assert gcc is not None
    (tmp_path / "gpu.c").write_text(FATBIN)
    so = tmp_path / "libgpu.so"
    subprocess.run([gcc, "-shared", "-fPIC", str(tmp_path / "gpu.c"), "-o", str(so)], check=True)
    wheel, cache = _wheel(tmp_path, {"libgpu.so": so}), tmp_path / "cache"
    args = ("inspect", str(wheel), "--gpu", "sm_90", "--json", "--cache-dir", str(cache))
    proc = run_tfbuild(*args, env={**UNREACHABLE_INDEX, "PATH": _path_without_cuobjdump()})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["cuda"]["checked"] is False and report["cuda"]["tool"] is None
    assert report["cuda"]["note"] == (
        "not checked: cuobjdump is not on PATH and nvidia-cuda-cuobjdump could not be installed "
        "from the package index: No matching distribution found for nvidia-cuda-cuobjdump (the "
        "package index cannot be reached, or has no such wheel for this machine)"
    )
    assert report["verdict"]["runs"] is None
    assert report["verdict"]["cuda"].endswith("whether it runs on sm_90 is not known")
    assert not list((cache / "tools").glob("cuobjdump-*"))  # nothing half-installed is kept
    text = run_tfbuild(*[a for a in args if a != "--json"], env={**UNREACHABLE_INDEX,
                       "PATH": _path_without_cuobjdump()})  # fmt: skip
    assert text.returncode == 0 and "not checked" in text.stdout, text.stderr
    # The failure is remembered for an hour: the next audits do not run pip (and pay its
    # retries) again; --refresh does, and so does the first audit after an hour. PIP_LOG makes
    # pip write a log file when it runs.
    memo = cache / "tools" / "cuobjdump.failed"
    assert memo.read_text() == report["cuda"]["note"].removeprefix("not checked: ")
    for ago, extra, runs_pip in ((300, (), False), (1800, ("--refresh",), True), (7200, (), True)):
        os.utime(memo, (time.time() - ago, time.time() - ago))
        log = tmp_path / f"pip-{ago}.log"
        env = {**UNREACHABLE_INDEX, "PATH": _path_without_cuobjdump(), "PIP_LOG": str(log)}
        proc = run_tfbuild(*args, *extra, env=env)
        assert json.loads(proc.stdout)["cuda"]["note"] == report["cuda"]["note"]
        assert log.exists() is runs_pip, (ago, extra)
        assert (time.time() - memo.stat().st_mtime < 120) is runs_pip  # failed again just now

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cuobjdump").write_text(FAKE_CUOBJDUMP)
    (bin_dir / "cuobjdump").chmod(0o755)
    proc = run_tfbuild(*args, env={"PATH": _path_without_cuobjdump(bin_dir)})
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["cached"] is True
    assert report["cuda"]["checked"] is True and report["cuda"]["note"] is None
    assert report["cuda"]["tool"] == {"path": str(bin_dir / "cuobjdump"), "version": "12.4.131",
                                      "source": "PATH"}  # fmt: skip
    assert report["objects"][0]["cuda"]["sass"][-1] == "sm_100a"
    assert report["verdict"]["cuda"].startswith("runs on sm_90 (SASS sm_90)")
    again = json.loads(run_tfbuild(*args, env={"PATH": _path_without_cuobjdump()}).stdout)
    assert again["cuda"] == report["cuda"]  # the listing is kept in the cache
