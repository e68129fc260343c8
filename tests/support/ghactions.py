"""GitHub Actions' side of a workflow run, replayed on this machine.

Every `run:` step runs as GitHub runs it (`bash --noprofile --norc -eo pipefail`, in the job's
workspace, with the environment a hosted runner gives: CI, GITHUB_*, RUNNER_*, the job's and
the step's `env:` with their `${{ }}` expressions evaluated). What GitHub provides itself is
stood in for with folders: `actions/checkout` copies the repository, `actions/setup-python`
puts a prepared virtual environment first on PATH, artifacts and caches are folders (a cache
restores its exact key or the newest key starting with a restore key). Jobs run in `needs`
order; matrix jobs once per `include` entry; `if:` conditions (job and step) are evaluated, and
a failed step skips the later ones that do not ask for `always()`. With `container`, the `run:`
steps execute in a runner stand-in (support/runner.py) instead of on this machine.
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMED_OUT = 124
"""timeout(1)'s exit status when the command ran out of time."""
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
TOKEN = re.compile(r"\s*(?:('[^']*')|(&&|\|\||==|!=|!|\(|\))|(always\(\)|success\(\)|failure\(\))"
                   r"|([A-Za-z_][\w.-]*))")  # fmt: skip


class StepFailed(Exception):
    """An action's step failed as GitHub's would (its message is the step's output)."""


@dataclass
class StepResult:
    name: str
    outcome: str  # success, failure, skipped
    output: str = ""


@dataclass
class JobResult:
    job: str
    matrix: dict[str, str]
    steps: list[StepResult] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s.outcome != "failure" for s in self.steps)

    def step(self, name: str) -> StepResult:
        return next(s for s in self.steps if s.name == name)


@dataclass
class Replay:
    """One workflow run: `run_job` each job in order, `results` holds them by job id."""

    workflow: Mapping[str, Any]
    repository: Path
    root: Path
    python_bin: Path
    """A folder put first on PATH by actions/setup-python (a venv's bin)."""
    caches: Path
    artifacts: Path
    event: str = "schedule"
    schedule: str = "0 3 * * *"
    run_id: int = 1
    run_attempt: int = 1
    minute_s: float = 60.0
    """How long a minute of a step's `timeout-minutes` lasts here (a step over its limit gets
    SIGINT, as GitHub's runner sends first, and fails: "The action has timed out.")."""
    server_url: str = "https://github.com"
    """GITHUB_SERVER_URL: where the repository's git remote is ($SERVER/$REPOSITORY.git); a
    file:// folder of bare repositories stands in for GitHub's."""
    secrets: Mapping[str, str] = field(default_factory=dict)
    extra_path: Path | None = None
    """Commands GitHub's runners have that this machine must stand in for (sudo)."""
    container: str | None = None
    """A runner stand-in (support/runner.py) the `run:` steps execute in; on this machine
    when None."""
    system_path: str | None = None
    """The runner's own PATH after what actions add (this machine's PATH when None)."""
    env: Mapping[str, str] = field(default_factory=dict)
    results: dict[str, list[JobResult]] = field(default_factory=dict)
    path: str = ".github/workflows/tfbuild-nightly.yml"
    """Where the workflow is committed in the repository (GitHub says so in
    GITHUB_WORKFLOW_REF)."""

    # -- expressions ------------------------------------------------------------------------

    def _value(self, name: str, ctx: Mapping[str, Any]) -> str:
        head, *rest = name.split(".")
        value: Any = ctx.get(head, "")
        for part in rest:
            value = value.get(part, "") if isinstance(value, Mapping) else ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return "" if value is None else str(value)

    def evaluate(self, text: str, ctx: Mapping[str, Any]) -> Any:
        """A `${{ }}` expression: contexts, string literals, ==, !=, !, &&, ||, always()."""
        if text.startswith("hashFiles("):
            return "hash"
        python, pos = [], 0
        while pos < len(text):
            m = TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"cannot evaluate {text!r} at {pos}")
            literal, op, function, name = m.groups()
            if literal is not None:
                python.append(repr(literal[1:-1]))
            elif op is not None:
                python.append({"&&": "and", "||": "or", "!": "not"}.get(op, op))
            elif function is not None:
                python.append(repr(function == "always()" or (function == "success()")
                                   == ctx["_success"]))  # fmt: skip
            else:
                python.append(repr(self._value(name, ctx)))
            pos = m.end()
        # Only the tokens above reach eval: quoted literals, operators and booleans.
        return eval(" ".join(python), {"__builtins__": {}})

    def substitute(self, value: Any, ctx: Mapping[str, Any]) -> Any:
        if isinstance(value, str):
            return EXPRESSION.sub(lambda m: str(self.evaluate(m.group(1), ctx)), value)
        if isinstance(value, Mapping):
            return {k: self.substitute(v, ctx) for k, v in value.items()}
        if isinstance(value, list):
            return [self.substitute(v, ctx) for v in value]
        return value

    def condition(self, text: str | None, ctx: Mapping[str, Any]) -> bool:
        if text is None:
            return bool(ctx["_success"])
        expression = EXPRESSION.fullmatch(text.strip())
        result = self.evaluate(expression.group(1) if expression else text, ctx)
        if "always()" not in text and "failure()" not in text and not ctx["_success"]:
            return False
        return result is True or result == "true"

    # -- jobs -------------------------------------------------------------------------------

    def _needs(self, job: Mapping[str, Any]) -> dict[str, Any]:
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        out = {}
        for name in needs:
            runs = self.results.get(name, [])
            merged: dict[str, str] = {}
            for r in runs:
                merged.update(r.outputs)
            ok = bool(runs) and all(r.ok for r in runs)
            out[name] = {"outputs": merged, "result": "success" if ok else "failure"}
        return out

    def run_job(self, job_id: str, only: Sequence[int] | None = None) -> list[JobResult]:
        """Run a job's matrix entries (`only` these: a re-run of failed jobs), in this run's
        attempt; `results` keeps each entry's latest attempt."""
        job = self.workflow["jobs"][job_id]
        strategy = job.get("strategy", {}).get("matrix")
        entries: list[dict[str, str]] = [{}]
        if strategy is not None:
            if "include" in strategy:
                entries = [dict(e) for e in strategy["include"]]
            else:
                keys = list(strategy)
                combos = itertools.product(*(strategy[k] for k in keys))
                entries = [dict(zip(keys, combo, strict=True)) for combo in combos]
        needs = self._needs(job)
        results = []
        for n, entry in enumerate(entries):
            if only is not None and n not in only:
                continue
            ctx = self._context(entry, needs, {})
            ctx["_success"] = all(v["result"] == "success" for v in needs.values())
            if not self.condition(job.get("if"), ctx):
                results.append(JobResult(job_id, entry, [StepResult("(job)", "skipped")]))
                continue
            results.append(self._run(job_id, n, job, entry, needs))
        if only is None:
            self.results[job_id] = results
        else:
            for n, result in zip(only, results, strict=True):
                self.results[job_id][n] = result
        return results

    def _context(
        self, entry: Mapping[str, str], needs: Mapping[str, Any], steps: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {
            "github": {
                "event_name": self.event,
                "event": {"schedule": self.schedule},
                "run_id": str(self.run_id),
                "run_attempt": str(self.run_attempt),
                "token": "",
            },
            "matrix": entry,
            "needs": needs,
            "steps": steps,
            "secrets": dict(self.secrets),
            "_success": True,
        }

    def _run(
        self, job_id: str, n: int, job: Mapping[str, Any], entry: dict[str, str],
        needs: Mapping[str, Any],
    ) -> JobResult:  # fmt: skip
        home = self.root / f"{job_id}-{n}" / f"attempt-{self.run_attempt}" \
            if self.run_attempt > 1 else self.root / f"{job_id}-{n}"  # fmt: skip
        workspace = home / "work"
        (home / "home").mkdir(parents=True)
        workspace.mkdir()
        files = {name: home / name for name in ("output", "summary", "env")}
        for file in files.values():
            file.touch()
        path = [str(self.python_bin)]
        if self.extra_path is not None:
            path.insert(0, str(self.extra_path))
        base_env = {
            **self.env,
            "PATH": ":".join([*path, self.system_path or os.environ["PATH"]]),
            "HOME": str(home / "home"),
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_EVENT_NAME": self.event,
            "GITHUB_RUN_ID": str(self.run_id),
            "GITHUB_RUN_ATTEMPT": str(self.run_attempt),
            "GITHUB_SERVER_URL": self.server_url,
            "GITHUB_REPOSITORY": "octo-org/tfbuild",
            "GITHUB_REPOSITORY_OWNER": "octo-org",
            "GITHUB_WORKFLOW_REF": f"octo-org/tfbuild/{self.path}@refs/heads/main",
            "GITHUB_STEP_SUMMARY": str(files["summary"]),
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(home),
            "RUNNER_NAME": entry.get("runner", "hosted"),
        }
        result = JobResult(job_id, entry)
        steps_ctx: dict[str, Any] = {}
        post: list[tuple[str, Path, bool]] = []
        for i, step in enumerate(job["steps"]):
            ctx = self._context(entry, needs, steps_ctx)
            ctx["_success"] = result.ok
            name = step.get("name") or step.get("uses") or f"step {i}"
            if not self.condition(step.get("if"), ctx):
                result.steps.append(StepResult(name, "skipped"))
                continue
            files["output"].write_text("")
            env = {
                **base_env,
                "GITHUB_OUTPUT": str(files["output"]),
                "GITHUB_ENV": str(files["env"]),
            }
            env.update(self.substitute(job.get("env", {}), ctx))
            env.update(self.substitute(step.get("env", {}), ctx))
            if "run" in step:
                script = self.substitute(step["run"], ctx)
                limit = step.get("timeout-minutes")
                seconds = None if limit is None else float(limit) * self.minute_s
                proc = self._shell(script, workspace, env, seconds)
                outcome = "success" if proc.returncode == 0 else "failure"
                said = proc.stdout + proc.stderr
                if limit is not None and proc.returncode == TIMED_OUT:
                    said += "\n##[error]The action has timed out."
                result.steps.append(StepResult(name, outcome, said))
            else:
                with_ = self.substitute(step.get("with", {}), ctx)
                try:
                    outputs = self._action(step["uses"], with_, workspace, home / "home", post)
                except StepFailed as exc:
                    result.steps.append(StepResult(name, "failure", str(exc)))
                    continue
                files["output"].write_text("".join(f"{k}={v}\n" for k, v in outputs.items()))
                result.steps.append(StepResult(name, "success"))
            if "id" in step:
                steps_ctx[step["id"]] = {"outputs": _outputs(files["output"])}
        for key, path_, hit in post:  # actions/cache saves at the end of a passing job
            if result.ok and not hit:
                self._cache_save(key, path_)
        ctx = self._context(entry, needs, steps_ctx)
        result.outputs = self.substitute(job.get("outputs", {}), ctx)
        return result

    def _shell(
        self, script: str, workspace: Path, env: Mapping[str, str], limit: float | None = None
    ) -> subprocess.CompletedProcess[str]:
        """A `run:` step's script, as the runner's shell runs it: here, or in the container;
        after `limit` seconds its process group gets SIGINT, and SIGKILL 10 s later."""
        shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
        if limit is not None:
            shell = ["timeout", "--signal=INT", "--kill-after=10", f"{limit:.1f}", *shell]
        if self.container is None:
            return subprocess.run(shell, cwd=workspace, env=env, capture_output=True, text=True,
                                  check=False, timeout=1800)  # fmt: skip
        variables = [f"--env={k}={v}" for k, v in env.items()]
        return subprocess.run(
            ["docker", "exec", f"--workdir={workspace}", *variables, self.container, *shell],
            capture_output=True, text=True, check=False, timeout=1800,
        )  # fmt: skip

    # -- actions ----------------------------------------------------------------------------

    def _action(
        self, uses: str, with_: Mapping[str, Any], workspace: Path, home: Path,
        post: list[tuple[str, Path, bool]],
    ) -> dict[str, str]:  # fmt: skip
        action = uses.split("@", 1)[0]
        if action == "actions/checkout":
            shutil.copytree(self.repository, workspace, dirs_exist_ok=True)
            return {}
        if action == "actions/setup-python":
            return {"python-version": str(with_.get("python-version"))}
        target = workspace / str(with_.get("path", "")).replace("~", str(home), 1)
        if action == "actions/upload-artifact":
            return self._upload(with_, workspace)
        if action == "actions/download-artifact":
            pattern = with_.get("pattern") or with_.get("name") or "*"
            for artifact in sorted(self.artifacts.iterdir()) if self.artifacts.is_dir() else []:
                if fnmatch.fnmatchcase(artifact.name, pattern):
                    # one artifact by name, or several merged: into `path` itself
                    alone = with_.get("merge-multiple") or with_.get("name")
                    into = target if alone else target / artifact.name
                    shutil.copytree(artifact, into, dirs_exist_ok=True)
            return {}
        if action in ("actions/cache", "actions/cache/restore"):
            key = with_["key"]
            restore_keys = [k for k in str(with_.get("restore-keys", "")).splitlines() if k]
            found, hit = self._cache_find(key, restore_keys)
            if found is not None and not with_.get("lookup-only"):
                shutil.copytree(found, target, dirs_exist_ok=True)
            if action == "actions/cache":
                post.append((key, target, hit))
            return {"cache-hit": "true" if hit else "false"}
        if action == "actions/upload-pages-artifact":
            return self._upload({"name": "github-pages", "path": with_["path"]}, workspace)
        if action == "actions/deploy-pages":
            return {"page_url": "https://octo-org.github.io/tfbuild/"}
        if action == "actions/cache/save":
            self._cache_save(with_["key"], target)
            return {}
        raise AssertionError(f"the replay has no stand-in for {uses}")

    def _upload(self, with_: Mapping[str, Any], workspace: Path) -> dict[str, str]:
        """An artifact of this run: a name the run already has is refused (409 Conflict)
        unless `overwrite`; a path with a wildcard keeps the folders below the part before it,
        as upload-artifact roots an artifact at its search path."""
        into = self.artifacts / with_["name"]
        if into.exists():
            if not with_.get("overwrite"):
                raise StepFailed(
                    "Failed to CreateArtifact: (409) Conflict: an artifact with this name "
                    f"already exists on the workflow run: {into.name}"
                )
            shutil.rmtree(into)
        path = str(with_["path"])
        if "*" in path:
            root, found = workspace / path.split("*", 1)[0], sorted(workspace.glob(path))
        else:
            target = workspace / path
            root = target if target.is_dir() else target.parent
            found = [target] if target.exists() else []
        if not found:
            if with_.get("if-no-files-found", "warn") == "error":
                raise StepFailed(f"No files were found with the provided path: {path}")
            return {}
        for item in found:
            stored = into / item.relative_to(root)
            if item.is_dir():
                shutil.copytree(item, stored, dirs_exist_ok=True)
            else:
                stored.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(item, stored)
        return {}

    def _cache_find(self, key: str, restore_keys: list[str]) -> tuple[Path | None, bool]:
        if (self.caches / key).is_dir():
            return self.caches / key, True
        entries = sorted(self.caches.iterdir(), key=lambda p: p.stat().st_mtime_ns, reverse=True) \
            if self.caches.is_dir() else []  # fmt: skip
        for prefix in restore_keys:
            for entry in entries:
                if entry.name.startswith(prefix):
                    return entry, False
        return None, False

    def _cache_save(self, key: str, path: Path) -> None:
        if (self.caches / key).exists() or not path.exists():
            return  # caches are immutable, as on GitHub
        shutil.copytree(path, self.caches / key)


def _outputs(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out
