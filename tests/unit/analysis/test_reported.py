"""A machine's report is made of a handful of records (HostReport): what was measured, how it
was judged, the figures, the course of the session, what went wrong and the answer. How it
was judged says what the rules a sequential session was decided by do, so that no format asks
the rules itself."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from support.synthetic import session

from tfbuild.analysis.host_report import analyse_host
from tfbuild.analysis.reported import HostReport
from tfbuild.analysis.sessions import Session
from tfbuild.results.model import Design


def test_a_report_is_a_handful_of_records() -> None:
    fields = dataclasses.fields(HostReport)
    assert len(fields) <= 12, [f.name for f in fields]


@pytest.mark.parametrize(
    ("version", "maxt", "widen", "stops_on_answer"),
    [(1, False, False, False), (4, True, False, False), (5, True, False, True),
     (6, True, True, True)],
)  # fmt: skip
def test_how_a_session_was_judged_follows_the_rules_it_was_decided_by(
    version: int, maxt: bool, widen: bool, stops_on_answer: bool
) -> None:
    results = session({"fast:x": 1.2}, rounds=6)
    design = Design(kind="sequential", first=3, horizon=30, resolve=0.05, rules=version)
    results = dataclasses.replace(results, session=dataclasses.replace(results.session,
                                                                       design=design))  # fmt: skip
    method = analyse_host([Session(Path("s.json"), results)]).method
    assert method.rules == version
    assert (method.maxt, method.zygotes_widen, method.stops_on_answer) == (
        maxt,
        widen,
        stops_on_answer,
    )
