"""The command line as a user meets it: subprocesses, exit codes, messages, JSON documents."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest
from conftest import FIXTURES, REPO, run_tfbuild

from tfbuild import __version__
from tfbuild.resources import data_path

HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"
SCHEMA = json.loads(data_path("schemas/host.schema.json").read_text())


def test_version_help_and_module_entry() -> None:
    proc = run_tfbuild("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"tfbuild, version {__version__}"
    proc = run_tfbuild("--help")
    assert proc.returncode == 0
    for command in ("detect", "matrix"):
        assert command in proc.stdout


def test_console_script_installed() -> None:
    script = Path(sys.executable).parent / "tfbuild"
    assert script.exists() or shutil.which("tfbuild"), "pip install . must provide `tfbuild`"


def test_detect_json_validates_against_published_schema() -> None:
    proc = run_tfbuild("detect", "--json")
    assert proc.returncode == 0, proc.stderr
    jsonschema.Draft202012Validator(SCHEMA).validate(json.loads(proc.stdout))
    published = json.loads(run_tfbuild("detect", "--schema").stdout)
    jsonschema.Draft202012Validator.check_schema(published)
    assert published == SCHEMA


def test_detect_table_names_every_section() -> None:
    proc = run_tfbuild("detect")
    assert proc.returncode == 0, proc.stderr
    for heading in (
        "x86-64 level",
        "closest safe -march",
        "physical cores",
        "cgroup CPU quota",
        "glibc",
        "NVIDIA GPUs",
        "Docker engine",
        "qemu-user",
        "bazel copts",
        "intra-op threads",
        "OMP_NUM_THREADS",
    ):
        assert heading in proc.stdout


def test_saved_cpuinfo_then_plan_for_that_host(tmp_path: Path) -> None:
    saved = tmp_path / "fleet.json"
    proc = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--json", "-o", str(saved))
    assert proc.returncode == 0, proc.stderr
    document = json.loads(saved.read_text())
    jsonschema.Draft202012Validator(SCHEMA).validate(document)
    assert document == json.loads(proc.stdout)
    assert document["cpu"]["march"] == "haswell" and document["source"]["kind"] == "cpuinfo"
    plan = run_tfbuild("matrix", "--host", str(saved), "--json", cwd=REPO)
    assert plan.returncode == 0, plan.stderr
    runs = {v["name"]: v["runs_here"] for v in json.loads(plan.stdout)["variants"]}
    assert runs["avx512"] is False and runs["avx2-fma"] is True
    table = run_tfbuild("matrix", "--host", str(saved), cwd=REPO)
    assert "needs AVX512F" in table.stdout


def test_matrix_default_lookup(tmp_path: Path) -> None:
    # an empty folder: the packaged matrix
    proc = run_tfbuild("matrix", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["matrix"].endswith("matrix.yaml")
    assert "mkl-avx2" in proc.stdout
    # ./matrix.yaml wins when present
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n  - {name: only-one, source: pypi, requirement: tensorflow-cpu}\n"
    )
    proc = run_tfbuild("matrix", "--json", cwd=tmp_path)
    assert [v["name"] for v in json.loads(proc.stdout)["variants"]] == ["only-one"]


def test_matrix_errors_are_located_without_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "matrix.yaml"
    bad.write_text("variants:\n  - name: a\n    source: bazel\n    cpu_flags: [avx2, fmaa]\n")
    proc = run_tfbuild("matrix", "--matrix", str(bad))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"{bad}:4:23: variant 'a'.cpu_flags[1]: unknown CPU flag (got 'fmaa';"
    )
    assert "did you mean 'fma'?" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    debug = run_tfbuild("matrix", "--matrix", str(bad), "--debug")
    assert debug.returncode == 2 and "Traceback" in debug.stderr


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["matrix", "--only", "mkl-avx3"], 4, "selects nothing"),
        (["detect", "--cpuinfo", "/nonexistent/cpuinfo"], 3, "/nonexistent/cpuinfo: cannot read"),
        (["detect", "--cpuinfo", str(HASWELL), "--host", str(HASWELL)], 64, "give one of them"),
        (["matrix", "--bogus"], 64, "No such option"),
        (["matrix", "--host", str(HASWELL)], 3, "not valid JSON"),
    ],
)
def test_exit_codes(args: list[str], code: int, message: str) -> None:
    proc = run_tfbuild(*args, cwd=REPO)
    assert proc.returncode == code, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_wheel_carries_data_files(wheelhouse: Path) -> None:
    import zipfile

    wheel = next(wheelhouse.glob("tfbuild_bench-*.whl"))  # the distribution name
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "tfbuild/data/matrix.yaml",
        "tfbuild/data/templates/README.md",
        "tfbuild/data/schemas/host.schema.json",
        "tfbuild/data/microarchitectures.yaml",
        "tfbuild/data/tensorflow.yaml",
        "tfbuild/data/make-base-image",
    ):
        assert required in names
    packaged = zipfile.ZipFile(wheel).read("tfbuild/data/matrix.yaml")
    assert packaged == (REPO / "matrix.yaml").read_bytes()


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    quickstart = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    blocks = [b.split("```", 1)[0].strip() for b in quickstart.split("```bash\n")[1:]]
    assert len(blocks) == 2 and all("\n" not in b for b in blocks), "two one-line commands"
    assert blocks[1] in (REPO / ".ci/run").read_text().splitlines()
