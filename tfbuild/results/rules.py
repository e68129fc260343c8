"""The decision rules sessions are decided by, as one table keyed by version: what each version
does, by name (a session records the version its looks were decided by, and is judged by it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tfbuild.sequential import LOOK_GROWTH

CURRENT_RULES = 6
"""The rules a sequential session's looks are decided by, recorded with its design so that its
looks replay exactly: 1, Bonferroni within each family, each comparison's own variance, Pocock
spending for every comparison, looks about 35 % apart; 2, max-t levels for comparisons that
share a config (Dunnett 1955; Hsu 1984), variances moderated across the comparisons of a look
(Smyth 2004), Pocock spending for eliminations and t^2 for the intervals, looks about 20 %
apart; 3, as 2, and a session stops on its data (the leading tier resolved, or the baseline
alone leading) only when its A/A control is within the span the answer allows; 4, as 3, and a
leading config whose interval is within the target while another leading config's is not rests:
it runs no more rounds and is judged at that look (its claims hold at every look); 5, as 2, and
the session stops when its answer is decided: a leading config is known, by the same family that
puts configs out, to be within the indifference margin (the design's `resolve`, never below the
spread of one process) of the fastest, and the A/A control does not show the baseline unlike
itself; no config rests; 6, as 5, with the answer a comparison with the standard (the
baseline): "Use X" once X is shown faster than the baseline and known within the margin of the
fastest, "Keep" once no config that could be the fastest can be faster than the baseline by more
than the margin; the margin is the one asked, never raised by the data; no config is put out
while the A/A control is wider than the span the answer allows; every interval is widened by the
resemblance of processes forked from one zygote, as the session's own data estimate it; alpha
split so that the answer's two families together err with at most 2.5 %."""

SPLIT_BEFORE_6 = {"ranking": 0.025, "selection": 0.015, "benchmarks": 0.005, "experiments": 0.005}
SPLIT_6 = {"ranking": 0.015, "selection": 0.01, "benchmarks": 0.015, "experiments": 0.01}
"""How the report's 5 % of error is split between its families: the intervals against the
baseline (and their verdicts), which configs could be the fastest, the per-benchmark table and
the seed experiments. The answer rests on the first two."""


@dataclass(frozen=True)
class Rules:
    """What one version of the decision rules (CURRENT_RULES) does, by name: code asks the version
    a session was decided by for these, never compares version numbers."""

    version: int
    look_growth: float
    """How far apart the scheduled looks are (sequential.look_schedule's growth)."""
    maxt: bool
    """Max-t levels within a family, variances moderated across a look's comparisons, and the
    two-sided intervals spending alpha along t^2 (else Bonferroni, own variances, Pocock)."""
    aa_gate: bool
    """A session stops on its data only when its A/A control is within the span the answer
    allows."""
    rests: bool
    """A leading config known to the target while another is not rests."""
    answer_decides: bool
    """The session stops when its answer is decided (a leading config known to be within the
    indifference margin of the fastest, the A/A control not showing the baseline unlike itself);
    the design's `resolve` is that margin."""
    standard: bool
    """The answer is a comparison with the standard (the baseline) at the margin asked, never
    raised by the data; the session stops when that answer is decided, and puts no config out
    while its A/A control is wider than the span the answer allows."""
    zygotes: bool
    """Intervals are widened by the resemblance of the processes one zygote forks (the
    session's own estimate of it)."""
    split: Mapping[str, float]
    """The 5 % of error split between the report's families (SPLIT_6)."""


RULES: dict[int, Rules] = {
    #        version look_growth  maxt   aa_gate rests  answer standard zygotes split
    1: Rules(1,      1.35,        False, False,  False, False, False,   False,  SPLIT_BEFORE_6),
    2: Rules(2,      LOOK_GROWTH, True,  False,  False, False, False,   False,  SPLIT_BEFORE_6),
    3: Rules(3,      LOOK_GROWTH, True,  True,   False, False, False,   False,  SPLIT_BEFORE_6),
    4: Rules(4,      LOOK_GROWTH, True,  True,   True,  False, False,   False,  SPLIT_BEFORE_6),
    5: Rules(5,      LOOK_GROWTH, True,  False,  False, True,  False,   False,  SPLIT_BEFORE_6),
    6: Rules(6,      LOOK_GROWTH, True,  False,  False, True,  True,    True,   SPLIT_6),
}  # fmt: skip
"""Every version of the decision rules sessions have been decided by (CURRENT_RULES the newest)."""


def rules(version: int) -> Rules:
    """The rules of a version (known_rules refuses, when results are read, one not known)."""
    return RULES[version]


def known_rules(value: Any) -> int:
    """A recorded rules version, when this tfbuild knows it (ValueError saying so else)."""
    version = int(value)
    if version not in RULES:
        raise ValueError(
            f"decided by rules {version}, which this tfbuild does not know (it knows "
            f"{min(RULES)}-{max(RULES)}); a newer tfbuild wrote it"
        )
    return version
