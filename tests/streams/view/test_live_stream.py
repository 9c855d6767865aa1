"""The view's live stream: keep-alive comments on an idle stream, and a closed page unsubscribed on the server
even when its filter matched nothing (no broker needed: verdicts are published by hand)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import pytest
from aiohttp.test_utils import TestClient, TestServer

from engine.settings import Settings
from streams.view.live import LiveVerdicts
from streams.view.queries import ViewQueries
from streams.view.server import build_app


@pytest.fixture
async def live() -> LiveVerdicts:
    return LiveVerdicts(Settings())


@pytest.fixture
async def client(live: LiveVerdicts) -> AsyncIterator[TestClient[Any, Any]]:
    queries = cast(ViewQueries, object())  # the live route never queries the database
    app = build_app(Settings(), queries, live, keepalive_s=0.05)
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def _until(condition: Any, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def test_an_idle_stream_gets_keep_alive_comments(client: TestClient[Any, Any]) -> None:
    response = await client.get("/api/live", params={"agent": "nobody"})
    assert response.headers["Content-Type"] == "text/event-stream"
    lines = [await asyncio.wait_for(response.content.readline(), 5) for _ in range(4)]
    assert [line.strip() for line in lines] == [b": ping", b"", b": ping", b""]
    response.close()


async def test_a_closed_page_whose_filter_matches_nothing_is_unsubscribed(
    client: TestClient[Any, Any], live: LiveVerdicts
) -> None:
    response = await client.get("/api/live", params={"agent": "nobody"})
    await _until(lambda: live.subscribers == 1)
    live.publish({"agent_id": "jim", "draft_id": "d0", "outcome": "passed"})  # filtered out: nothing is sent
    response.close()
    await _until(lambda: live.subscribers == 0)


async def test_verdicts_are_sent_as_events(client: TestClient[Any, Any], live: LiveVerdicts) -> None:
    response = await client.get("/api/live", params={"agent": "pam"})
    await _until(lambda: live.subscribers == 1)
    live.publish({"agent_id": "pam", "draft_id": "d1", "outcome": "passed"})
    line = b": ping"
    while line.strip() in (b": ping", b""):
        line = await asyncio.wait_for(response.content.readline(), 5)
    assert line.startswith(b"data: ") and b'"d1"' in line
    response.close()
