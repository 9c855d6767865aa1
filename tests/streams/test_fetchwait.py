"""The fetch wait that grows when the broker answers without the records it has (streams.runtime.fetchwait)."""

from __future__ import annotations

import logging

import pytest
from aiokafka import TopicPartition

from streams.runtime.fetchwait import FetchWait

A, B = TopicPartition("drafts", 0), TopicPartition("drafts", 1)


def test_the_wait_doubles_after_a_streak_of_unread_responses_of_one_partition(caplog: pytest.LogCaptureFixture) -> None:
    wait = FetchWait(10, streak=3)
    with caplog.at_level(logging.WARNING):
        assert wait.observe([A, B], {A}) is None
        assert wait.observe([A, B], {A}) is None
        assert wait.observe([A, B], {A}) == 20
    assert wait.wait_ms == 20
    assert "drafts[0]" in caplog.text and "10 ms -> 20 ms" in caplog.text
    assert [wait.observe([A], {A}) for _ in range(3)] == [None, None, 40]  # a new streak after each raise


def test_a_response_with_records_or_without_lag_ends_the_streak() -> None:
    wait = FetchWait(10, streak=3)
    wait.observe([A], {A})
    wait.observe([A], {A})
    assert wait.observe([A], set()) is None  # read (or nothing past the offset): the broker answers in time
    assert wait.observe([A], {A}) is None
    assert wait.observe([A], {A}) is None
    assert wait.wait_ms == 10


def test_partitions_not_in_a_response_keep_their_streak() -> None:
    """A partition with buffered records is not asked for; its streak neither grows nor ends."""
    wait = FetchWait(10, streak=2)
    wait.observe([A, B], {A})
    wait.observe([B], set())
    assert wait.observe([A], {A}) == 20


def test_the_wait_stops_growing_at_its_bound() -> None:
    wait = FetchWait(600, streak=1, max_wait_ms=1000)
    assert wait.observe([A], {A}) == 1000
    assert wait.observe([A], {A}) is None
    assert wait.wait_ms == 1000


def test_a_zero_wait_grows_too() -> None:
    assert FetchWait(0, streak=1).observe([A], {A}) == 2


def test_how_long_a_partition_has_gone_unread_survives_the_raises_and_ends_with_a_read() -> None:
    now = [0.0]
    wait = FetchWait(10, streak=1, clock=lambda: now[0])
    wait.observe([A, B], {A})  # raised to 20 ms: the streak starts again, the time unread does not
    now[0] = 40.0
    wait.observe([A, B], {A, B})
    assert wait.stuck(30.0) is not None and "drafts[0]" in (wait.stuck(30.0) or "")
    assert "drafts[1]" not in (wait.stuck(30.0) or "")  # unread for 0 s only
    assert wait.stuck(30.0, topic="messages") is None
    wait.observe([A], set())
    assert wait.stuck(30.0) is None


def test_the_brisk_wait_holds_while_records_flow_and_lapses_a_second_after_the_last() -> None:
    now = [0.0]
    wait = FetchWait(10, brisk_ms=3, clock=lambda: now[0])
    assert wait.observe([A], set()) is None  # idle: the wait the fetcher already has
    assert wait.observe([A], set(), fed=True) == 3
    now[0] = 0.9
    assert wait.observe([A], set()) is None  # still within a second of the last records
    now[0] = 1.0
    assert wait.observe([A], set()) == 10
    assert wait.observe([A], set(), fed=True) == 3


def test_a_client_awaiting_a_reply_fetches_briskly_without_records() -> None:
    awaited: list[str] = []
    wait = FetchWait(10, brisk_ms=3, clock=lambda: 0.0)
    wait.awaiting = lambda: bool(awaited)
    assert wait.observe([A], set()) is None
    awaited.append("draft-1")
    assert wait.observe([A], set()) == 3
    awaited.clear()
    assert wait.observe([A], set()) == 10


def test_a_streak_while_brisk_doubles_the_brisk_wait_up_to_the_other_then_both() -> None:
    wait = FetchWait(10, brisk_ms=3, streak=1, clock=lambda: 0.0)
    assert wait.observe([A], {A}, fed=True) == 6
    assert wait.observe([A], {A}, fed=True) == 10  # capped by the idle wait
    assert (wait.brisk_ms, wait.wait_ms) == (10, 10)
    assert wait.observe([A], {A}, fed=True) == 20  # equal now: both grow
    assert (wait.brisk_ms, wait.wait_ms) == (20, 20)


def test_an_idle_streak_doubles_the_brisk_wait_with_the_other() -> None:
    wait = FetchWait(10, brisk_ms=3, streak=1, clock=lambda: 0.0)
    assert wait.observe([A], {A}) == 20
    assert wait.brisk_ms == 6  # a broker slow to list is slow for both


def test_without_a_brisk_wait_records_change_nothing() -> None:
    wait = FetchWait(10, clock=lambda: 0.0)
    assert wait.observe([A], set(), fed=True) is None
    assert FetchWait(5, brisk_ms=8).brisk_ms == 5  # never above the other
