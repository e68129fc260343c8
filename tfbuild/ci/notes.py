"""What the generated workflow runs where and what it leaves out, said in its header and in
`tfbuild ci github`'s output."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from tfbuild.ci.settings import BUILD_TIMEOUT_MIN, STANDARD_RUNNERS, Settings, build_runner
from tfbuild.config.model import Matrix
from tfbuild.plan.make import ci_fanout


def build_where(matrix: Matrix, s: Settings, jobs: int, names: str = "") -> list[str]:
    """Where the build jobs run and how long they may take, and a warning when that is a
    standard hosted runner building locally, where a TensorFlow wheel does not finish."""
    if not jobs:
        return []
    bazel = matrix.defaults.bazel
    runner = build_runner(matrix, s)
    if runner is None:
        return [
            f"build: none scheduled for the {jobs} source build(s){names}, and bench skips "
            f"them: a TensorFlow wheel does not build in {BUILD_TIMEOUT_MIN} min on a standard "
            "hosted runner (4 vCPUs, 16 GB of RAM); pass --build-runner a larger or "
            "self-hosted runner, or set defaults.bazel.remote_executor in the matrix"
        ]
    lines = [f"build: {jobs} job(s) on {runner}, up to {BUILD_TIMEOUT_MIN} min each"]
    if bazel.remote_executor:
        lines.append(f"bazel executes remotely at {bazel.remote_executor}")
    elif runner in STANDARD_RUNNERS:
        lines.append(
            f"warning: {runner} is a standard hosted runner (4 vCPUs, 16 GB of RAM, "
            f"a 14 GB SSD), on which a TensorFlow wheel does not build in {BUILD_TIMEOUT_MIN} "
            "min: pass --build-runner a larger or self-hosted runner, or set "
            "defaults.bazel.remote_executor in the matrix"
            + (" (its remote cache helps only once it is warm)" if bazel.remote_cache else "")
        )
    return lines


def build_note(matrix: Matrix, s: Settings, jobs: int) -> str:
    """build_where, for the workflow's header."""
    lines = build_where(matrix, s, jobs)
    return "".join(_comment(f"{line[0].upper()}{line[1:]}.") for line in lines)


def _comment(text: str) -> str:
    """A header comment wrapped at 96 columns, words (identifiers, flags) never broken."""
    lines = textwrap.wrap(text, 94, break_long_words=False, break_on_hyphens=False)
    return "".join(f"# {line}\n" if n == 0 else f"#   {line}\n" for n, line in enumerate(lines))


def summary(matrix: Matrix, s: Settings) -> list[str]:
    """What the generated workflow runs where, and what it leaves out: for `ci github`'s own
    output."""
    fanout = ci_fanout(matrix, s.bench_hosts)
    builds = ", ".join(f"{b.variant} (for {b.runner})" for b in fanout.builds)
    scheduled = build_runner(matrix, s) is not None
    jobs = len(fanout.builds)
    lines = build_where(matrix, s, jobs, "" if scheduled else f" ({builds})")
    if jobs and scheduled:
        lines[0] += f": {builds}"
    lines.append(f"bench: one job per runner: {', '.join(s.bench_runners)}")
    if s.workload is not None:
        forms = ", ".join(matrix.forms)
        lines.append(f"bench measures {s.workload} (not the fixed suite), in the forms {forms}")
    lines += [f"not built: {name}: {why}" for name, why in fanout.left_out.items()]
    return lines


def left_out_note(left_out: Mapping[str, str]) -> str:
    """The source variants the workflow does not build, and why, for its header."""
    return "".join(_comment(f"Not built: {name}, {why}.") for name, why in left_out.items())


def tuned_note(tuned: Sequence[str], s: Settings) -> str:
    """What the plan does with `march: host` variants, for the header and the command."""
    if not tuned:
        return ""
    names = ", ".join(tuned)
    built = [r for r in s.bench_runners if r in s.bench_hosts]
    skipped = [r for r in s.bench_runners if r not in s.bench_hosts]
    lines = [f"# march: host variants ({names}) are built for each bench runner's saved profile"]
    if built:
        lines.append(f"# (built for: {', '.join(f'{r} from {s.bench_hosts[r]}' for r in built)})")
    if skipped:
        lines.append(
            f"# and skipped on runners without one ({', '.join(skipped)}: save one with "
            "`tfbuild detect --output hosts/RUNNER.json` there, pass --bench-host)"
        )
    return "\n".join(lines) + "\n"
