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


async def test_changelog_tails_are_read_whole_from_their_starts(scenario: Scenario) -> None:
    """The restore's read-ahead (streams.runtime.tails) on the embedded broker: every record from the start to
    the true end, a batched tail included, tombstones kept, other partitions untouched."""
    from streams.runtime.tails import changelog_events, read_tails

    await scenario.create_topics()
    topic = scenario.settings.topic("dlq")
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker, linger_ms=50)
    await producer.start()
    consumer = AIOKafkaConsumer(bootstrap_servers=scenario.settings.broker, enable_auto_commit=False)
    await consumer.start()
    try:
        for n in range(6):  # partition 0: one record, then a batch of five (the last a tombstone)
            await producer.send(topic, None if n == 5 else b"[%d]" % n, key=b'"k%d"' % (n % 3), partition=0)
            if n == 0:
                await producer.flush()
        await producer.send_and_wait(topic, b"[9]", key=b'"other"', partition=1)
        tails = await read_tails(consumer, topic, {0: 2, 2: None})
        assert [m.offset for m in tails[0]] == [2, 3, 4, 5] and tails.get(2, []) == []
        events = changelog_events(tails[0])
        assert [(e.key, e.value) for e in events] == [("k2", [2]), ("k0", [3]), ("k1", [4]), ("k2", None)]
        assert (await read_tails(consumer, topic, {0: None}))[0][0].offset == 0  # None: from the first record
    finally:
        await producer.stop()
        await consumer.stop()
