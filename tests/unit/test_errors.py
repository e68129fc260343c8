"""Mistakes a user makes, each met by one clear message with its own exit code and no traceback:
what was given, what is accepted, what to do. Real commands in a subprocess; pip asks the real
package index where the case is about what the index has."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pytest
from support.cli import RESULTS, run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.audit.verdict import target_for_model
from tfbuild.cli.app import cli

PENRYN = FIXTURES / "cpuinfo" / "penryn-core2-duo-t9600.cpuinfo"


def _clean(proc: subprocess.CompletedProcess[str], code: int) -> str:
    """stderr of a command that must have failed with `code` in one message, no traceback."""
    assert proc.returncode == code, (proc.returncode, proc.stdout[-500:], proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return " ".join(proc.stderr.split())


def _matrix(folder: Path, requirement: str) -> Path:
    path = folder / "matrix.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            schema_version: 1
            variants:
              - name: future
                source: pypi
                requirement: {requirement}
            tunings:
              - name: default
            baseline:
              variant: future
              tuning: default
            """
        )
    )
    return path


def test_a_minor_release_means_its_newest_patch_release() -> None:
    """`--tensorflow 2.21` is a 2.21.x release: the newest the package index has (asked with
    the matrix's pip settings), said on stderr and built; a release with no era is refused
    with the eras known."""
    proc = run_tfbuild(
        "build", "--variant", "avx2-fma", "--tensorflow", "2.21", "--dry-run", cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    newest = re.search(r"--tensorflow 2\.21: (2\.21\.\d+), the newest 2\.21 release on the "
                       r"package index", proc.stderr)  # fmt: skip
    assert newest, proc.stderr
    assert f"# tfbuild recipe for avx2-fma (tf2.21-py3.11-avx2-fma): TensorFlow {newest.group(1)}" \
        in proc.stdout  # fmt: skip
    err = _clean(
        run_tfbuild(
            "build", "--variant", "mkl-avx2", "--tensorflow", "2.99.0", "--dry-run", cwd=REPO
        ),
        64,
    )
    assert "no build recipe for this release" in err and "like 2.22.0" in err
    assert "2.12.x to 2.22.x" in err


@pytest.mark.parametrize(
    ("document", "says"),
    [
        ({"version": "1.0", "metadata": {}, "benchmarks": []}, "it looks like pyperf's JSON"),
        ({"results": [{"command": "sleep 1", "mean": 1.0}]}, "looks like hyperfine's"),
        ([1, 2], "a JSON list, not an object"),
        ({"schema": "tfbuild.compare/2", "hosts": []}, "the output of `tfbuild compare"),
    ],
)
def test_compare_of_another_tool_s_json_says_what_it_is(
    tmp_path: Path, document: object, says: str
) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(document))
    err = _clean(run_tfbuild("compare", str(path)), 9)
    assert says in err and "schema is" not in err
    assert "(what `tfbuild bench` and `tfbuild run` write)" in err


def test_a_calibration_in_the_results_folder_is_passed_over(tmp_path: Path) -> None:
    """`tfbuild calibrate` writes into the results folder, so `compare results` meets it."""
    for name in ("calibration-3configs-10rounds.json.gz", "session-2x2-10rounds.json"):
        (tmp_path / name).write_bytes((RESULTS / name).read_bytes())
    proc = run_tfbuild("compare", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert "passing over" in proc.stderr and "calibration-3configs" in proc.stderr
    (host,) = json.loads(proc.stdout)["hosts"]
    assert host["sessions"] == [str(tmp_path / "session-2x2-10rounds.json")]


def test_inspect_of_a_file_that_is_no_wheel(tmp_path: Path) -> None:
    (tmp_path / "notawheel.txt").write_text("hello\n")
    err = _clean(run_tfbuild("inspect", "notawheel.txt", "--matrix", str(REPO / "matrix.yaml"),
                             cwd=tmp_path), 14)  # fmt: skip
    assert "notawheel.txt: not a wheel" in err and "unknown variant" not in err


def test_the_gate_against_another_machine_class_fails(tmp_path: Path) -> None:
    """Old results of the same suite from another machine class compare with nothing: the gate
    says so and fails, instead of passing empty."""
    document = json.loads(gzip.decompress((RESULTS / "default-run.json.gz").read_bytes()))
    document["session"]["host_key"] = "another machine / x86-64-v2 / 8 CPUs"
    old = tmp_path / "elsewhere.json"
    old.write_text(json.dumps(document))
    proc = run_tfbuild("compare", str(RESULTS / "default-run.json.gz"), "--against", str(old))
    err = _clean(proc, 10)
    assert "nothing compared: the old results are from another machine / x86-64-v2" in err
    assert "--allow-different-hosts" in err
    proc = run_tfbuild(
        "compare", str(RESULTS / "default-run.json.gz"), "--against", str(old),
        "--allow-different-hosts", "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["against"]["changes"]


def test_a_release_the_index_does_not_have(tmp_path: Path) -> None:
    """`matrix` does not call it runnable; `fetch` says the index has no such wheel and which
    it has (real pip, the real index), not pip's raw output."""
    matrix = _matrix(tmp_path, "tensorflow-cpu==2.99.0")
    proc = run_tfbuild("matrix", "--matrix", str(matrix), env={"COLUMNS": "300"})
    assert proc.returncode == 0, proc.stderr
    row = next(line for line in proc.stdout.splitlines() if "future (baseline)" in line)
    assert "│ unknown: TensorFlow 2.99.0 is no release tfbuild has facts for" in row
    store = tmp_path / "wheels"
    err = _clean(run_tfbuild("fetch", "--matrix", str(matrix), "--store", str(store)), 8)
    assert err.startswith("tfbuild: tensorflow-cpu==2.99.0: no wheel on the package index")
    assert "2.21.0" in err and "ERROR:" not in err and "+ " not in err


def test_a_build_for_a_machine_it_cannot_run_on_says_so(tmp_path: Path) -> None:
    profile = tmp_path / "penryn.json"
    proc = run_tfbuild("detect", "--cpuinfo", str(PENRYN), "--output", str(profile))
    assert proc.returncode == 0, proc.stderr
    proc = run_tfbuild("build", "--variant", "avx512", "--host", str(profile), "--dry-run",
                       cwd=REPO)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    err = " ".join(proc.stderr.split())
    assert f"warning: avx512 will not run on the machine in {profile}: needs" in err
    assert "AVX512F" in err and "this CPU has up to SSE4.1" in err


@pytest.mark.parametrize(
    ("model", "march"),
    [("penryn", "core2"), ("Penryn-v1", "core2"), ("haswell", "haswell"),
     ("EPYC-Genoa", "znver4"), ("x86-64-v3", "x86-64-v3"), ("X86-64-V2", "x86-64-v2")],
)  # fmt: skip
def test_cpu_models_in_any_case_and_version(model: str, march: str) -> None:
    assert target_for_model(model).label == f"{model} (as -march={march})"


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("variants:\n  - name: a\n    source: pypi\n   requirement: x\n", 4,
         "'requirement' is indented by 3 spaces and 'source' on line 3 by 4"),
        ("variants:\n  - name: a\n  source: pypi\n", 3,
         "'source' is indented like the list item on line 2 but does not start with '- '"),
        ("variants: [a, b\n", 2, "the '[' on line 1 is not closed"),
        ("variants:\n\t- a\n", 2, "a tab character: YAML indents with spaces only"),
        ("name: a: b\n", 1, "a ': ' inside a value"),
    ],
)  # fmt: skip
def test_yaml_mistakes_in_plain_words(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    err = _clean(run_tfbuild("matrix", "--matrix", str(path)), 2)
    assert err.startswith(f"{path}:{line}:") and says in err
    assert "<block" not in err and "expected <" not in err


@pytest.mark.parametrize("command", ["fetch", "inspect", "bench"])
def test_ctrl_c_says_what_was_kept_for_that_command(tmp_path: Path, command: str) -> None:
    """SIGINT half a second into the command (while pip asks the index): exit 130, and only
    bench speaks of --resume."""
    matrix = _matrix(tmp_path, "tensorflow-cpu==2.21.0")
    args = {
        "fetch": ["fetch", "--matrix", str(matrix), "--store", str(tmp_path / "w")],
        "inspect": ["inspect", "future", "--matrix", str(matrix), "--store", str(tmp_path / "w")],
        "bench": ["bench", "--matrix", str(matrix), "--store", str(tmp_path / "w"),
                  "--results", str(tmp_path / "r"), "--runtime", "local",
                  "--cache-dir", str(tmp_path / "c")],
    }[command]  # fmt: skip
    script = (
        "import signal, sys\n"
        "from tfbuild.cli import main\n"
        "signal.signal(signal.SIGALRM, signal.default_int_handler)\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.5)\n"
        "main(sys.argv[1:])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
    )  # fmt: skip
    err = _clean(proc, 130)
    assert proc.stderr.strip().splitlines()[-1].startswith("tfbuild: interrupted; ")
    assert ("--resume" in err) == (command == "bench")


def test_help_names_every_command_and_every_option_says_what_it_does() -> None:
    proc = run_tfbuild("--help", env={"COLUMNS": "200"})
    assert proc.returncode == 0
    for name in cli.commands:
        assert f"\n  {name} " in proc.stdout, name
    assert "keep" in run_tfbuild("ci", "--help").stdout

    def silent(command: click.Command, prefix: str) -> list[str]:
        if isinstance(command, click.Group):
            return [o for n, c in command.commands.items() for o in silent(c, f"{prefix} {n}")]
        return [
            f"{prefix} {p.opts[0]}"
            for p in command.params
            if isinstance(p, click.Option) and not p.hidden and not p.help
        ]

    assert silent(cli, "tfbuild") == []
