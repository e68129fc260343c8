"""The container runtime: an image per wheel (the base image with the wheel installed, made by an
install container and committed), benchmarks in fresh confined containers with no network. The
payload and its config are copied in and the result out through the engine's API, so the engine
may be another machine."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from tfbuild import engine, pip, wheelfile
from tfbuild.build.render import render_runtime
from tfbuild.config.model import PipSettings
from tfbuild.config.values import TIMEOUT_S
from tfbuild.errors import InstallError
from tfbuild.files import digest, locked, tar_of
from tfbuild.runtime.base import (
    BASE_ENV,
    PAYLOAD,
    STDERR_TAIL_LINES,
    WORKLOAD_FORMS,
    WORKLOAD_PAYLOAD,
    RunOutcome,
    RuntimeEnv,
    installed_packages,
    traces_name,
    workload_files,
)
from tfbuild.runtime.forked import (
    GRACE_S,
    ZYGOTE,
    Zygote,
    ZygoteGone,
    Zygotes,
    outcome,
    zygote_key,
)
from tfbuild.runtime.records import (
    ContainerRecord,
    InstalledPackage,
    PayloadConfig,
    RuntimeRecord,
)
from tfbuild.store import Artifact

INSTALL_TIMEOUT_S = TIMEOUT_S
INSTALL_DIR = "/tmp/tfbuild-install"
REPORT = f"/opt/tf/{pip.REPORT}"
"""pip's report of what it installed into a runtime image (runtime-install.sh.j2)."""


TRACES_AT = "/io/traces"
"""Where a benchmark container finds the build's saved training steps: a volume, read-only."""
TRACES_LABELS = {"org.tfbuild": "traces"}
# Saved once per volume: into a folder renamed when complete, so a cut-short save is redone.
_SAVE_SCRIPT = (
    "test -d /traces/saved && exit 0; rm -rf /traces/partial && "
    '/opt/tf/bin/python /tmp/payload.py --save-traces /traces/partial "$1" && '
    "mv /traces/partial /traces/saved"
)
WORKLOAD_AT = "/io/workload"
"""Where a benchmark container finds the workload: a volume mounted read-only."""


def _bench_inputs(config: PayloadConfig) -> bytes:
    """A tar for the container's /io (a volume owned by the benchmark user, the only writable
    place besides a tmpfs /tmp): the payload and its config; with a workload (the config's
    spec holding the paths it has in the container), the workload's payload too, read-only."""
    uid = engine.BENCH_UID
    shipped: dict[str, bytes] = {}
    if config.workload is not None:
        shipped["workload_payload.py"] = WORKLOAD_PAYLOAD.read_bytes()
        shipped["workload_forms.py"] = WORKLOAD_FORMS.read_bytes()
    return tar_of(
        {
            "payload.py": (PAYLOAD.read_bytes(), 0),
            "config.json": (json.dumps(config.to_json()).encode("utf-8"), uid),
        },
        shipped,
    )


def workload_volume(spec: Mapping[str, Any]) -> tuple[str, bytes, dict[str, Any]]:
    """The volume a workload is shipped in: its name (from the contents, so a session, or the
    next one, measuring the same files finds it filled), a tar of the files (read-only, owned
    by root), and the payload's spec with the paths they have under WORKLOAD_AT."""
    files, moved = workload_files(spec, "workload")
    inside = {name.removeprefix("workload/"): data for name, data in files.items()}
    contents = digest(sorted((n, hashlib.sha256(data).hexdigest()) for n, data in inside.items()))
    for key in ("path", "inputs"):
        if moved.get(key):
            moved[key] = f"/io/{moved[key]}"
    return f"tfbuild-workload-{contents[:24]}", tar_of({}, inside), moved


def _redacted(value: str) -> str:
    """A URL list without user:password@ parts."""
    return re.sub(r"//[^/@\s]*@", "//", value)


def _pip_conf(env: Mapping[str, str], ca_bundle: bool) -> str:
    """pip.conf for the install container from PIP_* variables (PIP_INDEX_URL -> index-url)."""
    lines = ["[global]"]
    for name, value in sorted(env.items()):
        if not value.isprintable():
            raise InstallError(f"pip setting {name} holds control characters: {_redacted(value)!r}")
        lines.append(f"{name.removeprefix('PIP_').lower().replace('_', '-')} = {value}")
    if ca_bundle:
        lines.append(f"cert = {INSTALL_DIR}/ca-bundle.pem")
    return "\n".join(lines) + "\n"


ZYGOTE_COMMAND = ("/opt/tf/bin/python", "/io/zygote.py", "/tmp/zygote.sock")


class ContainerZygote(Zygote):
    """A zygote in a confined container of the runtime's image (the one a fresh process would
    get: the same environment, CPUs, limits and mounts), asked through `docker exec` of the
    zygote's client form: the engine may be another machine."""

    def __init__(self, spec: engine.ContainerSpec) -> None:
        super().__init__()
        self.spec = spec
        self.stack = contextlib.ExitStack()
        self.made: engine.Container | None = None

    def _start(self) -> None:
        self.made = self.stack.enter_context(engine.container(self.spec))
        shipped = {
            "workload_payload.py": WORKLOAD_PAYLOAD.read_bytes(),
            "workload_forms.py": WORKLOAD_FORMS.read_bytes(),
        }
        programs = {"payload.py": (PAYLOAD.read_bytes(), 0), "zygote.py": (ZYGOTE.read_bytes(), 0)}
        engine.put_archive(self.made, "/io", tar_of(programs, shipped), start=True)

    def _ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        assert self.made is not None
        ask = (*ZYGOTE_COMMAND, "--ask", json.dumps(request))
        try:
            code, output = engine.exec_in(self.made, ask)
        except engine.NotRunning as exc:  # the container stopped: its zygote exited
            raise ZygoteGone(f"the zygote's container {exc}", exc.status) from exc
        lines = output.strip().splitlines()
        try:
            reply: dict[str, Any] = json.loads(lines[-1]) if lines else {}
        except ValueError:
            reply = {}
        if code != 0 or not reply or "error" in reply:
            message = f"the zygote did not answer (exit {code}: {output.strip()[-500:]})"
            raise ZygoteGone(message)
        return reply

    def _child(self, config: PayloadConfig, timeout: float) -> RunOutcome:
        assert self.made is not None
        n = self.children
        config_json = json.dumps(config.to_json()).encode("utf-8")
        started = time.perf_counter()
        engine.put_archive(self.made, "/io", tar_of({f"config-{n}.json": (config_json, 0)}))
        paths = (f"/io/config-{n}.json", f"/io/result-{n}.json", f"/io/stderr-{n}.txt")
        reply = self._ask(self.request(*paths, timeout), timeout + GRACE_S)
        result = engine.read_file(self.made, paths[1])
        stderr = (engine.read_file(self.made, paths[2]) or b"").decode("utf-8", "replace")
        return outcome(reply, result, stderr, time.perf_counter() - started)

    def log(self) -> str:
        if self.made is None:
            return ""
        return pip.tail(engine.output_of(self.made, stdout=False), STDERR_TAIL_LINES)

    def close(self) -> None:
        self.stack.close()
        self.made = None


class DockerRuntime(RuntimeEnv):
    """An image per wheel (installed at image build); benchmarks run in fresh containers with
    no network, as a non-root user; the payload is copied in and the result out through the
    engine's API, so the engine need not share this machine's files."""

    kind = "docker"

    def __init__(
        self,
        artifact: Artifact,
        *,
        settings: PipSettings,
        base_image: str,
        template_dirs: list[Path],
        log_dir: Path,
        cpuset: str | None = None,
        nano_cpus: int | None = None,
        memory: str | None = None,
        session: str | None = None,
        beside: tuple[str, ...] = (),
    ) -> None:
        super().__init__(artifact)
        self.settings = settings
        self.beside = beside
        self.base_image = base_image
        self.template_dirs = template_dirs
        self.log_dir = log_dir
        self.cpuset = cpuset
        self.nano_cpus = nano_cpus
        self.memory = memory
        self.session = session
        self.image: str | None = None
        self.packages: tuple[InstalledPackage, ...] = ()
        self._volumes: dict[str, tuple[str, dict[str, Any]]] = {}
        self.zygotes = Zygotes()
        self._trace_volumes: dict[bool, str] = {}

    def _script(self) -> str:
        return render_runtime(
            self.template_dirs,
            {
                "wheel": self.artifact.wheel.name,
                "install_target": self.artifact.install_target,
                "pythons": wheelfile.cpython_versions(self.artifact.wheel.name),
                "sha256": self.artifact.sha256,
                "uid": engine.BENCH_UID,
                "report": pip.REPORT,
                "beside": list(self.beside),
            },
        )

    def prepare(self) -> bool:
        """The runtime image: the base image with the wheel installed in /opt/tf, made by the
        install script in a container and committed (no Dockerfile: nothing the install needs,
        credentials included, may stay in a layer or the image's history). Reused only when
        its wheel-sha256 label is this wheel's."""
        base = engine.image_info(self.base_image)
        if base is None:
            raise InstallError(
                f"base image {self.base_image} is not on the engine; {engine.MAKE_BASE_IMAGE}"
            )
        settings = pip.container_pip(self.settings)
        script = self._script()
        ca = settings.ca_bundle.read_bytes() if settings.ca_bundle is not None else b""
        index = {name: _redacted(value) for name, value in settings.env.items()}
        key = digest(script, base["id"], sorted(self.artifact.constraints), index, ca.hex())[:10]
        stem = f"{self.artifact.sha256[:16]}-{key}"
        tag = self.image = f"tfbuild/runtime:{stem}"
        # One install per image: a session that finds another one on this machine installing
        # the same image waits for it, then uses what it made.
        with locked(self.log_dir / f".runtime-{stem}.lock"):
            existing = engine.image_info(tag)
            if existing is not None:
                if existing["labels"].get("org.tfbuild.wheel-sha256") == self.artifact.sha256:
                    self.packages = self._installed(tag)
                    return False
                engine.remove_image(tag)  # not this wheel: never reused
            self._install(tag, stem, settings, script, ca)
        return True

    def _install(
        self, tag: str, stem: str, settings: pip.ContainerPip, script: str, ca: bytes
    ) -> None:
        """Install the wheel into a container of the base image and commit it as `tag`."""
        # A tar on disk, streamed to the engine: a TensorFlow wheel is hundreds of megabytes.
        inputs = engine.Context()
        inputs.add_path(f"tfbuild-install/wheel/{self.artifact.wheel.name}", self.artifact.wheel)
        inputs.add_text(
            "tfbuild-install/constraints.txt",
            "".join(f"{c}\n" for c in self.artifact.constraints),
        )
        inputs.add_text("tfbuild-install/pip.conf", _pip_conf(settings.env, bool(ca)))
        if ca:
            inputs.add_bytes("tfbuild-install/ca-bundle.pem", ca)
        log_path = self.log_dir / f"runtime-{stem}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        lines: list[str] = []
        with log_path.open("w", encoding="utf-8") as fh:

            def log(line: str) -> None:
                fh.write(line + "\n")
                lines.append(line)

            labels = {
                "org.tfbuild.wheel": self.artifact.wheel.name,
                "org.tfbuild.wheel-sha256": self.artifact.sha256,
            }
            spec = engine.ContainerSpec(
                self.base_image, ("/bin/bash", "-c", script), "runtime", labels=labels
            )
            with (
                engine.container(spec) as made,
                contextlib.closing(inputs),
            ):
                engine.put_archive(made, "/tmp", inputs.finish())
                code, timed_out = engine.run_to_end(made, log, INSTALL_TIMEOUT_S)
                if code != 0 or timed_out:
                    tail = "\n".join(lines[-25:])
                    why = f"timed out after {INSTALL_TIMEOUT_S} s" if timed_out else f"exit {code}"
                    raise InstallError(
                        f"installing {self.artifact.wheel.name} into {self.base_image} failed "
                        f"({why}):\n{tail}\nfull log: {log_path}"
                    )
                self.packages = installed_packages(engine.read_file(made, REPORT), self.artifact)
                engine.commit(
                    made,
                    tag,
                    f"tfbuild runtime for {self.artifact.wheel.name}",
                    [
                        f"USER {engine.BENCH_USER}",
                        "WORKDIR /home/bench",
                        'CMD ["/opt/tf/bin/python"]',
                    ],
                )

    def run(
        self,
        config: PayloadConfig,
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        timeout: float,
        zygote: str | None = None,
        live: int | None = None,
    ) -> RunOutcome:
        if self.image is None:
            raise InstallError("the runtime image is not prepared")
        # Nothing is bind-mounted: the engine may be another machine (DOCKER_HOST), so the
        # payload and its config are copied in through the API and the result copied out; a
        # workload goes into a volume once, mounted read-only in every benchmark container.
        mounts = [engine.Mount("/io", read_only=False)]
        config = self.with_traces(config.pinned(cpus))
        if config.traces is not None:
            mounts.append(engine.Mount(TRACES_AT, self._trace_volumes[config.xla == "jit"]))
        if config.workload is not None:
            volume, workload = self._workload_volume(config.workload)
            mounts.append(engine.Mount(WORKLOAD_AT, volume))
            config = replace(config, workload=workload)
        if zygote is not None:
            made = self.zygotes.get(
                zygote_key(env, cpus, zygote),
                lambda: ContainerZygote(self._spec(ZYGOTE_COMMAND, "zygote", env, cpus, mounts)),
                live,
            )
            return made.run(config, timeout)
        inputs = _bench_inputs(config)
        started = time.perf_counter()
        with engine.container(
            self._spec(
                ("/opt/tf/bin/python", "/io/payload.py", "/io/config.json", "/io/result.json"),
                "bench",
                env,
                cpus,
                mounts,
            )
        ) as created:
            engine.put_archive(created, "/io", inputs)
            code, timed_out = engine.run_to_end(created, None, timeout)
            stderr = engine.output_of(created, stdout=False)
            wall = time.perf_counter() - started
            result = None
            with contextlib.suppress(ValueError):
                data = engine.read_file(created, "/io/result.json")
                result = json.loads(data) if data is not None else None
        return RunOutcome(engine.signal_status(code), result, stderr, wall, timed_out)

    def _spec(
        self,
        command: tuple[str, ...],
        role: str,
        env: Mapping[str, str],
        cpus: Sequence[int] | None,
        mounts: Sequence[engine.Mount],
    ) -> engine.ContainerSpec:
        """A confined container of the runtime's image that runs the payload (or its zygote)."""
        assert self.image is not None
        return engine.ContainerSpec(
            self.image,
            command,
            role,
            environment={**BASE_ENV, "HOME": "/tmp", **env},
            mounts=tuple(mounts),
            labels=self._session_label(),
            confined=True,
            cpuset=",".join(map(str, cpus)) if cpus else self.cpuset,
            nano_cpus=self.nano_cpus,
            memory=self.memory,
            gpus=self.artifact.wants_gpu,
        )

    def close(self) -> None:
        self.zygotes.close()

    def _save_traces(self, jit: bool) -> str:
        """Into a volume named after the image and the payload, saved once by a container of
        the image (the engine may be another machine); mounted read-only where processes run."""
        assert self.image is not None
        info = engine.image_info(self.image)
        image_id = (info["id"] if info else self.image).removeprefix("sha256:")
        volume = f"tfbuild-traces-{image_id[:12]}-{traces_name(jit)}"
        mount = engine.Mount("/traces", engine.ensure_volume(volume, TRACES_LABELS), False)
        spec = engine.ContainerSpec(
            self.image, ("/bin/sh", "-c", _SAVE_SCRIPT, "save", "jit" if jit else ""), "traces",
            environment={**BASE_ENV, "HOME": "/tmp"}, mounts=(mount,), network="none", user="0",
        )  # fmt: skip
        with engine.container(spec) as made:
            engine.put_archive(made, "/tmp", tar_of({"payload.py": (PAYLOAD.read_bytes(), 0)}))
            code, timed_out = engine.run_to_end(made, None, INSTALL_TIMEOUT_S)
            if code != 0 or timed_out:
                output = pip.tail(engine.output_of(made), 25)
                raise InstallError(
                    f"saving the training steps with {self.artifact.wheel.name} in "
                    f"{self.image} failed ({'timed out' if timed_out else f'exit {code}'}):\n"
                    f"{output}"
                )
        self._trace_volumes[jit] = volume
        return f"{TRACES_AT}/saved"

    def _workload_volume(self, spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The workload's volume, filled the first time this runtime is asked for it (its
        files are read once a session, not once a process), and the spec pointing into it."""
        key = json.dumps(spec, sort_keys=True)
        if key not in self._volumes:
            assert self.image is not None
            name, data, moved = workload_volume(spec)
            engine.filled_volume(name, self.image, data, {"org.tfbuild": "workload"})
            self._volumes[key] = (name, moved)
        return self._volumes[key]

    def _installed(self, image: str) -> tuple[InstalledPackage, ...]:
        """What pip installed into the runtime image, from the report it left there."""
        spec = engine.ContainerSpec(image, ("true",), "probe")
        with engine.container(spec) as created:
            return installed_packages(engine.read_file(created, REPORT), self.artifact)

    def _session_label(self) -> dict[str, str]:
        return {"org.tfbuild.session": self.session} if self.session else {}

    def describe(self) -> RuntimeRecord:
        info = engine.image_info(self.image) if self.image else None
        return RuntimeRecord(
            kind=self.kind,
            wheel=self.artifact.wheel.name,
            sha256=self.artifact.sha256,
            packages=self.packages,
            container=ContainerRecord(
                image=self.image,
                image_id=info["id"] if info else None,
                base_image=self.base_image,
                network="none",
                user=engine.BENCH_USER,
                cpuset=self.cpuset,
            ),
        )
