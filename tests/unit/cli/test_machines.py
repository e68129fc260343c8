"""The command line as a user meets it: subprocesses, exit codes, messages, JSON documents."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.cli.machines import DetectSettings, described_machine, runnable_here
from tfbuild.cli.planning import plan_here
from tfbuild.config.load import load_matrix
from tfbuild.machine.detect import profile_from_cpuinfo

HASWELL = FIXTURES / "cpuinfo" / "haswell-xeon-e5-2680v3.cpuinfo"


def published_schema() -> jsonschema.Draft202012Validator:
    """The schema `tfbuild detect --schema` prints, as a validator (checked to be a schema)."""
    proc = run_tfbuild("detect", "--schema")
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_detect_json_validates_against_published_schema() -> None:
    proc = run_tfbuild("detect", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    published_schema().validate(json.loads(proc.stdout))


def _set(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        for part in parents:
            document = document[part]
        document[key] = value

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(document: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        for part in parents:
            document = document[part]
        del document[key]

    return change


MUTATIONS = {
    "another schema": _set("schema", "tfbuild.host/2"),
    "no CPU": _drop("cpu"),
    "no flags": _drop("cpu.flags"),
    "a level beyond v4": _set("cpu.isa_level", 5),
    "a level as text": _set("cpu.isa_level", "x86-64-v3"),
    "an instruction set not a boolean": _set("cpu.tf_flags.avx2", "yes"),
    "an instruction set missing": _drop("cpu.tf_flags.avx512f"),
    "no CPUs": _set("topology.logical_cpus", 0),
    "an unknown source": _set("source.kind", "guessed"),
}


@pytest.mark.parametrize(
    "cpuinfo", sorted(p.name for p in (FIXTURES / "cpuinfo").glob("*.cpuinfo"))
)
def test_saved_profiles_validate_and_mutated_ones_are_refused(cpuinfo: str) -> None:
    """Every saved cpuinfo of the fixtures, profiled by `detect --cpuinfo --format json`, validates
    against the published schema; each of the mutations is refused by it."""
    proc = run_tfbuild(
        "detect", "--cpuinfo", str(FIXTURES / "cpuinfo" / cpuinfo), "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    validator = published_schema()
    validator.validate(document)
    for name, change in MUTATIONS.items():
        mutated = copy.deepcopy(document)
        change(mutated)
        assert not validator.is_valid(mutated), name


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
    proc = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--format", "json", "-o", str(saved))
    assert proc.returncode == 0, proc.stderr
    document = json.loads(saved.read_text())
    published_schema().validate(document)
    assert document == json.loads(proc.stdout)
    assert document["cpu"]["march"] == "haswell" and document["source"]["kind"] == "cpuinfo"
    plan = run_tfbuild("matrix", "--host", str(saved), "--format", "json", cwd=REPO)
    assert plan.returncode == 0, plan.stderr
    runs = {v["name"]: v["runs_here"] for v in json.loads(plan.stdout)["variants"]}
    assert runs["avx512"] is False and runs["avx2-fma"] is True
    table = run_tfbuild("matrix", "--host", str(saved), cwd=REPO)
    assert "needs AVX512F" in table.stdout


def test_opt_in_sets_are_named_and_added_with_with(tmp_path: Path) -> None:
    """The default plan leaves the opt-in sets out and says how to add each, with what it is;
    `--with SET` adds that set's variants, `--only NAME` one of them alone."""
    host = tmp_path / "haswell.json"
    saved = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--format", "json", "-o", str(host))
    assert saved.returncode == 0, saved.stderr
    plain = run_tfbuild("matrix", "--host", str(host), "--format", "json", cwd=REPO)
    assert plain.returncode == 0, plain.stderr
    names = {v["name"] for v in json.loads(plain.stdout)["variants"]}
    assert "stock" in names and not names & {"nightly", "stock-2.22rc0", "intel-2.14"}
    table = run_tfbuild("matrix", "--host", str(host), cwd=REPO, env={"COLUMNS": "200"})
    lines = table.stdout.splitlines()
    newer = next(line for line in lines if line.startswith("--with newer adds"))
    assert newer.startswith("--with newer adds stock-2.22rc0, nightly (opt-in): TensorFlow after")
    intel = next(line for line in lines if line.startswith("--with intel-2023 adds"))
    assert "intel-tensorflow 2.14.0, 2023" in intel
    added = run_tfbuild(
        "matrix", "--host", str(host), "--with", "intel-2023", "--format", "json", cwd=REPO
    )
    variants = {v["name"]: v for v in json.loads(added.stdout)["variants"]}
    assert {"stock-2.14", "intel-2.14", "intel-avx512-2.14"} <= set(variants)
    assert variants["intel-avx512-2.14"]["runs_here"] is False  # Haswell has no AVX-512
    alone = run_tfbuild(
        "matrix", "--host", str(host), "--only", "nightly", "--format", "json", cwd=REPO
    )
    assert [v["name"] for v in json.loads(alone.stdout)["variants"]] == ["nightly"]


def test_matrix_default_lookup(tmp_path: Path) -> None:
    # an empty folder: the packaged matrix
    proc = run_tfbuild("matrix", "--format", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["matrix"].endswith("matrix.yaml")
    assert "mkl-avx2" in proc.stdout
    # ./matrix.yaml wins when present
    (tmp_path / "matrix.yaml").write_text(
        "variants:\n  - {name: only-one, source: pypi, requirement: tensorflow-cpu}\n"
    )
    proc = run_tfbuild("matrix", "--format", "json", cwd=tmp_path)
    assert [v["name"] for v in json.loads(proc.stdout)["variants"]] == ["only-one"]


def test_json_is_asked_with_format_json_and_the_old_flag_still_works() -> None:
    """Every command that prints a table or a document takes `--format json`; `--json`, the
    old spelling, gives the same document (scripts that use it keep working) and is not
    shown in the help."""
    new = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--format", "json")
    old = run_tfbuild("detect", "--cpuinfo", str(HASWELL), "--json")
    assert new.returncode == old.returncode == 0, new.stderr + old.stderr
    same = {k: v for k, v in json.loads(new.stdout).items() if k != "detected_at"}
    assert same == {k: v for k, v in json.loads(old.stdout).items() if k != "detected_at"}
    for name in ("detect", "matrix", "inspect", "verify", "run", "compare"):
        shown = run_tfbuild(name, "--help", env={"COLUMNS": "200"}).stdout
        assert "--format" in shown and "json" in shown.split("--format", 1)[1], name
        assert "--json" not in shown, name


def test_matrix_says_a_caveat_of_several_variants_once() -> None:
    """The default matrix's source builds share a caveat (the build facts of their TensorFlow
    release): said once under the table, with the number of variants it is about, each of
    their rows marked with its number; a caveat of one variant stays in its row."""
    proc = run_tfbuild("matrix", env={"COLUMNS": "200"})
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(run_tfbuild("matrix", "--format", "json").stdout)
    shared = [v for v in plan["variants"] if any("build facts" in r for r in v["reasons"])]
    assert len(shared) >= 2, plan["variants"]
    (caveat,) = {r for v in shared for r in v["reasons"] if "build facts" in r}
    flat = " ".join(proc.stdout.split())
    assert flat.count(caveat) == 1, proc.stdout
    (note,) = [line for line in proc.stdout.splitlines() if caveat[:40] in line]
    mark = note.split(" ", 1)[0]
    assert note.startswith("[") and f"({len(shared)} variants)" in flat
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    for v in shared:
        (row,) = [r for r in rows if r.startswith(f"│ {v['name']} ")]
        assert mark in row, row


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


def test_matrix_explain_says_where_each_setting_comes_from(tmp_path: Path) -> None:
    """Every layer at once: the matrix named by --matrix, a default it sets on its line, one
    built in, one from the environment; values (a digest) whole on their line."""
    path = tmp_path / "m.yaml"
    path.write_text(
        'defaults:\n  python: "3.12"\n  base_images:\n    from: "docker.io/library/debian:bookworm'
        "@sha256:" + "8" * 64 + '"\nvariants:\n'
        '  - {name: stock, source: pypi, requirement: tensorflow-cpu==2.21.0, python: "3.12"}\n'
    )
    env = {"TFBUILD_WHEELS": str(tmp_path / "w"), "TFBUILD_BAZEL_CACHE": ""}
    proc = run_tfbuild("matrix", "--explain", "--matrix", str(path), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Settings (default < matrix < environment < option")
    rows = {line.split()[0]: line.split(None, 1)[1] for line in lines[1:] if line.startswith("  ")}
    assert rows["matrix"].split() == ["option", "--matrix", str(path)]
    assert rows["defaults.python"].split() == ["matrix", f"{path}:2", "3.12"]
    assert rows["defaults.base_images.from"].split()[-1].endswith("@sha256:" + "8" * 64)
    assert rows["defaults.tensorflow"].split() == ["default", "2.21.0"]
    assert rows["--store"].split() == ["environment", "TFBUILD_WHEELS", str(tmp_path / "w")]
    assert rows["--bazel-cache"].split() == ["default", "none"]  # an empty variable sets nothing
    assert "Variants in" in proc.stdout  # the plan follows
    document = json.loads(run_tfbuild("matrix", "--explain", "--format", "json", "--matrix",
                                      str(path), env=env).stdout)  # fmt: skip
    by_name = {s["name"]: s for s in document["settings"]}
    assert by_name["defaults.python"] == {"name": "defaults.python", "value": "3.12",
                                          "layer": "matrix", "where": f"{path}:2"}  # fmt: skip
    assert "settings" not in json.loads(
        run_tfbuild("matrix", "--format", "json", "--matrix", str(path)).stdout
    )


NEHALEM = FIXTURES / "cpuinfo" / "nehalem-xeon-x3430.cpuinfo"


def detecting(**given: Any) -> DetectSettings:
    settings = {"as_json": False, "cpuinfo": None, "host": None, "output": None, "schema": False,
                "matrix": None, **given}  # fmt: skip
    return DetectSettings(**settings)


def test_detect_describes_the_saved_cpuinfo_or_the_saved_profile(tmp_path: Path) -> None:
    """--cpuinfo: the machine that /proc/cpuinfo comes from; --host: the machine the profile
    describes, as saved."""
    from_cpuinfo = described_machine(detecting(cpuinfo=HASWELL))
    assert from_cpuinfo.to_json()["cpu"] == profile_from_cpuinfo(HASWELL).to_json()["cpu"]
    saved = tmp_path / "nehalem.json"
    saved.write_text(json.dumps(profile_from_cpuinfo(NEHALEM).to_json()))
    from_profile = described_machine(detecting(host=saved))
    assert from_profile.to_json() == json.loads(saved.read_text())
    assert from_profile.cpu.model_name == "Intel(R) Xeon(R) CPU X3430 @ 2.40GHz"


def test_detect_with_a_matrix_counts_and_names_the_variants_that_run(tmp_path: Path) -> None:
    haswell = plan_here(load_matrix(REPO / "matrix.yaml"), profile_from_cpuinfo(HASWELL))
    assert runnable_here(Path("matrix.yaml"), haswell) == (
        "\nmatrix.yaml: 4 of 6 variants can run here (stock, native, avx2-fma, mkl-avx2); "
        "`tfbuild matrix` says why the others cannot"
    )
    wide = tmp_path / "wide.yaml"
    wide.write_text("variants:\n  - {name: avx512, source: bazel, cpu_flags: [avx512f]}\n")
    nehalem = plan_here(load_matrix(wide), profile_from_cpuinfo(NEHALEM))
    assert runnable_here(wide, nehalem) == (
        f"\n{wide}: 0 of 1 variants can run here (none); `tfbuild matrix` says why the others "
        "cannot"
    )
