"""What option values mean: each parsed and checked into the typed value a command's settings
hold (a user mistake is a UsageError naming the option, the value and what is accepted), and
the console the commands print to."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

import click
from rich.console import Console

from tfbuild.config.model import Budget, Suite, SuiteSettings
from tfbuild.config.settings import Cascade, Setting, shown
from tfbuild.config.values import AS_GIVEN, FORMS, did_you_mean
from tfbuild.errors import UsageError

if TYPE_CHECKING:
    from tfbuild.bench.workload import WorkloadRequest


def parse_forms(text: str | None) -> tuple[str, ...]:
    """--forms as-given,litert: the model forms named, as-given always among them."""
    if not text:
        return ()
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown_ = [n for n in names if n not in FORMS]
    if unknown_ or not names:
        raise UsageError(
            f"--forms {text!r}: unknown model form {', '.join(map(repr, unknown_))}; expected "
            f"a comma-separated list of {', '.join(FORMS)}"
            + (did_you_mean(unknown_[0], FORMS) if unknown_ else "")
        )
    return (AS_GIVEN, *dict.fromkeys(n for n in names if n != AS_GIVEN))


def workload_request(params: Mapping[str, Any]) -> WorkloadRequest | None:
    """--workload and the options that go with it; UsageError for those given without it."""
    from tfbuild.bench.workload import FLAGS, WorkloadRequest

    path = params.get("workload")
    if path is None:
        flags = {"with_suite": "--with-suite", **FLAGS}
        given = [flag for name, flag in flags.items() if params.get(name)]
        if given:
            raise UsageError(f"{', '.join(given)}: only with --workload PATH")
        return None
    return WorkloadRequest(
        path=path,
        signature=params.get("signature"),
        batch=params.get("batch"),
        shapes=tuple(params.get("shapes") or ()),
        inputs=params.get("inputs"),
        calls=params.get("calls"),
        atol=params.get("atol"),
        rtol=params.get("rtol"),
    )


class Unpadded(io.TextIOBase):
    """Text written through to `target` with the spaces at the end of each line left out: a
    table's padding belongs on a terminal, not in a file, a pipe or a diff."""

    def __init__(self, target: TextIO) -> None:
        self.target = target
        self.pending = ""

    def write(self, text: str) -> int:
        lines = (self.pending + text).split("\n")
        self.pending = lines.pop()
        if lines:
            self.target.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self.pending.strip(" "):  # a line not ended yet keeps its spaces until it is
            self.target.write(self.pending)
            self.pending = ""
        self.target.flush()

    def isatty(self) -> bool:
        return False


def unpadded(text: str) -> str:
    """`text` without spaces at the ends of its lines."""
    return "\n".join(line.rstrip(" ") for line in text.split("\n"))


def console() -> Console:
    """The console reports print to: piped output keeps wide tables readable unless COLUMNS
    says otherwise, and carries no padding at the ends of its lines."""
    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=False)
    wide = "COLUMNS" not in os.environ
    return Console(
        file=cast(TextIO, Unpadded(sys.stdout)),
        highlight=False,
        soft_wrap=False,
        width=120 if wide else None,
    )


def printable_path(value: Path | None) -> Path | None:
    """A path without control characters (a newline in a folder name would end the line it is
    written on in a Dockerfile or a log)."""
    if value is not None and not str(value).isprintable():
        raise click.BadParameter(f"{str(value)!r} holds control characters; rename the folder")
    return value


def parse_cpus(value: str | None) -> tuple[int, ...] | None:
    """--cpus as CPU numbers, checked against this process's affinity when the benchmarks run
    here (an engine's machine is checked against its probe when the session plans)."""
    from tfbuild.machine.linux import parse_cpulist
    from tfbuild.machine.remote import is_local_socket

    if value is None:
        return None
    try:
        cpus = tuple(parse_cpulist(value))
    except ValueError as exc:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3") from exc
    if not cpus:
        raise UsageError(f"--cpus {value!r}: expected a CPU list like 0 or 0,1 or 0-3")
    if not is_local_socket(os.environ.get("DOCKER_HOST") or "unix://"):
        return cpus
    allowed = os.sched_getaffinity(0)
    if not set(cpus) <= allowed:
        raise UsageError(f"--cpus {value!r}: this process may use CPUs {sorted(allowed)} only")
    return cpus


def parse_fraction(option: str, value: str) -> float:
    """A threshold given as 5% or 0.05, strictly between 0 and 1. A bare number of 1 or more
    (5) is refused with the percentage it likely meant: read as a fraction it is 500 %."""
    text = value.strip()
    try:
        number = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError as exc:
        raise UsageError(f"{option} {value!r}: expected a percentage like 5% or 0.05") from exc
    if not text.endswith("%") and 1 <= number < 100:
        raise UsageError(
            f"{option} {value!r}: a number without % is a fraction (0.05 is 5%); did you mean "
            f"{text}%?"
        )
    if not 0 < number < 1:
        raise UsageError(f"{option} {value!r}: expected a value between 0% and 100%")
    return number


def parse_weights(
    values: Sequence[str], benchmarks: Sequence[str], whose: str = "these results measured"
) -> dict[str, float]:
    """--weight BENCHMARK=W (repeatable) as benchmark -> weight in the overall speed: each a
    benchmark the results measured (`whose` says which: results, or the session to run), each
    weight a number >= 0, not all of them 0; the benchmarks not named weigh 1."""
    from tfbuild.config.values import did_you_mean

    weights: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--weight {value!r}: expected BENCHMARK=WEIGHT, like gru-keras=3")
        if name not in benchmarks:
            raise UsageError(
                f"--weight {value!r}: {whose} no benchmark {name!r} (only "
                f"{', '.join(benchmarks)}){did_you_mean(name, benchmarks)}"
            )
        try:
            weight = float(number)
        except ValueError:
            weight = math.nan
        if not (math.isfinite(weight) and weight >= 0):
            raise UsageError(f"--weight {value!r}: expected a weight that is a number >= 0")
        weights[name] = weight
    if weights and not any(weights.get(b, 1.0) > 0 for b in benchmarks):
        raise UsageError("--weight: every benchmark weighs 0; give one a weight above 0")
    return weights


def parse_host_key(value: str | None) -> str | None:
    if value is not None and not (0 < len(value.strip()) <= 100 and value.isprintable()):
        raise UsageError(f"--host-key {value!r}: expected a name of 1 to 100 printable characters")
    return value


def _results_in(folder: Path) -> list[Path]:
    """The results files in a folder; another tfbuild file there (a calibration, which
    `tfbuild calibrate` writes into the results folder) is passed over, with a note."""
    from tfbuild.results.documents import schema_of

    found = []
    for path in sorted([*folder.glob("*.json"), *folder.glob("*.json.gz")]):
        schema = schema_of(path) or ""
        if schema.startswith("tfbuild.") and not schema.startswith("tfbuild.results/"):
            click.echo(
                f"tfbuild: passing over {path}: not a session's results ({schema})", err=True
            )
        else:
            found.append(path)
    return found


def results_paths(specs: Sequence[str], option: str = "--against") -> tuple[Path, ...]:
    """Results files named by files, folders (their *.json and *.json.gz) or glob patterns."""
    paths: list[Path] = []
    for spec in specs:
        path = Path(spec)
        if path.is_dir():
            found = _results_in(path)
        elif path.exists():
            found = [path]
        else:
            found = sorted(p for p in path.parent.glob(path.name) if p.is_file())
        if not found:
            raise UsageError(
                f"{option} {spec!r}: no results there; expected a results file, a folder of "
                "them, or a quoted pattern like 'previous/*.json'"
            )
        paths += found
    return tuple(paths)


@dataclass(frozen=True, kw_only=True)
class Selection:
    """--with, --only and --skip: the configs a command works on."""

    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    opt_in: tuple[str, ...] = ()


def percent(fraction: float | None) -> str:
    """A margin as it is typed: 5%, 2.5%."""
    return "none" if fraction is None else f"{fraction * 100:g}%"


@dataclass(frozen=True, kw_only=True)
class SuiteRequest:
    """The suite settings a command line asks for on top of the matrix's preset."""

    preset: str | None = None
    budget: Budget | None = None
    resolve: float | None = None
    min_rounds: int | None = None
    rounds: int | None = None

    @classmethod
    def parse(
        cls,
        *,
        quick: bool = False,
        preset: str | None = None,
        budget: str | None = None,
        resolve: str | None = None,
        min_rounds: int | None = None,
        rounds: int | None = None,
    ) -> SuiteRequest:
        from tfbuild.config.values import BUDGET_EXAMPLE, parse_budget, parse_percent

        if quick and preset:
            raise UsageError("--quick is the preset named quick; give --quick or --preset")
        asked = fraction = None
        if budget is not None and (asked := parse_budget(budget)) is None:
            raise UsageError(f"--budget {budget!r}: expected a duration {BUDGET_EXAMPLE}")
        if resolve is not None and (fraction := parse_percent(resolve)) is None:
            raise UsageError(f"--resolve {resolve!r}: expected a percentage like 5%")
        if rounds is not None and (budget, resolve, min_rounds) != (None, None, None):
            raise UsageError(
                "--rounds asks for a fixed design; --budget, --resolve and --min-rounds are "
                "for the sequential one: give one or the other"
            )
        return cls(
            preset="quick" if quick else preset,
            budget=None if asked is None else Budget(*asked),
            resolve=fraction,
            min_rounds=min_rounds,
            rounds=rounds,
        )

    def settings(self, suite: Suite, resolved: Cascade) -> SuiteSettings:
        """The preset's settings with this request on top, each resolved in `resolved`: the
        option's, else the file's (its line), else built in."""
        chosen = suite.preset(self.preset)

        def take(name: str, flag: str, given: Any, show: Any = shown) -> Any:
            value, where = getattr(chosen, name), suite.written(self.preset, name)
            own = self.preset is not None and value != getattr(suite.settings, name)
            return resolved.take(
                f"suite.{name}", value, matrix=(value, str(where)) if where else None,
                option=(flag, given), show=show,
                default_where=f"the {self.preset} preset" if own else "built in",
            )  # fmt: skip

        budget = take("budget", "--budget", self.budget)
        resolve = take("resolve", "--resolve", self.resolve, percent)
        min_rounds = take("min_rounds", "--min-rounds", self.min_rounds)
        raised = self.min_rounds if (self.min_rounds or 0) > chosen.max_rounds else None
        max_rounds = take("max_rounds", "--min-rounds", raised)
        asked = {
            "--budget": self.budget,
            "--resolve": self.resolve,
            "--min-rounds": self.min_rounds,
        }
        sequential = [flag for flag, value in asked.items() if value is not None]
        if sequential and chosen.rounds is not None:  # the preset's fixed design, replaced
            rounds = None
            why = f"{', '.join(sequential)} (a sequential design)"
            resolved.record(Setting("suite.rounds", "none", "option", why))
        else:
            rounds = take("rounds", "--rounds", self.rounds)
        return dataclasses.replace(
            chosen,
            budget=budget,
            resolve=resolve,
            min_rounds=min_rounds,
            max_rounds=max_rounds,
            rounds=rounds,
        )
