"""A worker's stop phases (streams/runtime/stopping.py): marked from the signal on, said in one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from streams.runtime.stopping import PHASES, PREFIX, StopClock, mark_stop


def test_the_phases_are_the_times_between_marks_in_order_and_an_unmarked_one_folds_into_the_next() -> None:
    clock = StopClock()
    clock.began = 100.0
    clock.marks = {"tables": 100.05, "group leave": 100.45, "rest": 100.5}  # no "agents" mark
    assert clock.phases() == pytest.approx({"tables": 0.05, "group leave": 0.4, "rest": 0.05})
    assert clock.summary() == f"{PREFIX} 0.50 s: tables 0.05 s, group leave 0.40 s, rest 0.05 s"


def test_nothing_is_marked_or_said_before_a_stop_began(capsys: pytest.CaptureFixture[str]) -> None:
    clock = StopClock()
    clock.mark("tables")  # a table manager stopped outside a stop (a test's app): not this clock's business
    clock.report()
    assert clock.marks == {} and capsys.readouterr().err == ""


def test_a_mark_counts_once_and_the_report_ends_with_rest(capsys: pytest.CaptureFixture[str]) -> None:
    clock = StopClock()
    clock.begin()
    began = clock.began
    clock.begin()  # the app's own stop after the signal: still the signal's moment
    app = SimpleNamespace(stop_clock=clock)
    mark_stop(app, "tables")
    first = clock.marks["tables"]
    mark_stop(app, "tables")
    mark_stop(SimpleNamespace(), "agents")  # an app without a clock: nothing happens
    clock.report()
    assert clock.began == began and clock.marks["tables"] == first
    assert list(clock.phases()) == ["tables", "rest"] and set(clock.phases()) <= set(PHASES)
    assert capsys.readouterr().err.startswith(f"drift: {PREFIX} ")
