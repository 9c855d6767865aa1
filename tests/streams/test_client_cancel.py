"""Ctrl-C while a reply arrives: the client's wait for a verdict must not drop the cancellation.

Python 3.11's ``asyncio.wait_for`` returns the awaited result when a cancellation and that result land in the same
turn of the event loop (CPython gh-86296, fixed in 3.12): a first Ctrl-C that met a verdict was lost. The product
uses ``asyncio.timeout`` instead; the last test keeps ``wait_for`` out of it."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from engine.settings import Settings
from streams.client.sdk import GateClient

ROOT = Path(__file__).resolve().parents[2]


class _Producer:
    async def send(self, *args: Any, **kwargs: Any) -> None:
        return None


async def test_a_cancellation_that_meets_a_reply_cancels_the_request() -> None:
    client = GateClient("127.0.0.1:1", settings=Settings())
    client._producer = _Producer()
    key = ("check", "d-1", 0)
    task = asyncio.ensure_future(client._request(key, "drafts", "a", b"{}", 30.0))
    for _ in range(3):
        await asyncio.sleep(0)  # the request is sent and waits for its reply
    client._waiting[key].set_result("a verdict")
    task.cancel()  # Ctrl-C, in the same turn of the loop as the reply
    try:
        await task
    except asyncio.CancelledError:
        assert key not in client._waiting
        return
    raise AssertionError("the request returned its reply and swallowed the cancellation")


def test_product_code_does_not_use_asyncio_wait_for() -> None:
    uses = [
        f"{path.relative_to(ROOT)}:{n}"
        for top in ("engine", "streams", "ops")
        for path in sorted((ROOT / top).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\basyncio\.wait_for\(|\bfrom asyncio import .*\bwait_for\b", line)
    ]
    assert uses == [], f"use 'async with asyncio.timeout(...)' (wait_for drops cancellations on 3.11): {uses}"
