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
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.cli import run_tfbuild
from support.devicecode import LISTING, TF_LIKE
from support.env import require

from tfbuild.audit import cuobjdump, isa
from tfbuild.audit.inspect import build_report, cuda_summary
from tfbuild.audit.model import AuditReport, CudaListing, CudaTool
from tfbuild.audit.verdict import (
    Target,
    gpu_for_arch,
    refuse_if_incompatible,
    target_for_model,
    verdict,
    with_gpus,
)
from tfbuild.errors import IncompatibleWheel
from tfbuild.report.inspection import inspect_view


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


def _report(tmp_path: Path, device_code: dict[str, dict[str, Any] | None]) -> AuditReport:
    wheel = _wheel(tmp_path, {})
    listings = {path: CudaListing.from_json(c) if c else None for path, c in device_code.items()}
    objects = [isa.ObjectAudit(path, 10, {}, {}, "2.17", None, cuda, 1, 1)
               for path, cuda in listings.items()]  # fmt: skip
    tool = CudaTool("/cache/tools/cuobjdump-13.5.37/bin/cuobjdump", "13.5.37",
                    "nvidia-cuda-cuobjdump 13.5.37")  # fmt: skip
    listed = [c for c in listings.values() if c]
    report = build_report(wheel, "0" * 64, None, objects, 1.0, tool)
    assert report.cuda == cuda_summary(listed, tool)
    assert AuditReport.from_json(json.loads(json.dumps(report.to_json()))) == report
    return report


def _text(report: AuditReport, target: Target) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(inspect_view(report, verdict(report, target), target))
    return console.export_text()


def test_objects_with_the_same_architectures_share_a_row(tmp_path: Path) -> None:
    older = {**TF_LIKE, "sass": ["sm_60", "sm_70"], "ptx": ["compute_70"]}
    report = _report(
        tmp_path,
        {"gpu/a.so": TF_LIKE, "gpu/plain.so": None, "gpu/b.so": TF_LIKE, "gpu/old.so": older},
    )
    cuda = report.cuda
    assert cuda is not None and cuda.objects == 3 and cuda.checked is True
    assert cuda.sass == ("sm_60", "sm_70", "sm_80", "sm_89", "sm_90")
    assert cuda.ptx == ("compute_70", "compute_90")
    assert cuda.tool is not None and cuda.tool.version == "13.5.37"
    per_object = {o.path: o.cuda for o in report.objects}
    assert per_object["gpu/old.so"] == CudaListing.from_json(older)
    assert per_object["gpu/plain.so"] is None
    target = with_gpus(target_for_model("haswell"), [gpu_for_arch("sm_50")])
    text = _text(report, target)
    rows = [line for line in text.splitlines() if "gpu/" in line or "all 3 objects" in line]
    assert "gpu/a.so" in rows[0] and "sm_60, sm_70, sm_80, sm_89, sm_90" in rows[0]
    assert "gpu/b.so" in rows[1] and "sm_" not in rows[1]  # the same row, continued
    assert "gpu/old.so" in rows[2] and "sm_60, sm_70" in rows[2] and "compute_70" in rows[2]
    assert "all 3 objects" in rows[3] and "compute_70, compute_90" in rows[3]
    assert "13.5.37 (nvidia-cuda-cuobjdump 13.5.37, package index)" in text
    assert "no code for sm_50" in text
    result = verdict(report, target)
    assert result.runs is False and result.blockers[0].startswith("CUDA no code for sm_50")
    with pytest.raises(IncompatibleWheel, match="CUDA no code for sm_50: no SASS for sm_50"):
        refuse_if_incompatible(report, target, "variant 'gpu'")
    fits = with_gpus(target, [gpu_for_arch("9.0")])
    assert verdict(report, fits).runs is True


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


@pytest.mark.slow  # pip against an unreachable index, and six audits
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
    args = ("inspect", str(wheel), "--gpu", "sm_90", "--format", "json", "--cache-dir", str(cache))
    proc = run_tfbuild(*args, env={**UNREACHABLE_INDEX, "PATH": _path_without_cuobjdump()})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    report = json.loads(proc.stdout)
    assert report["cuda"]["checked"] is False and report["cuda"]["tool"] is None
    assert report["cuda"]["note"] == (
        "not checked: cuobjdump is not on PATH and nvidia-cuda-cuobjdump could not be installed "
        "from the package index: nvidia-cuda-cuobjdump: the package index has no wheel of it "
        f"for this Python (CPython {sys.version_info.major}.{sys.version_info.minor}), or cannot "
        "be reached (pip lists no version at all); "
        "check the index settings"
    )
    assert report["verdict"]["runs"] is None
    assert report["verdict"]["cuda"].endswith("whether it runs on sm_90 is not known")
    assert not list((cache / "tools").glob("cuobjdump-*"))  # nothing half-installed is kept
    text = run_tfbuild(*args[:-4], *args[-2:], env={**UNREACHABLE_INDEX,
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
