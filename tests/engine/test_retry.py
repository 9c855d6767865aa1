"""The one retry policy (engine.retry, on tenacity): jittered exponential backoff, retry-after, an attempt cap,
a deadline, and a count per retry."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable

import pytest

from engine.retry import Backoff, RetryPolicy, retrying


class Flaky(Exception):
    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("flaky")
        self.retry_after = retry_after


def _fails(times: int, error: Exception) -> tuple[list[float], Callable[[], Awaitable[str]]]:
    calls: list[float] = []

    async def call() -> str:
        calls.append(time.monotonic())
        if len(calls) <= times:
            raise error
        return "done"

    return calls, call


def _policy(**changes: object) -> RetryPolicy:
    values: dict[str, object] = {"operation": "probe", "retry_on": lambda e: isinstance(e, Flaky),
                                 "backoff": Backoff(0.01, 0.04)} | changes  # fmt: skip
    return RetryPolicy(**values)  # type: ignore[arg-type]


def test_the_backoff_is_jittered_exponential_and_capped() -> None:
    backoff = Backoff(0.1, 1.0, random.Random(3))
    for attempt, ceiling in [(1, 0.1), (2, 0.2), (3, 0.4), (4, 0.8), (5, 1.0), (9, 1.0)]:
        waits = [backoff.delay(attempt) for _ in range(200)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits)
        assert max(waits) - min(waits) > ceiling / 4  # spread: workers retrying together do not stay together


def test_a_retry_after_hint_is_honoured_up_to_the_cap() -> None:
    backoff = Backoff(0.1, 1.0, random.Random(3))
    assert backoff.delay(1, retry_after=0.7) == 0.7
    assert backoff.delay(1, retry_after=30.0) == 1.0


async def test_transient_failures_are_retried_and_each_retry_is_counted() -> None:
    counted: Counter[str] = Counter()
    calls, call = _fails(3, Flaky())
    assert await retrying(call, _policy(), lambda operation: counted.update([operation])) == "done"
    assert len(calls) == 4 and counted == {"probe": 3}


async def test_the_attempt_cap_raises_the_last_failure_and_others_are_not_retried() -> None:
    counted: list[str] = []
    calls, call = _fails(10, Flaky())
    with pytest.raises(Flaky):
        await retrying(call, _policy(max_attempts=3), counted.append)
    assert len(calls) == 3 and counted == ["probe", "probe"]
    calls, call = _fails(10, KeyError("a bug"))
    with pytest.raises(KeyError):
        await retrying(call, _policy(), counted.append)
    assert len(calls) == 1


async def test_the_deadline_stops_before_a_sleep_would_pass_it() -> None:
    calls, call = _fails(1000, Flaky())
    started = time.monotonic()
    with pytest.raises(Flaky):
        await retrying(call, _policy(backoff=Backoff(0.02, 0.05), deadline_s=0.3))
    assert time.monotonic() - started < 0.3 + 0.25  # never a sleep past the deadline (scheduling slack allowed)
    assert len(calls) > 3


async def test_the_wait_honours_the_servers_retry_after() -> None:
    calls, call = _fails(1, Flaky(retry_after=0.3))
    await retrying(call, _policy(backoff=Backoff(0.01, 1.0)))
    assert calls[1] - calls[0] >= 0.3


async def test_a_call_that_returns_an_awaitable_is_awaited() -> None:
    calls, call = _fails(1, Flaky())

    def pending() -> Awaitable[str]:  # returns an awaitable, is no coroutine function (as a lambda)
        return call()

    assert await retrying(pending, _policy()) == "done"
    assert len(calls) == 2
