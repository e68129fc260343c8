"""The container runtime without an engine: what it copies into a benchmark container (the
payload's configuration, the workload's paths as the container sees them) and how it describes
itself to results. Runtime images on a real engine: tests/integration/test_runtime_image.py."""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tfbuild import engine
from tfbuild.config.model import PipSettings
from tfbuild.runtime.container import DockerRuntime
from tfbuild.runtime.records import PayloadConfig, RuntimeRecord
from tfbuild.store import Artifact

WHEEL = "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl"
IMAGE_ID = "sha256:" + "f" * 64


class FakeEngine:
    """The engine calls of a benchmark run, answered here: what is copied into each
    container, and the volumes filled."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.copied: list[bytes] = []
        self.filled: list[str] = []
        self.specs: list[engine.ContainerSpec] = []

        @contextlib.contextmanager
        def container(spec: engine.ContainerSpec) -> Iterator[object]:
            self.specs.append(spec)
            yield object()

        def filled_volume(name: str, *args: Any) -> bool:
            self.filled.append(name)
            return True

        answers: dict[str, Any] = {
            "container": container,
            "put_archive": lambda made, path, data: self.copied.append(data),
            "run_to_end": lambda made, log, timeout: (0, False),
            "output_of": lambda made, stdout=True: "",
            "read_file": lambda made, path: None,
            "filled_volume": filled_volume,
            "image_info": lambda tag: {"id": IMAGE_ID, "labels": {}},
        }
        for name, answer in answers.items():
            monkeypatch.setattr(engine, name, answer)

    def files(self) -> dict[str, bytes]:
        """The files copied into the last container."""
        with tarfile.open(fileobj=io.BytesIO(self.copied[-1])) as tar:
            return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}  # type: ignore[union-attr]


def runtime(tmp_path: Path, cpuset: str | None = None) -> DockerRuntime:
    made = DockerRuntime(
        Artifact("tf", tmp_path / WHEEL, "2b" * 32, (), None),
        settings=PipSettings("inherit", "inherit", "inherit", ()),
        base_image="tfbuild/base:bookworm",
        template_dirs=[],
        log_dir=tmp_path,
        cpuset=cpuset,
    )
    made.image = "tfbuild/runtime:2b2b2b2b2b2b2b2b-0123456789"
    return made


def test_a_benchmark_container_gets_the_config_the_payload_has_always_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEngine(monkeypatch)
    config = PayloadConfig(benchmarks=("matmul-fed",), intra_op=2, inter_op=1, xla=None)
    runtime(tmp_path).run(config, {"OMP_NUM_THREADS": "2"}, [1], timeout=60)
    files = fake.files()
    assert set(files) == {"payload.py", "config.json"}
    assert files["config.json"] == (
        b'{"benchmarks": ["matmul-fed"], "intra_op": 2, "inter_op": 1, "xla": null, "cpus": [1]}'
    )
    assert fake.specs[-1].cpuset == "1"


def test_a_workload_is_shipped_once_and_the_payload_told_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The smoke test of a workload: the spec's paths are the container's, in the volume the
    workload was shipped in (filled once for every process of the runtime)."""
    fake = FakeEngine(monkeypatch)
    (tmp_path / "m.keras").write_bytes(b"a model")
    spec: dict[str, Any] = {
        "kind": "keras", "path": str(tmp_path / "m.keras"), "signature": None, "batch": 4,
        "shapes": {"x": [1, 2]}, "inputs": None, "calls": 7, "files": [],
    }  # fmt: skip
    made = runtime(tmp_path)
    for _ in range(2):
        made.run(PayloadConfig(smoke_test=True, workload=spec), {}, None, timeout=60)
    assert len(fake.filled) == 1
    files = fake.files()
    assert set(files) == {"payload.py", "config.json", "workload_payload.py", "workload_forms.py"}
    sent = json.loads(files["config.json"])
    assert list(sent) == [
        "benchmarks", "intra_op", "inter_op", "workload", "check_workload", "cpus"
    ]  # fmt: skip
    assert sent["workload"] == {**spec, "path": "/io/workload/model.keras"}
    assert sent["check_workload"] is True and sent["cpus"] is None


def test_a_container_runtime_is_described_as_results_record_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    FakeEngine(monkeypatch)
    described = runtime(tmp_path, cpuset="0-1").describe()
    assert list(described.to_json().items()) == [
        ("kind", "docker"),
        ("image", "tfbuild/runtime:2b2b2b2b2b2b2b2b-0123456789"),
        ("image_id", IMAGE_ID),
        ("base_image", "tfbuild/base:bookworm"),
        ("wheel", WHEEL),
        ("sha256", "2b" * 32),
        ("network", "none"),
        ("user", engine.BENCH_USER),
        ("cpuset", "0-1"),
    ]
    assert RuntimeRecord.from_json(json.loads(json.dumps(described.to_json()))) == described
    monkeypatch.setattr(engine, "image_info", lambda tag: None)
    gone = runtime(tmp_path).describe().to_json()
    assert gone["image_id"] is None and gone["cpuset"] is None and len(gone) == 9


def test_what_a_form_needs_is_installed_by_the_wheels_own_pip_line(tmp_path: Path) -> None:
    """A runtime asked for ai-edge-litert (a session measuring litert) installs it in the
    wheel's pip command, each requirement quoted for the shell, and the script's next line is
    still its own; without it the line is as before. bash reads both scripts."""
    import shlex
    import subprocess

    from tfbuild.build.render import template_dirs
    from tfbuild.config.model import INHERIT_PIP

    wheel = tmp_path / "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_17_x86_64.whl"
    wheel.write_bytes(b"")
    artifact = Artifact("tf2.21-py3.11-stock", wheel, "0" * 64, (), None)
    scripts = {}
    for beside in ((), ("ai-edge-litert==2.3.0", "a b")):
        runtime = DockerRuntime(artifact, settings=INHERIT_PIP, base_image="b",
                                template_dirs=template_dirs(None), log_dir=tmp_path,
                                beside=beside)  # fmt: skip
        script = scripts[beside] = runtime._script()
        lines = script.splitlines()
        (at,) = [i for i, line in enumerate(lines) if "./wheel/" in line]
        assert shlex.split(lines[at]) == [f"./wheel/{wheel.name}", *beside]
        assert lines[at + 1] == "cd /"
        assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    assert scripts[()] != scripts[("ai-edge-litert==2.3.0", "a b")]
