"""Postgres sinks: batch records from an output topic into the database, idempotently.

Each sink is a plain aiokafka consumer group (``<app id>-sink-<table>``), not a Faust agent: sinks keep no
table state, so they skip Faust's per-event machinery and can run inside a worker (the default) or in a
process of their own (``drift sinks``; ``drift worker --no-sinks``) so that the gate keeps its core.

A batch is written with ``ON CONFLICT DO NOTHING`` on its natural key, then its offsets are committed: a
redelivered record never makes a duplicate row and a crash never loses one. Dead-letter rules
(:mod:`streams.store.errors`): a database that is away or busy stalls the sink, which retries with backoff and
never drops a record (:data:`SINK_WRITE_BACKOFF`); a record the database refuses (data or integrity error) is
found by splitting the batch and sent to ``dlq`` with the database's reason, and the rest is written; a record
that cannot be decoded goes to ``dlq`` too. A dead letter is on the broker before the batch's offsets are committed.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiokafka import AIOKafkaProducer
from aiokafka.errors import CommitFailedError, KafkaError

from engine.errors import PayloadError
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying
from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.beside import BesideGroups
from streams.runtime.fetchwait import kafka_consumer
from streams.runtime.history import record_key
from streams.store import Store
from streams.store.errors import classify, describe
from streams.wire.kafka import client_kwargs, start_with_retry
from streams.wire.payloads import CorrectionLog, DeadLetter, Message, decode, encode
from streams.wire.topics import Topics, app_id

log = logging.getLogger(__name__)
BATCH = 500
#: How long a stopping sink waits for the offset commit in flight.
COMMIT_GRACE_S = 5.0
Table = Literal["correction_logs", "run_messages"]
SINK_TABLES: tuple[Table, ...] = ("correction_logs", "run_messages")


def _source(settings: Settings, table: Table) -> tuple[str, type[CorrectionLog] | type[Message]]:
    topics = Topics(settings.topic_prefix)
    if table == "correction_logs":
        return topics.correction_logs, CorrectionLog
    return topics.messages, Message


def sink_group(settings: Settings, table: Table) -> str:
    """The consumer group of a sink (the same whether it runs in a worker or in ``drift sinks``)."""
    return f"{app_id(settings)}-sink-{table.replace('_', '-')}"


def sink_topic(settings: Settings, table: Table) -> str:
    return _source(settings, table)[0]


def _writer(store: Store, table: Table) -> Callable[[Sequence[Any]], Awaitable[None]]:
    return store.write_correction_logs if table == "correction_logs" else store.write_messages


@dataclass(frozen=True, slots=True)
class SinkItem:
    """A decoded record with its Kafka record (for a dead letter)."""

    record: Any
    value: Any


Reject = Callable[[Any, str], Awaitable[None]]


async def run_sink(
    settings: Settings, store: Callable[[], Awaitable[Store]], table: Table, started: Callable[[], None] = lambda: None,
    on_retry: RetryCounter = no_count, groups: BesideGroups | None = None,
) -> None:  # fmt: skip
    """Consume the sink's topic until cancelled; ``store`` returns the (possibly not yet connected) store.
    ``started`` is called once the consumer and the dead-letter producer are connected to the broker; every
    retry (connecting, writing) is told to ``on_retry``; in a worker, the consumer joins its ``groups``."""
    topic, model = _source(settings, table)
    consumer = kafka_consumer(settings, topic, group_id=sink_group(settings, table), enable_auto_commit=False,
                              auto_offset_reset="earliest", max_poll_records=BATCH, session_timeout_ms=6000,
                              heartbeat_interval_ms=1000,
                              fetch_max_wait_ms=settings.beside_fetch_max_wait_ms)  # fmt: skip
    producer = AIOKafkaProducer(**client_kwargs(settings), acks="all")
    reject = functools.partial(dead_letter, producer, Topics(settings.topic_prefix).dlq, table)
    try:  # a consumer or producer cancelled while it starts (an early Ctrl-C) is closed too
        wait_s = max(30.0, settings.connect_timeout_s)
        await start_with_retry(consumer, settings.broker, wait_s, on_retry)
        if not settings.group_leader_leaves:
            faust_private.group_leader_stays(consumer)
        if groups is not None:
            groups.add(consumer)
        await start_with_retry(producer, settings.broker, wait_s, on_retry)
        started()
        while True:
            batches = await consumer.getmany(timeout_ms=200, max_records=BATCH)
            records = [record for records in batches.values() for record in records]
            if not records:
                continue
            items = await decode_items(model, records, reject)
            await write_batch(_writer(await store(), table), table, items, reject, on_retry)
            await commit_through_a_stop(consumer)
    finally:
        try:
            await consumer.stop()
        finally:  # a second cancel during the consumer's stop must not leave the producer open
            await producer.stop()


async def commit_through_a_stop(consumer: Any, grace_s: float = COMMIT_GRACE_S) -> None:
    """Commit the consumer's offsets. A stop that cancels the sink mid-commit waits (up to ``grace_s``) for the
    commit in flight before the consumer stops: aiokafka shields its commit request, so a cancelled caller left
    it to fail against the closing connection and Python logged "Task exception was never retrieved" with a
    traceback on a routine stop. The rows are written either way; an offset not committed only means the next
    owner writes them again (the sinks are idempotent). So a commit the broker refuses is said and the sink goes
    on: one that raced its group's rebalance (aiokafka's CommitFailedError, after a member left or was evicted)
    crashed the whole worker app before, as the sinks' task is the app's (seen in ``make chaos`` kill-workers)."""
    commit = asyncio.ensure_future(consumer.commit())
    try:
        await asyncio.shield(commit)
    except CommitFailedError:
        log.info("sink offsets not committed: the sink's group rebalanced meanwhile; the partitions' next owner "
                 "writes those rows again (the sinks are idempotent)")  # fmt: skip
    except KafkaError as exc:
        log.warning("sink offsets not committed (%s); the next commit or owner covers them", exc)
    except asyncio.CancelledError:
        done, _ = await asyncio.wait([commit], timeout=grace_s)
        if done and not commit.cancelled() and commit.exception() is not None:
            log.info("sink offsets not committed as the sink stopped: %s", commit.exception())
        raise


async def dead_letter(producer: AIOKafkaProducer, dlq: str, table: str, record: Any, reason: str) -> None:
    """Send ``record`` to the dead-letter topic and wait until the broker has it."""
    letter = DeadLetter(
        source_topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        key=record_key(record.key),
        error=f"{table} sink: not stored: {reason}",
        raw=base64.b64encode(record.value or b"").decode(),
    )
    await producer.send_and_wait(dlq, encode(letter), key=record.key or b"")


async def decode_items(model: type[CorrectionLog | Message], records: list[Any], reject: Reject) -> list[SinkItem]:
    """The records that decode; every other one is dead-lettered with the reason."""
    items = []
    for record in records:
        try:
            items.append(SinkItem(record, decode(model, record.value)))
        except PayloadError as exc:
            log.warning("%s sink: dead-lettered an undecodable record: %s", model.__name__, exc)
            await reject(record, str(exc))
    return items


class PermanentWriteError(Exception):
    """The database refused the batch because of (at least) one of its records."""


async def write_batch(
    write: Callable[[Sequence[Any]], Awaitable[None]], table: str, items: list[SinkItem], reject: Reject,
    on_retry: RetryCounter = no_count,
) -> None:  # fmt: skip
    """Write ``items``, retrying transient errors; on a permanent error split the batch in halves until the
    refused record is alone, dead-letter it with the database's reason and write the others."""
    if not items:
        return
    try:
        await _write_with_retry(write, table, [item.value for item in items], on_retry)
    except PermanentWriteError as exc:
        if len(items) == 1:
            log.warning("%s sink: dead-lettered a record the database refused: %s", table, exc)
            await reject(items[0].record, f"the database refused it: {exc}")
            return
        middle = len(items) // 2
        await write_batch(write, table, items[:middle], reject, on_retry)
        await write_batch(write, table, items[middle:], reject, on_retry)


#: a sink's database writes: retried while the database is away or busy, with no cap and no deadline (a sink
#: stalls rather than drop a record); jittered so the sinks of many workers do not return in a herd
SINK_WRITE_BACKOFF = Backoff(0.1, 5.0)


async def _write_with_retry(
    write: Callable[[Sequence[Any]], Awaitable[None]], table: str, records: list[Any], on_retry: RetryCounter
) -> None:
    policy = RetryPolicy(f"{table}_sink_write", lambda exc: classify(exc) == "transient", SINK_WRITE_BACKOFF,
                         level=logging.WARNING)  # fmt: skip
    try:
        await retrying(lambda: write(records), policy, on_retry)
    except Exception as exc:
        if classify(exc) == "permanent":
            raise PermanentWriteError(describe(exc)) from exc
        raise


async def run_sinks(
    settings: Settings, store: Callable[[], Awaitable[Store]], on_ready: Callable[[], None] = lambda: None,
    on_retry: RetryCounter = no_count, groups: BesideGroups | None = None,
) -> None:  # fmt: skip
    """Every sink, until cancelled; ``on_ready`` once every sink's consumer is connected."""
    waiting = set(SINK_TABLES)

    def started(table: Table) -> None:
        waiting.discard(table)
        if not waiting:
            on_ready()

    sinks = (run_sink(settings, store, t, functools.partial(started, t), on_retry, groups) for t in SINK_TABLES)
    await asyncio.gather(*sinks)
