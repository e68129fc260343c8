"""What the analysis of one machine's sessions reports (HostReport), as the records it is made
of: what the sessions measured, how they were judged, the figures, the course of a sequential
session, what went wrong, and the answer. Every figure is computed; the report's formats
only read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from tfbuild.analysis.answer import Answer, Decision
from tfbuild.analysis.choice import Choice
from tfbuild.analysis.estimates import Estimate
from tfbuild.analysis.forms import FormFigures
from tfbuild.analysis.gaps import Problems
from tfbuild.analysis.selection import Out
from tfbuild.analysis.zygotes import ZygoteFigures
from tfbuild.machine.profile import HostProfile
from tfbuild.results import model
from tfbuild.results.model import ConfigEntry, Design, Stop, VariantRecord
from tfbuild.results.rules import rules


@dataclass(frozen=True, kw_only=True)
class Measured:
    """What the sessions measured: on which machine, which configs against which baseline,
    which benchmarks in which units, over how many rounds and processes."""

    host: HostProfile
    host_key: str
    sessions: list[str]
    baseline: str
    benchmarks: list[str]
    units: dict[str, str]
    rounds: int
    runs: int
    """Benchmark processes the sessions ran, each a run of one config in one round (how a
    process starts is the sessions' --processes: `forked`)."""
    benchmark_s: float | None
    """Seconds the sessions spent benchmarking (installs not counted), when all recorded it."""
    workload: str | None = None
    """What the user's own model was (`--workload`), when the sessions measured one."""
    forked: bool = False
    """The sessions forked each process from a zygote of its config (`--processes forked`)."""
    configs: dict[str, ConfigEntry] = field(repr=False)
    variants: dict[str, VariantRecord] = field(repr=False)


@dataclass(frozen=True, kw_only=True)
class Method:
    """How the sessions were judged: the design, the decision rules and what they do, how the
    error is split, the benchmarks' weights and the margins."""

    design: Design
    rules: int
    """The version of the decision rules the session was judged by (results.rules.CURRENT_RULES)."""
    split: dict[str, float]
    """How the report's error is split between its families, by those rules."""
    weights: dict[str, float]
    """benchmark -> its weight in the overall speed, where it is not 1 (`compare --weight`)."""
    margins: dict[str, float]
    """benchmark (and 'overall') -> the indifference margin as a fraction (0.05 = 5 %): the
    verdicts' and the answer's."""
    spreads: dict[str, float]
    """benchmark (and 'overall') -> the spread of one process of the same build this machine
    surely has (the A/A control's, at its 90 % lower bound; 2 % at least): the margin's floor."""
    margin_source: str

    @property
    def maxt(self) -> bool:
        """Max-t levels within each family, variances moderated across the comparisons (else
        Bonferroni)."""
        return rules(self.rules).maxt

    @property
    def zygotes_widen(self) -> bool:
        """Intervals are widened by the resemblance of a zygote's children."""
        return rules(self.rules).zygotes

    @property
    def stops_on_answer(self) -> bool:
        """The session stops when its answer is decided, at its margin (no resolution target)."""
        return rules(self.rules).answer_decides


@dataclass(frozen=True, kw_only=True)
class Figures:
    """Every config against the baseline: per benchmark and overall, the ranking, the tiers,
    the configs put out, the A/A control, and the raw figures the charts draw."""

    estimates: dict[tuple[str, str], Estimate]
    ranking: list[Estimate]
    """Overall estimates in tier order, best first (the baseline included with ratio 1)."""
    tiers: list[list[str]]
    out: list[Out]
    """Every config put out of the leading tier, at the look it was put out (eliminations
    included)."""
    resolution: float
    aa: dict[str, Estimate]
    contrasts: list[Estimate]
    """The seed experiments inside the recommended config: one benchmark of the suite against
    its counterpart (Estimate.benchmark names the contrast)."""
    medians: dict[tuple[str, str], float]
    samples: dict[tuple[str, str], list[float]] = field(repr=False)
    """(config, benchmark) -> every raw sample throughput, for distribution plots."""


@dataclass(frozen=True, kw_only=True)
class Course:
    """How a sequential session went: its recorded looks, why it stopped, where a replay of it
    from the data differs, and the fixed design it was worth."""

    looks: list[model.Look]
    """The looks recorded by the session (sequential designs)."""
    stop: Stop | None
    replay: list[str]
    """Differences between the recorded looks and a replay of them from the data."""
    fixed_equivalent: tuple[int, int] | None
    """Rounds and processes a fixed design (every config every round, one look) would need for
    the same leading tier to be resolved as well as this session did it, in half of the
    sessions like this one (simulated, tfbuild.analysis.power). None when not asked for
    (analyse_host's `power`), for fixed designs, and beyond the longest design the planner
    looks at: the report then says nothing of it."""


@dataclass(frozen=True, kw_only=True)
class HostReport:
    """What the analysis of one machine's sessions found, every figure computed: the report's
    formats only read it."""

    measured: Measured
    method: Method
    figures: Figures
    course: Course
    problems: Problems
    decision: Decision
    """What the last look decides (the answer, before its words)."""
    answer: Answer
    """What the report leads with: what to use and what that guarantees, or why it is
    inconclusive and, when analyse_host's `power` asked for it, what budget would settle it
    (Answer.settle: simulated, tfbuild.analysis.power)."""
    choice: Choice | None
    """The answer's config (the baseline while nothing is decided) and how to get it."""
    forms: tuple[FormFigures, ...] = ()
    """Each build's model forms as their processes checked them against the as-given form."""
    zygotes: ZygoteFigures | None = None
    """What a forked session's own data say of its zygotes (None for fresh processes)."""
