"""The Postgres sinks' lag in records: for each sink, the records on its topic its consumer group has not
committed yet (end offset minus committed offset, summed over the partitions; a partition the group never
committed counts from its first offset). Read from the broker, so it is the same wherever the sinks run (in
a worker or in ``drift sinks``); a worker measures it every :data:`LAG_INTERVAL_S` for its gauges.
"""

from __future__ import annotations

import asyncio
import logging

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaError

from engine.errors import DriftError
from engine.settings import Settings
from streams.services.sinks import SINK_TABLES, sink_group, sink_topic
from streams.services.stats import GateStats
from streams.wire.kafka import client_kwargs, close_quietly, start_once, start_with_retry

log = logging.getLogger(__name__)
LAG_INTERVAL_S = 5.0


class SinkLag:
    """Measures the sinks' lag on one broker connection (an admin client for the groups' offsets, a group-less
    consumer for the topics' offsets), opened on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._consumer: AIOKafkaConsumer | None = None
        self._admin: AIOKafkaAdminClient | None = None

    async def _open(self) -> tuple[AIOKafkaConsumer, AIOKafkaAdminClient]:
        if self._consumer is None or self._admin is None:
            consumer = AIOKafkaConsumer(**client_kwargs(self.settings), enable_auto_commit=False)
            admin = AIOKafkaAdminClient(**client_kwargs(self.settings))
            await start_with_retry(consumer, self.settings.broker, self.settings.connect_timeout_s)
            try:
                await start_once(admin)
            except BaseException:
                await asyncio.shield(close_quietly(consumer))
                raise
            self._consumer, self._admin = consumer, admin
        return self._consumer, self._admin

    async def measure(self) -> dict[str, int]:
        """Records not yet committed by each sink (by sink table)."""
        consumer, admin = await self._open()
        await consumer.topics()  # refreshes the metadata
        lag: dict[str, int] = {}
        for table in SINK_TABLES:
            topic = sink_topic(self.settings, table)
            tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
            if not tps:
                continue
            ends = await consumer.end_offsets(tps)
            starts = await consumer.beginning_offsets(tps)
            committed = await admin.list_consumer_group_offsets(sink_group(self.settings, table), partitions=tps)
            done = {tp: meta.offset for tp, meta in committed.items() if meta is not None and meta.offset >= 0}
            lag[table] = sum(max(ends[tp] - done.get(tp, starts[tp]), 0) for tp in tps)
        return lag

    async def close(self) -> None:
        consumer, admin, self._consumer, self._admin = self._consumer, self._admin, None, None
        if consumer is not None:
            await consumer.stop()
        if admin is not None:
            await admin.close()

    async def run_forever(self, stats: GateStats, interval_s: float = LAG_INTERVAL_S) -> None:
        """Keep ``stats.state['sink_lag_records']`` current until cancelled; a failed read keeps the last value."""
        try:
            while True:
                try:
                    stats.state["sink_lag_records"] = await self.measure()
                except (KafkaError, OSError, DriftError) as exc:
                    log.debug("sink lag not measured: %s", exc)
                    await self.close()
                await asyncio.sleep(interval_s)
        finally:
            await self.close()
