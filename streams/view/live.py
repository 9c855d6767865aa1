"""Live verdicts for the view: one group-less consumer of ``verdicts`` (it never moves a worker's offsets),
fanned out to every open page.

At start it reads the topic's backlog: the last :data:`RECENT` records of each partition, up to the end offsets
it found, of which the newest :data:`RECENT` (by record time) become :attr:`LiveVerdicts.recent`. So a page
opened after verdicts happened starts with them (docs/view.md), not with an empty table; then it follows the
topic. Each subscriber has a bounded queue; a page that does not keep up loses its oldest undelivered verdicts,
never the server's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.errors import PayloadError
from engine.settings import Settings
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import start_with_retry
from streams.wire.payloads import Verdict, decode

log = logging.getLogger(__name__)

RECENT = 200
QUEUE = 500
#: at most this long reading the backlog at start (a slow broker gives a shorter backlog, not a stuck view)
BACKLOG_S = 15.0


def matches(verdict: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """``filters`` keys: ``agent``, ``run``, ``outcome`` (empty values match everything)."""
    pairs = (("agent", "agent_id"), ("run", "run_id"), ("outcome", "outcome"))
    return all(not filters.get(name) or verdict.get(field) == filters[name] for name, field in pairs)


class LiveVerdicts:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self.recent: deque[dict[str, Any]] = deque(maxlen=RECENT)
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="view-live-verdicts")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    @property
    def subscribers(self) -> int:
        """How many live streams are subscribed now."""
        return len(self._subscribers)

    def publish(self, verdict: dict[str, Any]) -> None:
        self.recent.append(verdict)
        for queue in self._subscribers:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(verdict)

    async def subscribe(self, filters: Mapping[str, str]) -> AsyncIterator[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(QUEUE)
        self._subscribers.add(queue)
        try:
            for verdict in list(self.recent):
                if matches(verdict, filters):
                    yield verdict
            while True:
                verdict = await queue.get()
                if matches(verdict, filters):
                    yield verdict
        finally:
            self._subscribers.discard(queue)

    async def _run(self) -> None:
        topic = self._settings.topic("verdicts")
        consumer = kafka_consumer(self._settings, enable_auto_commit=False)
        await start_with_retry(consumer, self._settings.broker, 15.0)
        try:
            await consumer.topics()
            partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            consumer.assign(partitions)
            await self._backlog(consumer, partitions)
            self.ready.set()
            while True:
                batch = await consumer.getmany(timeout_ms=500)
                for record in sorted((r for rs in batch.values() for r in rs), key=lambda r: r.timestamp):
                    self._accept(record.value, record.timestamp)
        finally:
            await consumer.stop()

    async def _backlog(self, consumer: AIOKafkaConsumer, partitions: list[TopicPartition]) -> None:
        """Publish the newest :data:`RECENT` verdicts already on the topic, oldest first; the consumer is left
        at the end offsets found here, so nothing is delivered twice and nothing published since is lost."""
        if not partitions:
            return
        ends = await consumer.end_offsets(partitions)
        starts = await consumer.beginning_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, max(starts[tp], ends[tp] - RECENT))
        pending = {tp for tp in partitions if ends[tp] > max(starts[tp], ends[tp] - RECENT)}
        records: list[Any] = []
        deadline = time.monotonic() + BACKLOG_S
        while pending and time.monotonic() < deadline:
            batch = await consumer.getmany(*pending, timeout_ms=500)
            for tp, got in batch.items():
                records.extend(r for r in got if r.offset < ends[tp])
            pending = {tp for tp in pending if await consumer.position(tp) < ends[tp]}
        for tp in partitions:
            consumer.seek(tp, ends[tp])
        for record in sorted(records, key=lambda r: r.timestamp)[-RECENT:]:
            self._accept(record.value, record.timestamp)

    def _accept(self, value: bytes | None, timestamp_ms: int | None = None) -> None:
        """Publish one record's verdict, with ``at``: the record's time in ms since the epoch (the page shows it)."""
        try:
            verdict = decode(Verdict, value)
        except PayloadError:
            log.warning("view: skipped a verdict record that does not validate")
            return
        self.publish({**verdict.model_dump(mode="json"), "at": timestamp_ms})
