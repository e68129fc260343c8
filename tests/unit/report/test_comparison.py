"""`tfbuild compare` as a person reads it: the golden outputs, and the "use this" block (quoted for
the shell, whole on its lines, saying why)."""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from support.cli import RESULTS, compare, run_tfbuild
from support.golden import check_golden
from support.synthetic import session, write

GOLDEN = RESULTS
REAL = GOLDEN / "session-2x2-10rounds.json"


@pytest.mark.parametrize(
    ("fmt", "golden"), [("table", "golden.table.txt"), ("markdown", "golden.md")]
)
def test_golden_output(fmt: str, golden: str) -> None:
    """The report of a real 10-round session (stock TF vs intel-tensorflow, two tunings).

    TFBUILD_UPDATE_GOLDEN=1 rewrites the golden files after an intended change (never in CI).
    """
    proc = compare(REAL.name, "--format", fmt)
    assert proc.returncode == 0, proc.stderr
    check_golden({GOLDEN / golden: proc.stdout})


def test_use_this_block_names_env_and_threading(tmp_path: Path) -> None:
    doc = session({"fast:single": 1.3}, seed=2)
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert proc.returncode == 0, proc.stderr
    use = proc.stdout.split("Use this", 1)[1]
    assert (
        "Use fast with tuning single: fast:single is faster than the baseline base:default "
        "(1.3" in use.replace("\n# ", " ")
    )
    assert "and the fastest config measured or within the 5.0% margin of it" in use.replace(
        "\n# ", " "
    )
    assert "export OMP_NUM_THREADS=1" in use
    assert "tf.config.threading.set_intra_op_parallelism_threads(1)" in use
    sha = hashlib.sha256(b"fast").hexdigest()  # the synthetic session's "wheel"
    hashed = f"echo 'fast==2.21.0 --hash=sha256:{sha}' | pip install --no-deps --require-hashes"
    assert hashed in use
    assert "\npip install fast==2.21.0\n" in use


def test_use_this_lines_are_quoted_for_the_shell(tmp_path: Path) -> None:
    """Values from a results file (a shared CI artifact, say) reach the printed shell lines
    only quoted: a list of preloads stays one word, a command substitution stays text, in the
    variables and the constraints alike; a sha256 that is not one is refused with the file."""
    doc = session({"fast:single": 1.3}, seed=2)
    env = {"LD_PRELOAD": "/a.so /b.so", "X": "$(touch /tmp/pwned)", "A;B": "1"}
    configs = tuple(replace(c, env=env) if c.key == "fast:single" else c for c in doc.configs)
    fast = doc.variant("fast")
    assert fast.artifact is not None
    artifact = replace(fast.artifact, sha256="0$(id)")
    bad = write(tmp_path / "bad.json", doc.with_variant("fast", replace(fast, artifact=artifact)))
    refused = compare(str(bad))
    assert refused.returncode == 9 and refused.stdout == "", refused.stdout
    assert "variants.fast.artifact.sha256: '0$(id)' does not match ^[0-9a-f]{64}$" in (
        refused.stderr
    )  # fmt: skip
    artifact = replace(fast.artifact, constraints=("numpy<2; touch /x",))
    doc = replace(doc.with_variant("fast", replace(fast, artifact=artifact)), configs=configs)
    proc = compare(str(write(tmp_path / "s.json", doc)), "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    block = proc.stdout.split("```bash", 1)[1].split("```", 1)[0]
    lines = [line for line in block.splitlines() if line and not line.startswith("#")]
    sha = fast.artifact.sha256
    assert [shlex.split(line) for line in lines] == [
        ["echo", f"fast==2.21.0 --hash=sha256:{sha}", "|", "pip", "install", "--no-deps",
         "--require-hashes", "-r", "/dev/stdin"],
        ["pip", "install", "fast==2.21.0", "numpy<2; touch /x"],
        ["export", "LD_PRELOAD=/a.so /b.so"],
        ["export", "X=$(touch /tmp/pwned)"],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("effect", "expected"),
    [
        (0.7, "no config measured is faster than the baseline base:default by more than the"),
        (1.0, "no config measured is faster than the baseline base:default by more than the"),
    ],
)
def test_use_this_keeps_the_baseline_and_says_why(
    tmp_path: Path, effect: float, expected: str
) -> None:
    doc = session({"other:default": effect}, seed=4)
    proc = compare(str(write(tmp_path / "s.json", doc)))
    assert proc.returncode == 0, proc.stderr
    use = proc.stdout.split("Use this", 1)[1]
    reason = " ".join(line.removeprefix("# ") for line in use.splitlines() if line.startswith("#"))
    assert f"Use base with tuning default: {expected}" in reason


def test_sessions_without_seed_pairs_report_no_seed_experiments(tmp_path: Path) -> None:
    """A suite subset with no pair of counterpart benchmarks: every format still renders."""
    path = write(tmp_path / "s.json", session({"fast:single": 1.3}, seed=2))
    titles = {"table": "The seed experiments within", "markdown": "### Seed experiments",
              "html": "<h3>Seed experiments</h3>"}  # fmt: skip
    for fmt, title in titles.items():
        proc = compare(str(path), "--format", fmt, "--output", str(tmp_path / f"out.{fmt}"))
        assert proc.returncode == 0, proc.stderr
        assert title not in (tmp_path / f"out.{fmt}").read_text()


def test_use_this_survives_copy_and_paste() -> None:
    """However narrow the terminal, the wheel path and every command of the "use this" block
    stay whole on their own lines."""
    name = "default-run-epyc.json.gz"
    (host,) = json.loads(compare(name, "--format", "json").stdout)["hosts"]
    commands = host["choice"]["install"]
    assert len(commands[0]) > 120
    proc = run_tfbuild("compare", name, cwd=GOLDEN, env={"COLUMNS": "80"})
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("Use this", 1)[1].splitlines()
    assert f"# wheel: {host['choice']['wheel']}" in lines
    assert all(command in lines for command in commands)
    reason = lines[1 : lines.index(f"# wheel: {host['choice']['wheel']}")]
    assert len(reason) > 1 and all(line.startswith("# ") and len(line) <= 100 for line in reason)
