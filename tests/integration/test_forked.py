"""Benchmark processes forked from a zygote (tfbuild.runtime.forked, tfbuild/bench/zygote.py)
in a local runtime of real TensorFlow: what each process reports about itself, the zygote's
lifetime, timeouts and failures."""

from __future__ import annotations

import importlib.util
import itertools
import os
import random
import sys
from pathlib import Path

import pytest

from tfbuild.bench.payload import ITERATIONS, SAMPLES
from tfbuild.runtime import forked
from tfbuild.runtime.base import PAYLOAD, local_env, run_payload
from tfbuild.runtime.forked import LocalZygote, Zygotes
from tfbuild.runtime.records import PayloadConfig

pytestmark = [pytest.mark.tf, pytest.mark.slow]

CONFIG = PayloadConfig(benchmarks=("matmul-pinned",))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_forked_processes_do_the_same_work_from_their_zygotes_until_each_is_replaced(
    tf_python: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A config keeps two zygotes alive here, each forking CHILDREN processes (2 here) in turns,
    never two in a row from one, then replaced; every child says it was forked (TensorFlow was
    imported before it started) and by whom, and times the same iterations and samples as a
    fresh process."""
    monkeypatch.setattr(forked, "CHILDREN", 2)
    zygotes = Zygotes(random.Random(7))
    env = local_env({})
    try:
        outcomes = [
            zygotes.get("c", lambda: LocalZygote(tf_python, env), live=2).run(CONFIG, 600)
            for _ in range(5)
        ]
        fresh = run_payload([str(tf_python), str(PAYLOAD)], CONFIG, env, 600)
        zygote_pids = {
            z.proc.pid
            for slots in zygotes.live.values()
            for z in slots
            if isinstance(z, LocalZygote) and z.proc
        }
    finally:
        zygotes.close()
    results = [o.result for o in outcomes]
    assert all(o.returncode == 0 for o in outcomes), [o.stderr_tail for o in outcomes]
    assert fresh.returncode == 0 and fresh.result is not None, fresh.stderr_tail
    assert all(r is not None and r["forked"] is True for r in results)
    assert fresh.result["forked"] is False and fresh.result["parent"] == os.getpid()
    parents = [r["parent"] for r in results if r is not None]
    first = parents[:4]  # two zygotes, two children each, taking turns
    assert len(set(first)) == 2 and all(first.count(p) == 2 for p in first), parents
    assert all(a != b for a, b in itertools.pairwise(first)), parents
    assert parents[4] not in first and parents[4] in zygote_pids, parents  # a replacement
    assert len(set(r["pid"] for r in results if r is not None)) == 5
    for result in (*results, fresh.result):
        assert result is not None
        entry = result["benchmarks"]["matmul-pinned"]
        assert entry["iterations"] == ITERATIONS["matmul-pinned"]
        assert len(entry["samples"]) == SAMPLES["matmul-pinned"]
        assert all(s["throughput"] > 0 for s in entry["samples"])
    assert not any(alive(p) for p in parents), "a zygote outlived close()"


def test_a_forked_process_is_killed_at_its_timeout_and_its_zygote_serves_on(
    tf_python: Path,
) -> None:
    """The zygote kills a child at the request's timeout (as a fresh process is killed) and
    answers the next request from the same zygote; close() leaves neither process nor folder."""
    zygote = LocalZygote(tf_python, local_env({}))
    try:
        killed = zygote.run(PayloadConfig(benchmarks=("gru-static", "gru-keras")), 0.5)
        after = zygote.run(CONFIG, 600)
        assert zygote.proc is not None
        pid = zygote.proc.pid
    finally:
        zygote.close()
    assert killed.timed_out and killed.returncode == -9
    assert after.returncode == 0 and after.result is not None, after.stderr_tail
    assert after.result["parent"] == pid and not alive(pid)
    assert not zygote.folder.exists()


def test_a_zygote_that_cannot_import_tensorflow_fails_its_process_with_the_reason() -> None:
    """tfbuild's own interpreter has no TensorFlow: the zygote exits at its import, and the
    process it was asked for fails with the zygote's traceback, as a fresh one would."""
    assert importlib.util.find_spec("tensorflow") is None, "tfbuild's Python has TensorFlow"
    zygote = LocalZygote(Path(sys.executable), local_env({}))
    try:
        outcome = zygote.run(CONFIG, 600)
    finally:
        zygote.close()
    assert outcome.returncode != 0 and outcome.result is None
    assert "the zygote exited" in outcome.stderr
    assert "No module named 'tensorflow'" in outcome.stderr
    assert zygote.children == forked.CHILDREN  # the next process would get a new zygote
