"""Jobs beside the verdict path never take the worker down (streams.runtime.supervise), and what Faust passes
to a task (the contract that turned a restart pause into the app)."""

from __future__ import annotations

import asyncio
import functools
import logging

import asyncpg
import faust
import pytest

from streams.runtime.supervise import contained, supervised


async def _pause(app: object, pause_s: float = 5.0) -> object:
    return pause_s


async def test_faust_passes_the_app_to_a_task_with_any_parameter_left() -> None:
    """The contract behind supervised(): a partial with a defaulted argument left gets the app in it."""
    app = faust.App("supervise-contract", autodiscover=False)
    task = app.task(functools.partial(_pause, "job"))
    assert await task() is app


async def test_a_supervised_job_is_restarted_after_a_failure_and_faust_calls_it_without_the_app() -> None:
    calls: list[tuple[object, ...]] = []

    async def job(*args: object) -> None:
        calls.append(args)
        if len(calls) < 3:
            raise asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress")

    app = faust.App("supervise-task", autodiscover=False)
    task = app.task(supervised(job, "a test job", pause_s=0.0))
    await asyncio.wait_for(task(), timeout=5.0)
    assert calls == [(), (), ()]


async def test_a_supervised_job_that_is_cancelled_stops() -> None:
    started = asyncio.Event()

    async def job() -> None:
        started.set()
        await asyncio.Event().wait()

    running = asyncio.ensure_future(supervised(job, "a test job", pause_s=0.0)())
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running


async def test_a_contained_tick_logs_a_database_away_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    @contained("shadows refresh")
    async def tick() -> None:
        raise asyncpg.CannotConnectNowError("the database system is shutting down")

    with caplog.at_level(logging.WARNING, logger="streams.runtime.supervise"):
        await tick()
    [record] = caplog.records
    assert record.levelno == logging.WARNING and record.exc_info is None
    assert "shadows refresh failed (CannotConnectNowError: the database system is shutting down)" in record.message


async def test_a_contained_tick_logs_a_bug_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    @contained("open alerts count")
    async def tick() -> None:
        raise KeyError("a bug")

    with caplog.at_level(logging.WARNING, logger="streams.runtime.supervise"):
        await tick()
    [record] = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None


async def test_a_contained_tick_lets_a_cancellation_through() -> None:
    @contained("a tick")
    async def tick() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await tick()
