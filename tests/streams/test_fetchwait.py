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
