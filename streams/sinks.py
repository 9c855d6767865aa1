"""Postgres sinks: batch records from an output topic into the database, idempotently.

Each sink is a plain aiokafka consumer group (``<app id>-sink-<table>``), not a Faust agent: sinks keep no
table state, so they skip Faust's per-event machinery and can run inside a worker (the default) or in a
process of their own (``drift sinks``; ``drift worker --no-sinks``) so that the gate keeps its core.

A batch is written with ``ON CONFLICT DO NOTHING`` on its natural key, then its offsets are committed: a
redelivered record never makes a duplicate row and a crash never loses one. A failing database stalls the sink
(retrying with backoff) rather than dropping records; a record that cannot be decoded is logged and skipped
(the gate produced it, so it is a bug, not input).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from aiokafka import AIOKafkaConsumer

from engine.errors import PayloadError, ServiceError
from engine.settings import Settings
from streams.kafka import consumer_kwargs, start_with_retry
from streams.payloads import CorrectionLog, Message, decode
from streams.store import Store
from streams.topics import Topics, app_id

log = logging.getLogger(__name__)
BATCH = 500
Table = Literal["correction_logs", "run_messages"]
SINK_TABLES: tuple[Table, ...] = ("correction_logs", "run_messages")


def _source(settings: Settings, table: Table) -> tuple[str, type[CorrectionLog] | type[Message]]:
    topics = Topics(settings.topic_prefix)
    if table == "correction_logs":
        return topics.correction_logs, CorrectionLog
    return topics.messages, Message


def _writer(store: Store, table: Table) -> Callable[[Sequence[Any]], Awaitable[None]]:
    return store.write_correction_logs if table == "correction_logs" else store.write_messages


async def run_sink(
    settings: Settings, store: Callable[[], Awaitable[Store]], table: Table, started: Callable[[], None] = lambda: None
) -> None:
    """Consume the sink's topic until cancelled; ``store`` returns the (possibly not yet connected) store.
    ``started`` is called once the consumer is connected to the broker."""
    topic, model = _source(settings, table)
    consumer = AIOKafkaConsumer(
        topic,
        **consumer_kwargs(settings),
        group_id=f"{app_id(settings)}-sink-{table.replace('_', '-')}",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=BATCH,
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    try:  # a consumer cancelled while it starts (an early Ctrl-C) is closed too
        await start_with_retry(consumer, settings.broker, max(30.0, settings.connect_timeout_s))
        started()
        while True:
            batches = await consumer.getmany(timeout_ms=200, max_records=BATCH)
            values = [record.value for records in batches.values() for record in records]
            if not values:
                continue
            await _write_with_retry(_writer(await store(), table), table, _decoded(model, values))
            await consumer.commit()
    finally:
        await consumer.stop()


def _decoded(model: type[CorrectionLog] | type[Message], values: list[bytes | None]) -> list[Any]:
    records = []
    for raw in values:
        try:
            records.append(decode(model, raw))
        except PayloadError as exc:
            log.warning("%s sink skipped a record: %s", model.__name__, exc)
    return records


async def _write_with_retry(write: Callable[[Sequence[Any]], Awaitable[None]], table: str, records: list[Any]) -> None:
    delay = 0.1
    while True:
        try:
            await write(records)
            return
        except (OSError, ServiceError, ConnectionError) as exc:
            log.warning("%s sink: database write failed (%s); retrying in %.1fs", table, exc, delay)
        except Exception as exc:
            if not type(exc).__module__.startswith("asyncpg"):
                raise
            log.warning("%s sink: database error (%s); retrying in %.1fs", table, exc, delay)
        await asyncio.sleep(delay)
        delay = min(delay * 2, 5.0)


async def run_sinks(
    settings: Settings, store: Callable[[], Awaitable[Store]], on_ready: Callable[[], None] = lambda: None
) -> None:
    """Every sink, until cancelled; ``on_ready`` once every sink's consumer is connected."""
    waiting = set(SINK_TABLES)

    def started(table: Table) -> None:
        waiting.discard(table)
        if not waiting:
            on_ready()

    await asyncio.gather(*(run_sink(settings, store, t, functools.partial(started, t)) for t in SINK_TABLES))
