"""Every retrying loop runs the one retry policy and counts its retries in ``drift_retries_total{operation}``
(the worker's /metrics): the sinks' database writes, the embeddings client (which also honours
``retry-after``), a Kafka client's start."""

from __future__ import annotations

import time
from typing import Any

import asyncpg
import httpx
import pytest

from engine.errors import ServiceError
from engine.formats.metareason.embeddings import EmbeddingError, OpenAICompatibleEmbeddings
from streams.services.sinks import SinkItem, write_batch
from streams.services.stats import GateStats
from streams.wire.kafka import start_with_retry
from streams.worker.metrics import render_prometheus


async def test_a_sinks_transient_write_failures_are_retried_and_counted_on_metrics() -> None:
    stats, written = GateStats(), []
    failures = [asyncpg.exceptions.SerializationError("could not serialize access") for _ in range(2)]

    async def write(values: Any) -> None:
        if failures:
            raise failures.pop()
        written.extend(values)

    async def reject(record: Any, reason: str) -> None:
        raise AssertionError(reason)

    await write_batch(write, "run_messages", [SinkItem("r1", 1), SinkItem("r2", 2)], reject, stats.retries)
    assert written == [1, 2]
    assert stats.retries.value("run_messages_sink_write") == 2
    assert 'drift_retries_total{operation="run_messages_sink_write"} 2.0' in render_prometheus(stats)


async def test_the_embeddings_client_honours_retry_after_and_counts_its_retries() -> None:
    stats, seen = GateStats(), []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        if len(seen) == 1:
            return httpx.Response(429, headers={"retry-after": "0.4"}, text="slow down")
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0, 0.0]}]})

    http = httpx.AsyncClient(base_url="http://embeddings.test", transport=httpx.MockTransport(answer))
    client = OpenAICompatibleEmbeddings("http://embeddings.test", client=http, on_retry=stats.retries)
    assert await client.embed(["hello"], "m") == [[1.0, 0.0]]
    assert seen[1] - seen[0] >= 0.4  # the server's hint, not the 25-50 ms backoff of a first retry
    assert stats.retries.value("embeddings") == 1
    await client.aclose()


async def test_the_embeddings_client_does_not_retry_a_client_error() -> None:
    stats = GateStats()
    answer = httpx.MockTransport(lambda request: httpx.Response(400, text="bad"))
    http = httpx.AsyncClient(base_url="http://embeddings.test", transport=answer)
    client = OpenAICompatibleEmbeddings("http://embeddings.test", client=http, on_retry=stats.retries)
    with pytest.raises(EmbeddingError, match="HTTP 400"):
        await client.embed(["hello"], "m")
    assert stats.retries.value("embeddings") == 0
    await client.aclose()


async def test_a_kafka_client_start_is_retried_until_its_deadline_and_counted() -> None:
    stats, starts = GateStats(), []

    class Unreachable:
        async def start(self) -> None:
            starts.append(time.monotonic())
            raise OSError("connection refused")

    with pytest.raises(ServiceError, match="cannot reach the Kafka broker at b:1: connection refused"):
        await start_with_retry(Unreachable(), "b:1", 0.5, stats.retries)
    assert starts[-1] - starts[0] < 0.5 and len(starts) >= 3
    assert stats.retries.value("kafka_start") == len(starts) - 1
