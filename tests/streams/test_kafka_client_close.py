"""A Kafka client that does not start is closed, and a stopping worker closes its restore consumers last.

A worker stopped by Ctrl-C once logged ``[ERROR] Unclosed AIOKafkaConsumer`` (aiokafka's ``__del__``, for a
consumer never stopped): a restore consumer started while the worker stopped — a start cancelled part way, or one
that finished after the restore plan had closed its consumers. No broker here: the broker address refuses."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from engine.errors import ServiceError
from engine.settings import Settings
from streams.runtime import restore
from streams.runtime.faust_app import faust_app
from streams.runtime.fetchwait import kafka_consumer
from streams.runtime.restore import RestorePlan
from streams.wire.kafka import client_kwargs, start_once, start_with_retry
from tests.streams.fakes import NothingToClose, no_skipped_batches

REFUSED = Settings(broker="127.0.0.1:1")


async def unclosed_reports(clients: list[Any]) -> list[str]:
    """What the event loop is told when ``clients`` are collected (aiokafka reports an unclosed one there)."""
    reported: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda loop, context: reported.append(context["message"]))
    try:
        clients.clear()
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(None)
    return reported


async def test_a_consumer_cancelled_while_it_starts_is_closed() -> None:
    retried = asyncio.Event()
    consumer = kafka_consumer(REFUSED, enable_auto_commit=False)
    start = asyncio.ensure_future(start_with_retry(consumer, REFUSED.broker, 30.0, lambda operation: retried.set()))
    async with asyncio.timeout(10):
        await retried.wait()  # refused once: the start is retrying
    start.cancel()
    with pytest.raises(asyncio.CancelledError):
        await start
    clients: list[Any] = [consumer]
    del consumer, start
    assert await unclosed_reports(clients) == []


async def test_clients_that_never_reach_the_broker_are_closed_at_the_deadline() -> None:
    clients: list[Any] = [
        kafka_consumer(REFUSED, enable_auto_commit=False),
        AIOKafkaProducer(**client_kwargs(REFUSED)),
    ]
    for client in clients:
        with pytest.raises(ServiceError, match=r"cannot reach the Kafka broker at 127\.0\.0\.1:1"):
            await start_with_retry(client, REFUSED.broker, 0.3)
    del client
    assert await unclosed_reports(clients) == []


async def test_an_admin_client_that_does_not_start_is_closed_with_or_without_retries() -> None:
    closed: list[str] = []

    class Admin:  # aiokafka's admin client closes with close(), not stop()
        async def start(self) -> None:
            raise OSError("connection refused")

        async def close(self) -> None:
            closed.append("admin")

    with pytest.raises(ServiceError):
        await start_with_retry(Admin(), "b:1", 0.1)
    with pytest.raises(OSError, match="connection refused"):  # start_once: the caller bounds and reports it
        await start_once(Admin())
    assert closed == ["admin", "admin"]


async def test_a_restore_consumer_that_starts_after_the_plan_closed_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    starting, release, starts, stopped = asyncio.Event(), asyncio.Event(), [], []
    made: list[Any] = []

    class Consumer:
        def __init__(self) -> None:
            made.append(self)

        async def stop(self) -> None:
            stopped.append(self)

    async def slow_start(client: Any, broker: str, timeout_s: float) -> None:
        starts.append(client)
        starting.set()
        await release.wait()

    async def no_database(timeout_s: float | None) -> None:
        return None

    monkeypatch.setattr(restore, "kafka_consumer", lambda settings, **kwargs: Consumer())
    monkeypatch.setattr(restore, "start_with_retry", slow_start)
    plan = RestorePlan(Settings(restore_window_s=900), no_database, partitions=3, kept=10)
    read = asyncio.ensure_future(plan.consumer("p-drift-recent-messages-changelog"))
    async with asyncio.timeout(5):
        await starting.wait()
        await plan.close()  # the worker stops while the consumer starts
        release.set()
        with pytest.raises(ServiceError, match="the worker is stopping"):
            await read
        assert len(stopped) == 1
        with pytest.raises(ServiceError, match="the worker is stopping"):
            await plan.consumer("p-drift-verdict-records-changelog")
    assert len(starts) == 1 and stopped == made  # none started after the close; every one made is stopped


async def test_a_stopping_worker_closes_its_restore_plan_after_its_tables(tmp_path: Path) -> None:
    """Mode stops a service in this order: ``on_stop``, its children (the tables, their stores and checkpoint
    rounds), its futures, ``on_shutdown``. The plan's consumers serve the tables, so they close in the last."""
    app = faust_app(Settings(data_dir=tmp_path, database_url=""), partitions=3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    steps: list[str] = []

    class Plan:
        async def close(self) -> None:
            steps.append("plan closed")

    app.restore = Plan()  # type: ignore[assignment]
    async with asyncio.timeout(10):
        await app.on_stop()
        steps.append("children stopped")
        await app.on_shutdown()
    assert steps == ["children stopped", "plan closed"]
