"""`--workload` on this side of the runtime: what the path is, what the session records, what
is refused before anything is installed, and how the model is shipped into a container."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pytest
from support.cli import run_tfbuild
from support.env import FIXTURES, REPO

from tfbuild.bench.workload import (
    WorkloadRequest,
    digest_of,
    payload_spec,
    resolve,
    suite_entries,
)
from tfbuild.config.suite import SUITE_VERSION
from tfbuild.errors import WorkloadError
from tfbuild.results.model import Workload
from tfbuild.runtime.base import workload_files
from tfbuild.runtime.container import workload_volume


def savedmodel(folder: Path) -> Path:
    (folder / "variables").mkdir(parents=True)
    (folder / "saved_model.pb").write_bytes(b"\x08\x01")
    (folder / "variables" / "variables.index").write_bytes(b"index")
    return folder


def test_the_kind_comes_from_the_path(tmp_path: Path) -> None:
    model = savedmodel(tmp_path / "sm")
    keras = tmp_path / "m.keras"
    keras.write_bytes(b"PK")
    script = tmp_path / "w.py"
    script.write_text("def step(state):\n    return None\n")
    assert resolve(WorkloadRequest(path=model)).kind == "savedmodel"
    assert resolve(WorkloadRequest(path=keras)).kind == "keras"
    assert resolve(WorkloadRequest(path=script)).kind == "script"
    record = resolve(WorkloadRequest(path=model, batch=8, shapes=("scale=8,3",)))
    assert (record.signature, record.batch, dict(record.shapes)) == (
        "serving_default",
        8,
        {"scale": (8, 3)},
    )
    assert record.digest == digest_of(model) and len(record.digest) == 64
    its, samples, units = suite_entries(record)
    assert its == {"workload": 50, "workload-p50": 200, "workload-p90": 200, "workload-p99": 200}
    assert samples["workload"] == 3 and units["workload-p99"] == "calls/s (1/p99 latency)"


@pytest.mark.parametrize(
    ("make", "request_of", "message"),
    [
        (lambda p: p / "none", lambda p: WorkloadRequest(path=p), "no such file or directory"),
        (
            lambda p: (p / "dir").mkdir() or p / "dir",
            lambda p: WorkloadRequest(path=p),
            "a directory without saved_model.pb, so not a SavedModel",
        ),
        (
            lambda p: (p / "m.onnx").write_bytes(b"x") and p / "m.onnx",
            lambda p: WorkloadRequest(path=p),
            "not a model (.onnx); expected a SavedModel directory",
        ),
        (
            lambda p: (p / "w.py").write_text("x = 1\n") and p / "w.py",
            lambda p: WorkloadRequest(path=p, batch=4, signature="s"),
            "--signature, --batch: a script workload",
        ),
        (
            lambda p: (p / "m.keras").write_bytes(b"PK") and p / "m.keras",
            lambda p: WorkloadRequest(path=p, signature="serving_default"),
            "a Keras file",
        ),
        (
            lambda p: savedmodel(p / "sm"),
            lambda p: WorkloadRequest(path=p, shapes=("scale:8x3",)),
            "--shape 'scale:8x3': expected NAME=D1,D2",
        ),
        (
            lambda p: savedmodel(p / "sm"),
            lambda p: WorkloadRequest(path=p, shapes=("scale=8,0",)),
            "dimension (each at least 1)",
        ),
        (
            lambda p: savedmodel(p / "sm"),
            lambda p: WorkloadRequest(path=p, inputs=p / "saved_model.pb"),
            "expected an .npz file",
        ),
    ],
)
def test_what_is_wrong_without_tensorflow_is_refused_first(
    tmp_path: Path, make: object, request_of: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    with pytest.raises(WorkloadError, match=message.replace("(", r"\(").replace(")", r"\)")):
        resolve(request_of(path))  # type: ignore[operator]


def test_the_digest_follows_content_and_names(tmp_path: Path) -> None:
    a = savedmodel(tmp_path / "a")
    b = savedmodel(tmp_path / "b")
    assert digest_of(a) == digest_of(b)  # the folder's own name is not part of the model
    (b / "variables" / "variables.index").write_bytes(b"other")
    assert digest_of(a) != digest_of(b)
    (b / "variables" / "variables.index").write_bytes(b"index")
    (b / "variables" / "variables.index").rename(b / "variables" / "renamed.index")
    assert digest_of(a) != digest_of(b)


def test_a_tolerance_goes_to_the_runtime_and_the_results_only_when_given(
    tmp_path: Path,
) -> None:
    """--atol/--rtol reach the payload's spec and the results (where --resume reads them back);
    unset, neither says a word of them and the runtime's defaults hold. Not in the identity:
    they decide which forms pass, not what is timed."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "saved_model.pb").write_bytes(b"")
    plain = resolve(WorkloadRequest(path=model))
    loose = resolve(WorkloadRequest(path=model, atol=0.01, rtol=0.5))
    assert "atol" not in payload_spec(plain) and "atol" not in plain.to_json()
    assert (payload_spec(loose)["atol"], payload_spec(loose)["rtol"]) == (0.01, 0.5)
    assert Workload.from_json(loose.to_json()) == loose
    assert loose.identity() == plain.identity()
    assert loose.describe().endswith(", generated inputs, --atol 0.01, --rtol 0.5")


def test_workload_options_need_a_workload() -> None:
    proc = run_tfbuild("bench", "--batch", "4", "--shape", "x=4,2", cwd=REPO)
    assert proc.returncode == 64, proc.stderr
    assert "--batch, --shape: only with --workload PATH" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_path_that_is_no_model_stops_the_session_before_anything_installs(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    proc = run_tfbuild(
        "bench", "--workload", str(tmp_path / "notes.txt"), "--results", str(tmp_path / "r"),
        cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 15, proc.stderr
    assert f"--workload {tmp_path / 'notes.txt'}: not a model (.txt)" in proc.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").iterdir())


def test_a_container_gets_the_model_in_a_volume_named_by_its_contents(tmp_path: Path) -> None:
    """The workload's volume: its files read-only and root's (folders 0555), the payload's
    spec pointing under /io/workload, and a name that follows the contents: the same files
    elsewhere name the same volume (filled once, found again), changed ones another."""
    model = savedmodel(tmp_path / "sm")
    inputs = tmp_path / "in.npz"
    inputs.write_bytes(b"npz")
    spec = payload_spec(resolve(WorkloadRequest(path=model)))
    spec["inputs"] = str(inputs)
    name, data, moved = workload_volume(spec)
    assert moved["path"] == "/io/workload/model" and moved["inputs"] == "/io/workload/inputs.npz"
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name: m for m in tar.getmembers()}
    files = ["inputs.npz", "model/saved_model.pb", "model/variables/variables.index"]
    assert sorted(m for m in members if members[m].isfile()) == files
    for f in files:
        assert (members[f].mode, members[f].uid) == (0o444, 0), f
    for folder in ("model", "model/variables"):
        assert members[folder].isdir() and members[folder].mode == 0o555, folder
    shutil.copytree(tmp_path / "sm", tmp_path / "elsewhere" / "sm")
    shutil.copy(inputs, tmp_path / "elsewhere" / "in.npz")
    again = payload_spec(resolve(WorkloadRequest(path=tmp_path / "elsewhere" / "sm")))
    again["inputs"] = str(tmp_path / "elsewhere" / "in.npz")
    assert workload_volume(again)[0] == name and name.startswith("tfbuild-workload-")
    (tmp_path / "elsewhere" / "in.npz").write_bytes(b"other")
    assert workload_volume(again)[0] != name


def test_a_resumed_session_refuses_a_model_that_changed(tmp_path: Path) -> None:
    """The committed workload session, made incomplete, resumed from a folder where the model's
    path holds other files (and then none): refused before anything runs, both hashes named."""
    document = json.loads(
        gzip.decompress((FIXTURES / "results" / "workload-run.json.gz").read_bytes())
    )
    document["session"]["complete"] = False
    document["suite"]["version"] = SUITE_VERSION  # resumable by this tfbuild
    recorded = document["suite"]["workload"]["digest"]
    path = tmp_path / "session.json"
    path.write_text(json.dumps(document))
    savedmodel(tmp_path / document["suite"]["workload"]["path"])
    changed = run_tfbuild(
        "bench", "--resume", str(path), "--store", str(tmp_path / "w"), cwd=tmp_path
    )
    assert changed.returncode == 9, changed.stderr
    now = digest_of(tmp_path / "gru-savedmodel")
    assert (
        f"the session measured savedmodel gru-savedmodel (sha256 {recorded[:12]}), and it has "
        f"changed (sha256 {now[:12]})"
    ) in " ".join(changed.stderr.split())
    shutil.rmtree(tmp_path / "gru-savedmodel")
    gone = run_tfbuild("bench", "--resume", str(path), "--store", str(tmp_path / "w"), cwd=tmp_path)
    assert gone.returncode == 9 and "and it is gone" in gone.stderr, gone.stderr


def test_digests_recorded_before_stay_what_they_were(tmp_path: Path) -> None:
    """A file's digest is the sha256 of its bytes, a folder's the sha256 over each file's
    relative path, a NUL and its own sha256, in path order: what sessions already recorded."""
    model = savedmodel(tmp_path / "sm")
    assert digest_of(model / "saved_model.pb") == hashlib.sha256(b"\x08\x01").hexdigest()
    h = hashlib.sha256()
    for name, data in (("saved_model.pb", b"\x08\x01"), ("variables/variables.index", b"index")):
        h.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    assert digest_of(model) == h.hexdigest()


def scripted(folder: Path, files: str) -> Path:
    """A script reading what lies beside it, and that: data/scale.txt and vocab/*.txt."""
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "scale.txt").write_text("2.5\n")
    (folder / "vocab").mkdir()
    (folder / "vocab" / "a.txt").write_text("a\n")
    (folder / "notes.md").write_text("not read\n")
    script = folder / "step.py"
    script.write_text(
        f"from pathlib import Path\n\nFILES = {files}\n\ndef step(state):\n    pass\n"
    )
    return script


def test_a_scripts_files_are_in_its_digest_and_shipped_beside_it(tmp_path: Path) -> None:
    script = scripted(tmp_path / "w", '["data/scale.txt", "vocab/"]')
    annotated = scripted(tmp_path / "a", '("data/scale.txt",)')
    annotated.write_text(annotated.read_text().replace("FILES =", "FILES: tuple[str, ...] ="))
    assert resolve(WorkloadRequest(path=annotated)).files == ("data/scale.txt",)
    record = resolve(WorkloadRequest(path=script))
    assert record.files == ("data/scale.txt", "vocab")
    assert "with data/scale.txt, vocab" in record.describe()
    before = record.digest
    (tmp_path / "w" / "notes.md").write_text("changed, and not in FILES\n")
    assert resolve(WorkloadRequest(path=script)).digest == before
    (tmp_path / "w" / "vocab" / "b.txt").write_text("b\n")
    assert resolve(WorkloadRequest(path=script)).digest != before
    files, moved = workload_files(payload_spec(record), "workload")
    assert moved["path"] == "workload/step.py"
    assert sorted(files) == [
        "workload/data/scale.txt",
        "workload/step.py",
        "workload/vocab/a.txt",
        "workload/vocab/b.txt",
    ]
    assert files["workload/data/scale.txt"] == b"2.5\n"
    plain = tmp_path / "plain.py"
    plain.write_text("def step(state):\n    pass\n")
    assert resolve(WorkloadRequest(path=plain)).files == ()
    assert sorted(workload_files(payload_spec(resolve(WorkloadRequest(path=plain))), "w")[0]) == [
        "w/plain.py"
    ]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ('["/etc/passwd"]', "FILES names '/etc/passwd'; expected a path relative to"),
        ('["../outside.txt"]', "FILES names '../outside.txt'; expected a path relative to"),
        ('["."]', "FILES names '.'; expected a path relative to the script's folder, below it"),
        ('["data/missing.txt"]', "FILES names 'data/missing.txt', and "),
        ('["step.py"]', "FILES names the script itself ('step.py')"),
        ("[Path('data')]", "FILES is computed; expected a list of paths written out"),
        ('"data/scale.txt"', "FILES = 'data/scale.txt'; expected a list of paths"),
        ('["data", 3]', "FILES = ['data', 3]; expected a list of paths"),
    ],
)
def test_a_files_entry_that_cannot_be_shipped_is_refused_with_its_line(
    tmp_path: Path, files: str, message: str
) -> None:
    script = scripted(tmp_path / "w", files)
    with pytest.raises(WorkloadError) as raised:
        resolve(WorkloadRequest(path=script))
    assert str(raised.value).startswith(f"--workload {script.resolve()}:3: FILES"), raised.value
    assert message in str(raised.value)


def test_a_script_that_is_not_python_is_refused_with_its_line(tmp_path: Path) -> None:
    script = tmp_path / "w.py"
    script.write_text("def step(state):\n    return (\n")
    with pytest.raises(WorkloadError, match=r"w\.py:2: not valid Python"):
        resolve(WorkloadRequest(path=script))
