"""What a worker says while it is not ready (streams.runtime.readiness), against a stand-in of Faust's app."""

from __future__ import annotations

import logging
from collections import Counter
from types import SimpleNamespace
from typing import Any, NamedTuple

import pytest
from aiokafka.errors import InvalidSessionTimeoutError, UnknownError

from streams.runtime.fetchwait import FetchWait
from streams.runtime.readiness import Readiness


class TP(NamedTuple):
    topic: str
    partition: int


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def app(remaining: dict[TP, int] | None = None, fetch_wait: FetchWait | None = None, refusal: Any = None) -> Any:
    recovery = SimpleNamespace(in_recovery=remaining is not None, active_remaining=lambda: Counter(remaining or {}))
    kafka = SimpleNamespace(_coordinator=SimpleNamespace(_pending_exception=refusal))  # aiokafka's consumer
    consumer = SimpleNamespace(_thread=SimpleNamespace(fetch_wait=fetch_wait, _consumer=kafka))  # Faust's, its thread
    return SimpleNamespace(tables=SimpleNamespace(recovery=recovery), conf=SimpleNamespace(id="persona-drift-x"),
                           consumer=consumer)  # fmt: skip


def test_each_phase_is_named_with_how_long_it_has_lasted() -> None:
    clock = Clock()
    readiness = Readiness(30.0, clock)
    clock.now += 4
    assert readiness.waiting_for(app()) == "starting (for 4 s)"
    readiness.rebalance_started()
    clock.now += 12
    assert readiness.waiting_for(app()) == "joining the consumer group (for 12 s)"
    readiness.assigned()
    clock.now += 7
    changelog = "persona-drift-x-verdict-records-changelog"
    restoring = app({TP(changelog, 0): 8705, TP(changelog, 2): 1200, TP("persona-drift-x-b-changelog", 1): 0})
    assert readiness.waiting_for(restoring) == (
        "restoring tables: 9905 changelog records left (largest: verdict-records[0] 8705) (for 7 s)"
    )
    assert readiness.waiting_for(app()) == "preparing or finishing the restore (for 7 s)"
    readiness.rebalance_ended()
    assert readiness.waiting_for(app()) is None


#: What a refused join with a session under the broker's minimum says to change.
SESSION_HINT = (
    "DRIFT_GROUP_SESSION_TIMEOUT_S is outside the broker's group.min.session.timeout.ms / "
    "group.max.session.timeout.ms (a stock Kafka accepts 6 to 1800)"
)


def test_a_join_the_broker_refused_is_named_with_what_to_change(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    readiness = Readiness(30.0, clock)
    readiness.rebalance_started()
    clock.now += 3
    refused = app(refusal=InvalidSessionTimeoutError())  # a stock Kafka and a session under its 6 s minimum
    assert readiness.waiting_for(refused) == (
        "joining the consumer group: the broker refused the join (InvalidSessionTimeoutError): "
        f"{SESSION_HINT} (for 3 s)"
    )
    assert readiness.waiting_for(app(refusal=UnknownError())) == (
        "joining the consumer group: the broker refused the join (UnknownError) (for 3 s)"
    )
    clock.now += 30
    with caplog.at_level(logging.WARNING, logger="streams.runtime.readiness"):
        line = readiness.check(refused)
    assert line is not None and line.endswith(f"refused the join (InvalidSessionTimeoutError): {SESSION_HINT}")


def test_after_the_first_restore_only_a_rebalance_past_the_bound_makes_it_not_ready() -> None:
    clock = Clock()
    readiness = Readiness(30.0, clock)
    readiness.rebalance_started()
    readiness.assigned()
    readiness.rebalance_ended()
    readiness.rebalance_started()  # a worker joins: a short rebalance leaves this one ready
    clock.now += 29
    assert readiness.waiting_for(app()) is None
    clock.now += 2
    assert readiness.waiting_for(app()) == "joining the consumer group (for 31 s)"


def test_one_warning_line_per_phase_past_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    readiness = Readiness(30.0, clock)
    readiness.rebalance_started()
    clock.now += 10
    assert readiness.check(app()) is None
    clock.now += 25
    with caplog.at_level(logging.WARNING, logger="streams.runtime.readiness"):
        line = readiness.check(app())
        assert readiness.check(app()) is None  # said once
    assert line == "worker not ready after 35 s (DRIFT_READY_BOUND_S=30): joining the consumer group"
    assert [r.getMessage() for r in caplog.records] == [line]
    readiness.assigned()
    clock.now += 31
    restoring = app({TP("persona-drift-x-recent-messages-changelog", 1): 5})
    assert readiness.check(restoring) == (
        "worker not ready after 31 s (DRIFT_READY_BOUND_S=30): restoring tables: 5 changelog records left "
        "(largest: recent-messages[1] 5)"
    )


def test_a_ready_worker_whose_fetches_come_back_without_the_records_says_so_once_past_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The embedded broker's listing limit (docs/known-issues.md): the worker owns the partition, is through its
    rebalance, and gates nothing there; /health says why, and one warning line."""
    clock = Clock()
    readiness = Readiness(30.0, clock, gated="drafts")
    readiness.rebalance_started()
    readiness.assigned()
    readiness.rebalance_ended()
    drafts, other, changelog = TP("drafts", 1), TP("drafts", 2), TP("persona-drift-x-recent-messages-changelog", 0)
    wait = FetchWait(2000, clock=clock)  # at its bound already: it cannot grow any more
    worker = app(fetch_wait=wait)
    wait.observe([drafts, other, changelog], {drafts, changelog})
    clock.now += 29
    wait.observe([drafts, other, changelog], {drafts, changelog})
    assert readiness.waiting_for(worker) is None  # not for long enough yet
    clock.now += 2
    reason = "the broker answers every fetch of drafts[1] without its records (for 31 s, fetch wait 2000 ms"
    assert (readiness.waiting_for(worker) or "").startswith(reason)
    with caplog.at_level(logging.WARNING):
        assert readiness.check(worker) is not None
        assert readiness.check(worker) is None  # once
    assert caplog.text.count("worker not gating: the broker answers every fetch of drafts[1] without") == 1
    assert "changelog" not in caplog.text  # only the gated topic's partitions make it not ready
    wait.observe([drafts], set())  # records again
    assert readiness.waiting_for(worker) is None
    assert readiness.check(worker) is None
