"""The export command's options: --workload is required and the forms it writes are listed."""

from __future__ import annotations

from pathlib import Path

from support.cli import run_tfbuild


def test_export_needs_a_workload_and_writes_only_litert(tmp_path: Path) -> None:
    proc = run_tfbuild("export", "-o", str(tmp_path / "m.tflite"))
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert "export needs --workload DIR" in proc.stderr
    proc = run_tfbuild("export", "--form", "optimized", "--workload", str(tmp_path), "-o", "m")
    assert (
        proc.returncode != 0 and "'optimized' is not one of 'litert', 'litert-int8'" in proc.stderr
    )
    helped = run_tfbuild("export", "--help")
    assert helped.returncode == 0
    for option in ("--workload", "--signature", "--batch", "--shape", "--inputs", "--python"):
        assert option in helped.stdout
