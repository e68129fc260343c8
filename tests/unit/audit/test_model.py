"""The audit report's records: what `tfbuild inspect --format json` and the audit cache hold,
read back as written, and nothing else taken for one."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from tfbuild.audit import isa
from tfbuild.audit.inspect import build_report
from tfbuild.audit.model import SCHEMA, AuditReport
from tfbuild.store import Manifest, SourceBuild


def _wheel(tmp_path: Path) -> Path:
    wheel = tmp_path / "probe-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("probe-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: probe\n"
                         "Version: 1.0\nRequires-Dist: numpy\n\n")  # fmt: skip
        archive.writestr("probe-1.0.dist-info/RECORD", "")
    return wheel


def test_a_report_reads_back_as_written(tmp_path: Path) -> None:
    usage = {"avx2": isa.Usage(instructions=120, functions=30, examples=[(0x10, "f")])}
    objects = [
        isa.ObjectAudit("probe/_a.so", 40, usage, {"avx2": ["pervasive (75% of functions)"]},
                        "2.34", "3.4.30", None, 2, 5, unchecked={"avx512f": ["g"]}),
        isa.ObjectAudit("probe/_b.so", 0, {}, {}, None, None, None, 0, 0, error="truncated"),
    ]  # fmt: skip
    manifest = Manifest(
        variant={"name": "avx2"}, source="bazel", build=SourceBuild(copts=("-mavx2",))
    )
    report = build_report(_wheel(tmp_path), "0" * 64, manifest, objects, 1.234)
    written = json.loads(json.dumps(report.to_json()))
    assert written["schema"] == SCHEMA and "cached" not in written
    assert written["baseline"]["all"] == ["avx2"] and written["baseline"]["flags"] == ["avx2"]
    assert written["glibc"] == {"floor": "2.34", "manylinux": "manylinux_2_34_x86_64",
                                "glibcxx": "3.4.30"}  # fmt: skip
    assert written["unreadable"] == [{"path": "probe/_b.so", "error": "truncated"}]
    assert written["unchecked"] == {"avx512f": ["_a.so: g"]}
    assert written["objects"][0]["usage"]["avx2"]["share"] == 0.75
    assert written["manifest"]["copts"] == ["-mavx2"] and written["seconds"] == 1.23
    again = AuditReport.from_json(written)
    assert again == report and again.manifest == manifest
    assert again.needs.why == {"avx2": ("_a.so: pervasive (75% of functions)",)}
    shown = report.as_cached().to_json(cached=True)
    assert shown["cached"] is True and AuditReport.from_json(shown).cached is True


@pytest.mark.parametrize(
    "change",
    [{"schema": "tfbuild.results/8"}, {"schema": None}, {"baseline": None}, {"glibc": {}}],
)
def test_what_is_not_an_audit_report_is_refused(tmp_path: Path, change: dict[str, object]) -> None:
    written = build_report(_wheel(tmp_path), "0" * 64, None, [], 0.5).to_json()
    with pytest.raises((ValueError, KeyError, TypeError)):
        AuditReport.from_json({**written, **change})
