"""The embedded broker reports a partition's end as the last batch's base offset + 1; true_end_offsets fixes it."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.wire.kafka import true_end_offsets
from tests.stack import Scenario

pytestmark = pytest.mark.e2e


async def test_true_end_offsets_count_every_record_of_the_last_batch(scenario: Scenario) -> None:
    await scenario.create_topics()
    topic = scenario.settings.topic("dlq")
    tp = TopicPartition(topic, 0)
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker, linger_ms=50)
    await producer.start()
    consumer = AIOKafkaConsumer(bootstrap_servers=scenario.settings.broker, enable_auto_commit=False)
    await consumer.start()
    try:
        await producer.send_and_wait(topic, b"single", partition=0)
        for n in range(4):  # one batch of four records
            await producer.send(topic, b"batched %d" % n, partition=0)
        await producer.flush()
        reported = await consumer.end_offsets([tp])
        fixed = await true_end_offsets(consumer, dict(reported))
        assert fixed[tp] == 5
        assert reported[tp] <= fixed[tp]  # the broker may or may not under-report; the fix never lowers it
        assert await true_end_offsets(consumer, {tp: 0}) == {tp: 0}
    finally:
        await producer.stop()
        await consumer.stop()
