"""Any exception of a judge call fails that dimension open (marked), never the draft (issue 10, defect 3)."""

from __future__ import annotations

import asyncio
import json

from engine.gate import DimensionCheck, check_dimension
from engine.models import Dimension
from engine.scoring import DimensionScore


async def fails(exc: Exception) -> DimensionScore:
    raise exc


async def test_an_sdk_decode_error_fails_the_dimension_open_and_is_marked() -> None:
    call = asyncio.ensure_future(fails(json.JSONDecodeError("Unterminated string", '{"id": "msg', 7)))
    check = await check_dimension(call, Dimension.SUITABILITY, 7.0, deadline_s=1.0)
    assert isinstance(check, DimensionCheck) and check.passed and check.timed_out
    assert check.error is not None and "JSONDecodeError" in check.error and "Unterminated" in check.error


async def test_cancellation_still_propagates() -> None:
    started = asyncio.Event()

    async def hangs() -> DimensionScore:
        started.set()
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    task = asyncio.ensure_future(check_dimension(asyncio.ensure_future(hangs()), Dimension.FLUENCY, 7.0, 30.0))
    await started.wait()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return
    raise AssertionError("the check swallowed a cancellation")


async def test_a_cancellation_that_lands_as_the_score_arrives_still_propagates() -> None:
    # Python 3.11's asyncio.wait_for returned the result here and dropped the cancellation (CPython gh-86296):
    # a worker revoking a partition, or Ctrl-C, went unheard whenever it met a judge reply in one loop turn.
    call: asyncio.Future[DimensionScore] = asyncio.get_running_loop().create_future()
    task = asyncio.ensure_future(check_dimension(call, Dimension.FLUENCY, 7.0, 30.0))
    await asyncio.sleep(0)  # the check now waits for the call
    call.set_result(DimensionScore(Dimension.FLUENCY, "a", 9.0, (), "scripted"))
    task.cancel()  # in the same turn of the loop as the reply
    try:
        await task
    except asyncio.CancelledError:
        return
    raise AssertionError("the check returned a score and swallowed the cancellation")
