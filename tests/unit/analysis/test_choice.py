"""The "use this" block pasted on another machine: real pip in a fresh venv, in a clean folder
that holds nothing of the session, installs the very wheel the session measured (a local PEP 503
index stands in for the package index), and refuses any other file of the same name and
version."""

from __future__ import annotations

import os
import subprocess
import venv
from dataclasses import replace
from pathlib import Path

import pytest
from support import serve
from support.cext import pure_wheel, tagged_wheel
from support.cli import RESULTS, compare
from support.synthetic import session, write

from tfbuild.analysis.choice import WHEELS_VARIABLE
from tfbuild.ci.index import write_index
from tfbuild.config.model import PipSettings
from tfbuild.files import sha256_of
from tfbuild.results.model import Results, WheelRecord
from tfbuild.runtime.venv import LocalVenv
from tfbuild.store import Artifact


def _chosen(wheel: Path, source: str) -> Results:
    """A session whose recommended config (fast:single) measured `wheel`, from `source`."""
    doc = session({"fast:single": 1.3}, seed=2)
    fast = doc.variant("fast")
    record = WheelRecord(
        variant_id="tf1.0-py3.11-fast",
        wheel=f"wheels/tf1.0-py3.11-fast/{wheel.name}",
        sha256=sha256_of(wheel),
    )
    definition = {"name": "fast", "source": source, "requirement": "toytf"}
    return doc.with_variant("fast", replace(fast, definition=definition, artifact=record))


def _block(tmp_path: Path, results: Results) -> str:
    """The commands of the "use this" block, as a person copies them from the Markdown."""
    proc = compare(str(write(tmp_path / "session.json", results)), "--format", "markdown")
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split("```bash", 1)[1].split("```", 1)[0]


def _paste(block: str, tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The block run by bash in a fresh venv, from an empty folder, with pip told only what the
    test gives it (no pip.conf, no find-links of this machine)."""
    where = tmp_path / "elsewhere"
    (where / "cwd").mkdir(parents=True)
    venv.create(where / "venv", with_pip=True)
    scrubbed = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    path = f"{where / 'venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"
    return subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block],
        cwd=where / "cwd",
        env={**scrubbed, "PATH": path, "PIP_CONFIG_FILE": os.devnull, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _pasted_installs_only_what_was_measured(block: str, tmp_path: Path, measured: bool) -> None:
    """The block pasted elsewhere, pip told only the index in tmp_path/index: the toy build
    installed when the index serves the files measured; refused, nothing installed, when it
    serves another file under a measured name and version."""
    proc = _paste(block, tmp_path, {"PIP_INDEX_URL": (tmp_path / "index" / "simple").as_uri()})
    if measured:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "VERSION = '1.0'" in _installed(tmp_path)
    else:
        assert proc.returncode != 0
        assert "THESE PACKAGES DO NOT MATCH THE HASHES" in proc.stderr
        assert not list((tmp_path / "elsewhere" / "venv").rglob("toytf.py"))


def _installed(tmp_path: Path) -> str:
    """The toy module's source as the fresh venv has it."""
    proc = subprocess.run(
        [str(tmp_path / "elsewhere" / "venv" / "bin" / "python"), "-c",
         "import toytf, pathlib; print(pathlib.Path(toytf.__file__).read_text(), end='')"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return proc.stdout


def test_use_this_of_a_published_wheel_installs_from_its_index(tmp_path: Path) -> None:
    """With --wheels-url (where the nightly workflow's publish job deploys `tfbuild index`'s
    pages), the block installs the measured wheel from that index, served over HTTP, with
    nothing to set; TFBUILD_WHEELS still names another place."""
    store = tmp_path / "store"
    (store / "tf1.0-py3.11-fast").mkdir(parents=True)
    wheel = tagged_wheel(store / "tf1.0-py3.11-fast", "toytf", "py3-none-any", version="1.0+avx2")
    write_index(store)
    results = write(tmp_path / "session.json", _chosen(wheel, "bazel"))
    with serve.served(store) as site:
        url = f"{site}simple/"
        proc = compare(str(results), "--format", "markdown", "--wheels-url", url)
        assert proc.returncode == 0, proc.stderr
        block = proc.stdout.split("```bash", 1)[1].split("```", 1)[0]
        assert f'--find-links "${{{WHEELS_VARIABLE}:-{url}toytf/}}"' in block
        pasted = _paste(block, tmp_path, {"PIP_NO_INDEX": "1"})
    assert pasted.returncode == 0, pasted.stdout + pasted.stderr
    assert "VERSION = '1.0+avx2'" in _installed(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("served", ["measured", "another build"])
def test_use_this_from_the_package_index_installs_the_measured_wheel(
    tmp_path: Path, served: str
) -> None:
    """An index build: the block pins the version measured and checks the sha256, so pasted
    elsewhere it installs that wheel, and refuses a different file under the same name and
    version (a rebuilt or tampered upload) before anything is installed."""
    built = tmp_path / "built"
    built.mkdir()
    measured = pure_wheel(built, "toytf", "1.0", [])
    index = tmp_path / "index" / "toytf-store"
    index.mkdir(parents=True)
    if served == "measured":
        (index / measured.name).write_bytes(measured.read_bytes())
    else:
        other = tagged_wheel(index, "toytf", "py3-none-any", "Summary: another build\n")
        assert other.name == measured.name and sha256_of(other) != sha256_of(measured)
    write_index(tmp_path / "index")
    block = _block(tmp_path, _chosen(measured, "pypi"))
    assert "wheels/" not in block.split("# From", 1)[1]  # nothing of this machine's store
    _pasted_installs_only_what_was_measured(block, tmp_path, served == "measured")


@pytest.mark.slow
def test_use_this_of_a_wheel_on_no_index_asks_where_it_is(tmp_path: Path) -> None:
    """A source build is on no package index: the block says where the session's machine keeps
    it, stops with a message when TFBUILD_WHEELS is not set, and installs the measured wheel
    (a local version label and all) from the folder it names."""
    folder = tmp_path / "copied"
    folder.mkdir()
    wheel = tagged_wheel(folder, "toytf", "py3-none-any", version="1.0+avx2")
    block = _block(tmp_path, _chosen(wheel, "bazel"))
    assert "wheels/tf1.0-py3.11-fast/" in block and WHEELS_VARIABLE in block
    unset = _paste(block, tmp_path / "unset", {})
    assert unset.returncode != 0
    assert f"{WHEELS_VARIABLE}: a folder or page that holds the wheel" in unset.stderr
    proc = _paste(block, tmp_path, {WHEELS_VARIABLE: str(folder), "PIP_NO_INDEX": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "VERSION = '1.0+avx2'" in _installed(tmp_path)


@pytest.mark.slow  # two real venvs
@pytest.mark.parametrize("served", ["measured", "a rebuilt dependency"])
def test_use_this_installs_the_whole_runtime_as_measured(tmp_path: Path, served: str) -> None:
    """The runtime as a real local venv records it (pip's report of a real install of a toy
    build and its dependency from an index): `compare --requirements FILE` writes every
    package pinned to the sha256 of the file measured, and the block installs from FILE; run
    elsewhere (a fresh venv, pip told only the index) it installs exactly those files, and
    refuses a dependency rebuilt under the same version before anything is installed."""
    built, index = tmp_path / "built", tmp_path / "index" / "files"
    built.mkdir()
    index.mkdir(parents=True)
    measured = pure_wheel(built, "toytf", "1.0", ["toydep>=2"])
    dependency = pure_wheel(index, "toydep", "2.0", [])
    (index / measured.name).write_bytes(measured.read_bytes())
    write_index(tmp_path / "index")
    simple = (tmp_path / "index" / "simple").as_uri()
    artifact = Artifact("tf1.0-py3.11-fast", measured, sha256_of(measured), (), None)
    runtime = LocalVenv(artifact, tmp_path / "cache", PipSettings(simple, (), "inherit", ()))
    assert runtime.prepare() is True
    recorded = runtime.describe()
    assert {(p.name, p.version, p.sha256) for p in recorded.packages} == {
        ("toytf", "1.0", sha256_of(measured)), ("toydep", "2.0", sha256_of(dependency)),
    }  # fmt: skip
    doc = _chosen(measured, "pypi")
    doc = doc.with_variant("fast", replace(doc.variant("fast"), runtime=recorded))
    lock = tmp_path / "runtime.txt"
    proc = compare(
        str(write(tmp_path / "session.json", doc)), "--format", "markdown", "--requirements",
        str(lock),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    pins = [line for line in lock.read_text().splitlines() if not line.startswith("#")]
    assert pins == [
        f"toydep==2.0 --hash=sha256:{sha256_of(dependency)}",
        f"toytf==1.0 --hash=sha256:{sha256_of(measured)}",
    ]
    block = proc.stdout.split("```bash", 1)[1].split("```", 1)[0]
    assert f"pip install --require-hashes -r {lock}" in block
    assert "The whole runtime as measured: 2 packages, each pinned" in " ".join(block.split())
    if served != "measured":  # the same name and version, another file
        dependency.unlink()
        rebuilt = tagged_wheel(index, "toydep", "py3-none-any", "Summary: rebuilt\n", "2.0")
        assert sha256_of(rebuilt) != pins[0].rsplit(":", 1)[1]
        write_index(tmp_path / "index")
    _pasted_installs_only_what_was_measured(block, tmp_path, served == "measured")


def test_requirements_need_a_recorded_runtime_of_one_machine(tmp_path: Path) -> None:
    """A session whose runtime recorded no packages (made before tfbuild recorded them), or
    results of two machine classes: `--requirements` is a usage error naming why, and writes
    nothing."""
    lock = tmp_path / "runtime.txt"
    proc = compare(str(RESULTS / "session-default-quick.json"), "--requirements", str(lock))
    assert proc.returncode == 64, proc.stdout + proc.stderr
    assert f"--requirements {lock}: the session recorded no packages of the runtime of" in (
        " ".join(proc.stderr.split())
    )
    here = write(tmp_path / "here.json", session({"v:default": 1.0}, seed=1, session_id="a"))
    there = session({"v:default": 1.0}, seed=2, session_id="b", cpuinfo="zen4-epyc-9654.cpuinfo")
    elsewhere = write(tmp_path / "there.json", there)
    both = compare(str(here), str(elsewhere), "--requirements", str(lock))
    assert both.returncode == 64 and "the results are from 2 machine classes" in both.stderr
    assert not lock.exists() and "Traceback" not in proc.stderr + both.stderr


def test_use_this_of_a_model_form_says_the_form_and_how_it_is_made(tmp_path: Path) -> None:
    """A session whose fastest config ran the model converted to LiteRT: the answer names
    VARIANT:TUNING:litert, and what to use says the model must be in that form and how it was
    made; the as-given config of the same build and tuning is another config, never pooled
    with it."""
    doc = session({"base:default:litert": 2.0, "base:single": 1.0}, seed=3)
    forms = {c.key: c.form for c in doc.configs}
    assert forms["base:default"] == "as-given" and forms["base:default:litert"] == "litert"
    proc = compare(str(write(tmp_path / "session.json", doc)), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert '"base:default:litert"' in proc.stdout
    text = compare(str(tmp_path / "session.json")).stdout
    assert text.startswith("Use base:default:litert"), text[:300]
    said = " ".join(text.split())
    assert "# Use base with tuning default, the model in its litert form:" in said
    assert "the model in the form it was measured in (litert)" in said
    assert "TFLiteConverter.from_concrete_functions" in said
    assert "`tfbuild export --workload DIR -o model.tflite --python PYTHON`" in said
