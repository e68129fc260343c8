"""Which zygote forks a config's next process: several alive at once, drawn among the least
used, each replaced after CHILDREN, and each process's outcome naming its zygote. With a
zygote that forks nothing (the real ones, with TensorFlow: tests/integration/test_forked.py)."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tfbuild.runtime.base import RunOutcome
from tfbuild.runtime.forked import (
    CHILDREN,
    LIVE,
    ZYGOTE_BYTES,
    Turns,
    Zygote,
    ZygoteGone,
    Zygotes,
    live_zygotes,
)
from tfbuild.runtime.records import PayloadConfig


class _Stub(Zygote):
    """A zygote that answers every request at once; `fail` makes its next child's zygote die."""

    made = 0

    def __init__(self) -> None:
        super().__init__()
        _Stub.made += 1
        self.closed = False
        self.fail = False

    def _start(self) -> None:
        pass

    def _ask(self, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
        return {"ready": True}

    def _child(self, config: PayloadConfig, timeout: float) -> RunOutcome:
        if self.fail:
            raise ZygoteGone("the zygote exited (-9)", -9)
        return RunOutcome(0, {"benchmarks": {}}, "", 0.1)

    def log(self) -> str:
        return ""

    def close(self) -> None:
        self.closed = True


CONFIG = PayloadConfig(benchmarks=("gru-keras",))


def test_turns_visit_every_zygote_once_a_cycle_in_a_random_order() -> None:
    """Each cycle of LIVE turns visits every zygote once; no zygote serves two turns in a row;
    the orders differ from cycle to cycle."""
    turns = Turns(3, random.Random(1))
    drawn = [turns.next() for _ in range(3 * 400)]
    cycles = [tuple(drawn[k : k + 3]) for k in range(0, len(drawn), 3)]
    assert all(sorted(c) == [0, 1, 2] for c in cycles)
    assert all(a != b for a, b in itertools.pairwise(drawn))
    orders = Counter(cycles)
    assert len(orders) == 6 and min(orders.values()) > 30
    assert [Turns(1, random.Random(2)).next() for _ in range(3)] == [0, 0, 0]


def test_a_config_is_served_by_several_zygotes_in_turn() -> None:
    """The first LIVE processes come from LIVE zygotes; each zygote serves CHILDREN, never two
    in a row, then a new one takes its place; every outcome names its zygote."""
    zygotes = Zygotes(random.Random(7))
    made: list[_Stub] = []

    def make() -> _Stub:
        made.append(_Stub())
        return made[-1]

    named = []
    for _ in range(LIVE * CHILDREN * 2):
        outcome = zygotes.get("stock:default", make).run(CONFIG, 60.0)
        named.append(outcome.zygote)
    assert len(set(named[:LIVE])) == LIVE
    assert all(a != b for a, b in itertools.pairwise(named))
    assert set(Counter(named).values()) == {CHILDREN}
    assert len(made) == 2 * LIVE and all(z.closed for z in made[:LIVE])
    assert set(named) == {z.id for z in made}
    assert len({z.id for z in made}) == len(made)  # ids never repeat
    zygotes.close()
    assert all(z.closed for z in made)


def test_a_zygote_that_dies_fails_its_process_and_is_replaced() -> None:
    zygotes = Zygotes(random.Random(3))
    first = zygotes.get("c", _Stub, live=1)
    assert isinstance(first, _Stub)
    first.fail = True
    outcome = first.run(CONFIG, 60.0)
    assert outcome.returncode == -9 and outcome.zygote == first.id
    assert zygotes.get("c", _Stub, live=1) is not first


def test_configs_keep_fewer_zygotes_where_memory_is_short() -> None:
    """LIVE zygotes of every config when they fit in half the memory available, fewer (one at
    least) when they do not."""
    assert live_zygotes(5, 64 * 2**30) == LIVE
    assert live_zygotes(17, 2 * 17 * 2 * ZYGOTE_BYTES) == 2
    assert live_zygotes(17, 8 * 2**30) == 1
    assert live_zygotes(4, None) == LIVE
