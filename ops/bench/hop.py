"""One trip through the broker, measured bare: the floor under a gated draft's round trip.

A draft crosses the broker twice (client → worker, worker → client); a record sent by a producer without
linger (the client's and the worker's) and read by a consumer at the verdict path's fetch wait while records
flow (``DRIFT_FETCH_BRISK_WAIT_MS``), one every 25 ms (the LLM benchmark's 40 drafts/s), shows what those trips
cost on this broker with nothing else on the way. ``python -m ops.bench.gate llm`` reports it
(``broker_hop_p50_ms``) beside the verdict's time in the worker.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import numpy as np
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from ops.bench.common import create_topics_named

INTERVAL_S = 0.025


async def broker_hop_ms(broker: str, *, fetch_max_wait_ms: int, records: int = 400, partitions: int = 3) -> float:
    """Median ms from ``send`` to the consumer's iterator yielding the record, one record every 25 ms."""
    topic = f"hop-{uuid.uuid4().hex[:6]}"
    await create_topics_named(broker, [topic], partitions)
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=0)
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, fetch_max_wait_ms=fetch_max_wait_ms, enable_auto_commit=False)
    await producer.start()
    await consumer.start()
    sent: dict[bytes, float] = {}
    hops: list[float] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        reader = asyncio.create_task(_read(consumer, sent, hops, records))
        for i in range(records):
            key = b"%d" % i
            sent[key] = time.monotonic()
            await producer.send(topic, key, key=key)
            await asyncio.sleep(INTERVAL_S)
        async with asyncio.timeout(30):
            await reader
    finally:
        await consumer.stop()
        await producer.stop()
    return float(np.median(hops))


async def _read(consumer: AIOKafkaConsumer, sent: dict[bytes, float], hops: list[float], records: int) -> None:
    async for record in consumer:
        hops.append((time.monotonic() - sent[record.value]) * 1000)
        if len(hops) >= records:
            return
