"""`tfbuild build` on a real Docker engine.

The recipe machinery end to end uses the toy recipe (tests/fixtures/toy-recipe): the same render,
image build, build container with the shared cache volume, export, local label, manifests and
runtime image as a TensorFlow build, around a tiny C extension that real bazel (Debian's
bazel-bootstrap 4.2.3, which builds offline what needs no external repository) compiles with each
variant's copts and the recipe's bazel arguments, because a full TensorFlow build needs network
access that CI machines lack. test_bazel_cache.py shows its disk and remote caches at work. The
real TensorFlow 2.15 recipe's toolchain stage is built too.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support.cli import on_terminal, run_tfbuild, toy_build, toy_build_args, toy_cache
from support.docker import containers, inspected
from support.env import BASE_IMAGE, FIXTURES, TOY

from tfbuild import engine, wheelfile
from tfbuild.audit import isa
from tfbuild.build.estimate import BazelProgress, plain
from tfbuild.build.render import PREFLIGHT, template_dirs
from tfbuild.build.stage import BuildOptions, prepare
from tfbuild.config.load import load_matrix
from tfbuild.config.model import PipSettings
from tfbuild.files import sha256_of
from tfbuild.machine import cpu
from tfbuild.machine.detect import detect
from tfbuild.plan.make import make_plan
from tfbuild.runtime.container import DockerRuntime
from tfbuild.store import Artifact, Manifest

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def stored(store: Path, variant: str) -> tuple[Path, dict[str, object]]:
    folder = store / f"tf2.17-py3.11-{variant}"
    manifest = json.loads((folder / "manifest.json").read_text())
    return folder / str(manifest["wheel"]), manifest


def test_tensorflow_toolchain_stage_builds_for_real(base_image: str, tmp_path: Path) -> None:
    """The TF 2.15 recipe up to its toolchain stage: clang-16, Python, bazelisk as `bazel`.
    First in the file: the base image it needs is made once for the run (by whichever test
    asks first), so its making is not added to the toy builds' minutes."""
    matrix = load_matrix(FIXTURES / "render" / "matrix.yaml")
    plan = make_plan(matrix, detect(), only=["cpu-2.15"])
    _, rendered, settings = prepare(plan.planned("cpu-2.15"), plan, BuildOptions())
    context = engine.Context()
    context.add_text("Dockerfile", rendered.dockerfile)
    context.add_text("tfbuild-build", rendered.build_script, mode=0o755)
    context.add_text(PREFLIGHT, rendered.preflight, mode=0o755)
    if settings.ca_bundle is not None:
        context.add_path("ca-bundle.pem", settings.ca_bundle)
    log = tmp_path / "toolchain.log"
    with log.open("w") as fh:

        def write(line: str) -> None:
            fh.write(line + "\n")

        image = engine.build_image(
            context, "tfbuild/test-toolchain:2.15", write, target="toolchain"
        )
    assert image.startswith("sha256:")
    probe = (
        "clang-16 --version | head -1; python3 --version; "
        "test -x /usr/local/bin/bazel && echo bazelisk; echo $USE_BAZEL_VERSION"
    )
    out = subprocess.run(
        ["docker", "run", "--rm", "tfbuild/test-toolchain:2.15", "bash", "-c", probe],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "clang version 16" in out and "Python 3.11" in out
    assert "bazelisk" in out and out.strip().endswith("6.1.0")


@pytest.mark.parametrize(
    ("variant", "label", "copts"),
    [
        ("avx2-fma", "avx2.fma", ["-mavx2", "-mfma"]),
        ("avx512", "avx512", ["-mavx512f"]),
    ],
)
def test_build_exports_labelled_wheel_with_manifests(
    toy_store: Path, variant: str, label: str, copts: list[str]
) -> None:
    wheel, manifest = stored(toy_store, variant)
    assert wheel.name == f"tfbuild_probe-1.0.0+{label}-cp311-cp311-linux_x86_64.whl"
    assert manifest["version"] == f"1.0.0+{label}"
    assert manifest["sha256"] == sha256_of(wheel)
    made = manifest["copts"]  # the variant's, then the era's warning copts if any
    assert isinstance(made, list) and made[: len(copts)] == copts
    command = str(manifest["bazel_command"])
    assert command.startswith("bazel build " + " ".join(f"--copt={c}" for c in copts))
    assert "--repository_cache=/cache/repository --disk_cache=/cache/disk" in command
    assert command.endswith(" //:probe")
    assert str(manifest["bazel_version"]).startswith("bazel 4.2.3")
    for key in (
        "variant",
        "tensorflow",
        "git_ref",
        "bazel_version",
        "configs",
        "base_image",
        "builder_host",
        "build_seconds",
        "tfbuild_version",
        "content_key",
    ):
        assert key in manifest, key
    base = manifest["base_image"]
    assert isinstance(base, dict) and str(base["id"]).startswith("sha256:")
    inside = wheelfile.embedded_manifest(wheel)
    assert inside is not None
    beside = {
        k: v for k, v in manifest.items() if k not in ("wheel", "sha256", "name", "version", "tags")
    }
    assert inside == beside
    # RECORD is complete and right: every file with its hash
    with zipfile.ZipFile(wheel) as archive:
        record = next(n for n in archive.namelist() if n.endswith("/RECORD"))
        rows = archive.read(record).decode().splitlines()
        assert len(rows) == len(archive.namelist())
    log = (wheel.parent / "build.log").read_text()
    assert "+ docker build --target source" in log and "tfbuild-build /out" in log
    assert "INFO: Build completed successfully" in log


@pytest.fixture
def own_store(toy_store: Path, tmp_path: Path) -> Path:
    """A copy of the toy store for a test that builds into it (other tests read the store)."""
    return Path(shutil.copytree(toy_store, tmp_path / "store"))


def test_unchanged_rebuild_is_a_no_op_and_force_rebuilds(own_store: Path) -> None:
    """The no-op starts no container and leaves the wheel and its log as they were."""
    wheel, before = stored(own_store, "avx2-fma")
    log = wheel.parent / "build.log"
    mtimes = (wheel.stat().st_mtime_ns, log.stat().st_mtime_ns)
    with inspected(f"org.tfbuild.store={own_store}") as seen:
        proc = toy_build(own_store, "--variant", "avx2-fma")
    assert proc.returncode == 0, proc.stderr
    assert "avx2-fma: up to date" in proc.stderr and "--force rebuilds" in proc.stderr
    assert seen == {}, "a no-op rebuild started a build container"
    assert (wheel.stat().st_mtime_ns, log.stat().st_mtime_ns) == mtimes
    forced = toy_build(own_store, "--variant", "avx2-fma", "--force", "--format", "json")
    assert forced.returncode == 0, forced.stderr
    assert "avx2-fma: built" in forced.stderr  # the progress stays on standard error
    rebuilt, after = stored(own_store, "avx2-fma")
    assert after["content_key"] == before["content_key"]
    assert rebuilt.stat().st_mtime_ns != mtimes[0]
    (said,) = json.loads(forced.stdout)["builds"]  # as a script reads it
    assert said["variant"] == "avx2-fma" and said["status"] == "built"
    assert said["wheel"] == str(rebuilt) and said["sha256"] == sha256_of(rebuilt)
    assert said["log"] == str(log) and "INFO: Build completed successfully" in log.read_text()


def test_cache_volume_is_shared_between_variants(toy_store: Path) -> None:
    """This test run's volume (made by its first build): each variant's build wrote its name
    into it, so both build containers had the one cache mounted."""
    volume = toy_cache()
    out = subprocess.run(
        ["docker", "run", "--rm", "-v", f"{volume}:/cache", BASE_IMAGE, "cat", "/cache/toy/builds"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert {line.split()[0] for line in out.splitlines()} == {"avx2-fma", "avx512"}, out
    for variant in ("avx2-fma", "avx512"):
        _, manifest = stored(toy_store, variant)
        assert "--disk_cache=/cache/disk" in str(manifest["bazel_command"])


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_interrupted_build_leaves_nothing_half_done(
    own_store: Path, tmp_path: Path, stop: signal.Signals
) -> None:
    """Ctrl-C, or SIGTERM (a CI step's time limit, `docker stop`), while the build container
    runs. The toy source here packages its wheel only after ten minutes, so the signal always
    comes in the middle of the build."""
    wheel, manifest = stored(own_store, "avx512")
    source = shutil.copytree(TOY / "src", tmp_path / "src")
    setup = source / "setup.py"
    setup.write_text("import time\n\ntime.sleep(600)\n" + setup.read_text())
    argv = [sys.executable, "-m", "tfbuild"]
    argv += toy_build_args(own_store, "--variant", "avx512", "--force", source=source)
    ours = f"org.tfbuild.store={own_store}"  # builds of other tests run meanwhile
    # The child gets Ctrl-C's default action as in a terminal: a suite started in the
    # background by a shell without job control runs with SIGINT ignored, which a child
    # inherits (and Python then keeps), while a handled signal is reset by exec.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        signal.signal(signal.SIGINT, ignored)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        running = containers(ours)
        if running:
            break
        time.sleep(0.1)
    assert running, "the build container never started"
    proc.send_signal(stop)
    assert proc.wait(timeout=120) == 130
    assert containers(ours, stopped=True) == []
    folder = wheel.parent
    assert not list(folder.glob(".build-*"))
    # the previous complete wheel and its manifest are untouched
    assert stored(own_store, "avx512") == (wheel, manifest)
    assert sha256_of(wheel) == manifest["sha256"]


def test_builds_failing_for_one_cause_say_it_once(toy_store: Path, tmp_path: Path) -> None:
    """Both toy variants from a source with one compiler error (the toy store exists first, so
    the image layers before the source are the engine's cache): the error is said once with
    the log's tail, the second variant names the first; the tails shown and the logs kept
    carry no terminal escape (the engine colours a build step's stderr)."""
    source = shutil.copytree(TOY / "src", tmp_path / "src")
    probe = source / "probe.c"
    probe.write_text(probe.read_text() + "\nstatic int broken = 1\n", encoding="utf-8")
    store = tmp_path / "wheels"
    proc = run_tfbuild(*toy_build_args(store, "--all", "--force", source=source), timeout=900)
    assert proc.returncode == 7, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert "\x1b" not in said
    assert said.count("error: expected") == 1, said[-3000:]
    assert re.search(r"avx2-fma: bazel \d+ of \d+ actions \(\d+%\)", said), said[-3000:]
    logs = sorted(store.glob("*/build.log"))
    assert len(logs) == 2 and all("\x1b" not in log.read_text() for log in logs)
    assert not any("\x1b" in log.read_text() for log in toy_store.glob("*/build.log"))
    assert (
        f"avx512: as avx2-fma did (log: {store / logs[1].parent.name / 'build.log'})"
        in " ".join(said.split())
    )


def test_bazels_progress_in_a_real_build_log(toy_store: Path) -> None:
    """The toy builds' logs hold bazel's own progress lines ("[0 / 4] [Prepa] ...", "[4 / 6]
    Compiling probe.c; ..."), as many as bazel printed (a toy build is seconds, so often one);
    read one second apart they become actions done of the total, with an ETA once the count
    moved (the unit tests hold the ETA itself)."""
    progress = BazelProgress()
    lines = [
        line
        for log in sorted(toy_store.glob("*/build.log"))
        for line in log.read_text().splitlines()
    ]
    said = [s for n, line in enumerate(lines) if (s := progress.update(line, float(n)))]
    assert said, "no bazel progress line in the build logs"
    assert progress.total >= max(progress.done, 1)
    shape = r"bazel \d+ of \d+ actions \(\d+%\)(, about .+ left)?"
    assert all(re.fullmatch(shape, s) for s in said), said


STEPS = """
# Three steps of two seconds each, one after another, that the probe needs: bazel reports its
# progress while they run (every second, --progress_report_interval=1 in the copy's .bazelrc),
# as it does through a long build.
[genrule(
    name = "step%d" % n,
    srcs = [":step%d" % (n - 1)] if n else [],
    outs = ["step%d.txt" % n],
    cmd = "sleep 2; echo %d > $@" % n,
) for n in range(3)]
"""


def test_a_build_watched_on_a_terminal_shows_bazels_progress_with_an_eta(
    base_image: str, tmp_path: Path
) -> None:
    """`tfbuild build` at a terminal: the live line shows the actions bazel has done of its
    total, and once they move, the time left. A real bazel build of the toy recipe, whose probe
    waits on three two-second steps, so that bazel prints progress more than once (its rate
    limit at 0.1 s, and a report of the running action every second, in the copy's .bazelrc;
    without the report, bazel 4.2 at times printed only its first line); its own cache folder, so
    every action runs."""
    source = tmp_path / "src"
    shutil.copytree(TOY / "src", source)
    build = (source / "BUILD").read_text()
    (source / "BUILD").write_text(
        build.replace("    linkshared = True,", '    data = [":step2"],\n    linkshared = True,')
        + STEPS
    )
    with (source / ".bazelrc").open("a") as bazelrc:
        bazelrc.write("build --show_progress_rate_limit=0.1 --progress_report_interval=1\n")
    status, output = on_terminal(
        "build", "--matrix", str(TOY / "matrix.yaml"), "--tf-source", str(source),
        "--store", str(tmp_path / "store"), "--bazel-cache", str(tmp_path / "cache"),
        "--variant", "avx2-fma",
    )  # fmt: skip
    shown = plain(output)
    assert status == 0, shown[-3000:]
    log = (tmp_path / "store" / "tf2.17-py3.11-avx2-fma" / "build.log").read_text()
    assert len(re.findall(r"^\[\d+ / \d+\]", log, re.MULTILINE)) >= 2, log
    eta = re.findall(r"avx2-fma: bazel (\d+) of (\d+) actions \(\d+%\), about ([\w ]+) left", shown)
    assert eta, shown[-3000:]
    assert all(0 < int(done) < int(total) for done, total, _ in eta), eta
    assert {left for _, _, left in eta} <= {"under a minute"}, eta  # seconds of work left


def test_runtime_container_runs_wheel_without_network(toy_store: Path) -> None:
    wheel, manifest = stored(toy_store, "avx2-fma")
    runtime = DockerRuntime(
        Artifact("toy", wheel, str(manifest["sha256"]), (), Manifest.from_json(manifest)),
        settings=PipSettings("inherit", "inherit", "inherit", ()),
        base_image="tfbuild/base:bookworm",
        template_dirs=template_dirs(None),
        log_dir=toy_store / "logs",
    )
    runtime.prepare()
    assert runtime.prepare() is False  # tagged by the wheel's sha256 and reused
    assert runtime.image and str(manifest["sha256"])[:16] in runtime.image
    check = (
        "import os, socket, tfbuild_probe\n"
        "print(tfbuild_probe.isa(), os.getuid(), os.access('/wheels', os.W_OK))\n"
        "try:\n"
        "    socket.create_connection(('deb.debian.org', 80), 2)\n"
        "    print('network')\n"
        "except OSError:\n"
        "    print('no network')\n"
    )
    lines: list[str] = []
    spec = engine.ContainerSpec(
        runtime.image, ("/opt/tf/bin/python", "-c", check), "test", confined=True,
        mounts=(engine.Mount(f"/wheels/{wheel.name}", str(wheel)),),
    )  # fmt: skip
    with engine.container(spec) as created:
        code, _ = engine.run_to_end(created, lines.append, 120)
    assert code == 0, lines
    assert lines == ["avx2+fma 10001 False", "no network"]


def test_engine_missing_is_reported(tmp_path: Path) -> None:
    proc = run_tfbuild(
        "build",
        "--matrix",
        str(TOY / "matrix.yaml"),
        "--variant",
        "avx2-fma",
        "--store",
        str(tmp_path),
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert proc.returncode == 5
    assert "needs a Docker engine" in proc.stderr and "--dry-run" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_dry_run_needs_no_engine(tmp_path: Path) -> None:
    proc = run_tfbuild(
        "build",
        "--variant",
        "mkl-avx2",
        "--dry-run",
        env={"DOCKER_HOST": "unix:///nonexistent/docker.sock"},
        cwd=FIXTURES / "render",
    )
    assert proc.returncode == 0, proc.stderr
    assert "FROM toolchain AS source" in proc.stdout
    assert "bazel build --config=mkl --copt=-mavx2 --copt=-mfma" in proc.stdout


def test_bench_refuses_a_stale_source_build(toy_store: Path, tmp_path: Path) -> None:
    """The avx2-fma wheel was built with -mavx2 -mfma; a matrix that now asks for -mavx2 only
    must not be measured with it."""
    changed = (
        (TOY / "matrix.yaml").read_text().replace("cpu_flags: [avx2, fma]", "cpu_flags: [avx2]")
    )
    (tmp_path / "matrix.yaml").write_text(changed)
    proc = run_tfbuild(
        "bench",
        "--matrix",
        str(tmp_path / "matrix.yaml"),
        "--only",
        "avx2-fma",
        "--store",
        str(toy_store),
        "--results",
        str(tmp_path / "results"),
        "--cache-dir",
        str(tmp_path / "cache"),
        "--runtime",
        "local",
    )
    assert proc.returncode == 11, proc.stderr
    document = json.loads(next((tmp_path / "results").glob("*.json")).read_text())
    (failure,) = document["failures"]
    assert failure["stage"] == "fetch"
    assert "changed since its wheel was built" in failure["reason"]
    assert "tfbuild build --variant avx2-fma" in failure["reason"]


FLOOR = """\
  - {name: floor-avx2-fma, source: bazel, tensorflow: 2.21.0, cpu_flags: [avx2, fma]}
  - {name: floor-plain, source: bazel, tensorflow: 2.21.0}
  - {name: floor-mkl, source: bazel, tensorflow: 2.21.0, configs: [mkl]}
"""


def _extension(store: Path, variant: str) -> Path:
    """The probe extension bazel built, out of the variant's wheel."""
    wheel = next((store / f"tf2.21-py3.11-{variant}").glob("*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        (member,) = [n for n in archive.namelist() if n.startswith("tfbuild_probe/_probe")]
        out = store / f"{variant}.so"
        out.write_bytes(archive.read(member))
    return out


def _within(names: list[str]) -> set[str]:
    """The extensions a build with these flags may use: them and what they imply."""
    cpuinfo = cpu.cpuinfo_flags_for(names)
    return {name for name, flag in cpu.tf_flag_table().items() if flag.cpuinfo in cpuinfo}


def test_what_bazel_built_holds_the_floor_the_flags_and_the_configs(
    base_image: str, tmp_path: Path
) -> None:
    """The toy C++ build is the recipe's own bazel command line on a real bazel (Debian's
    4.2.3, with bazel-bootstrap-source's mock repositories): for TensorFlow 2.21, the object
    of a variant naming AVX2 and FMA holds F16C (the floor, added), AVX2 and FMA instructions
    and nothing beyond them; a plain variant's holds AVX and F16C only (--config=avx_linux as
    TensorFlow's .bazelrc defines it); --config=mkl's define reaches the compiler (the
    config_setting's marker is in that object and in no other)."""
    shutil.copytree(TOY, tmp_path / "toy")
    matrix = tmp_path / "toy" / "matrix.yaml"
    text = matrix.read_text()
    assert "\ntunings:" in text
    matrix.write_text(text.replace("\ntunings:", "\n" + FLOOR + "tunings:", 1))
    store = tmp_path / "store"
    proc = run_tfbuild("build", "--matrix", str(matrix), "--tf-source", str(TOY / "src"),
                       "--store", str(store), "--only", "floor-*", timeout=900)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tuned = isa.audit_object(_extension(store, "floor-avx2-fma"), "tuned", workers=1)
    assert {"avx2", "fma", "f16c"} <= set(tuned.usage) <= _within(["avx2", "fma", "f16c"])
    plain = isa.audit_object(_extension(store, "floor-plain"), "plain", workers=1)
    assert {"avx", "f16c"} <= set(plain.usage) <= _within(["avx", "f16c"]), plain.usage
    marker = b"toy_built_with_mkl"
    assert marker in _extension(store, "floor-mkl").read_bytes()
    assert marker not in _extension(store, "floor-plain").read_bytes()

    def command(variant: str) -> str:
        manifest = json.loads((store / f"tf2.21-py3.11-{variant}" / "manifest.json").read_text())
        return str(manifest["bazel_command"])

    assert "--copt=-mavx2 --copt=-mfma --copt=-mf16c " in command("floor-avx2-fma")
    assert "--config=avx_linux " in command("floor-plain")
    assert "--config=mkl " in command("floor-mkl")
