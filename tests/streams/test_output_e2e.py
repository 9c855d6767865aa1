"""End-to-end: the output producer's batches on the embedded broker land where single sends would."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaProducer

from streams.runtime import output as output_module
from streams.runtime.output import Output
from tests.stack import Scenario, read_records

pytestmark = pytest.mark.e2e


async def records_by_partition(broker: str, topic: str, count: int) -> dict[int, list[tuple[bytes, bytes]]]:
    found: dict[int, list[tuple[bytes, bytes]]] = {}
    for record in await read_records(broker, topic, count):
        found.setdefault(record.partition, []).append((record.key, record.value))
    return found


async def default_partitions(broker: str, topic: str, keys: list[bytes]) -> dict[bytes, int]:
    """Where aiokafka's own producer puts each key (its default partitioner)."""
    producer = AIOKafkaProducer(bootstrap_servers=broker)
    await producer.start()
    try:
        return {key: (await producer.send_and_wait(topic, b"probe", key=key)).partition for key in keys}
    finally:
        await producer.stop()


async def test_a_batch_keeps_per_key_order_on_the_default_partition(scenario: Scenario) -> None:
    await scenario.create_topics()
    topic = scenario.settings.topic("verdicts")
    keys = [f"agent-{n}".encode() for n in range(12)]
    output = Output(scenario.settings)
    try:
        batch = output.batch()
        futures = [await batch.send(topic, keys[n % 12], b"%d" % n) for n in range(240)]
        assert not any(f.done() for f in futures)  # nothing leaves before the flush
        await batch.flush()
        await asyncio.wait_for(asyncio.gather(*futures), 10)
        assert len(set(futures)) <= 3  # one delivery future per partition batch, shared by its records
        single = await output.send(topic, keys[0], b"single")
        await asyncio.wait_for(single, 10)
    finally:
        await output.close()
    found = await records_by_partition(scenario.settings.broker, topic, 241)
    expected = await default_partitions(scenario.settings.broker, scenario.settings.topic("messages"), keys)
    for partition, records in found.items():
        for key, _ in records:
            assert expected[key] == partition
        for key in keys:
            values = [int(v) for k, v in records if k == key and v != b"single"]
            assert values == sorted(values)
    assert sum(map(len, found.values())) == 241


async def test_a_full_batch_rolls_over_and_an_oversized_record_goes_alone(
    scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output_module, "MAX_BATCH_BYTES", 1024)
    await scenario.create_topics()
    topic = scenario.settings.topic("verdicts")
    output = Output(scenario.settings)
    try:
        batch = output.batch()
        small = [await batch.send(topic, b"k", b"x" * 200) for _ in range(20)]
        assert len(set(small)) > 1  # 20 x 200 bytes do not fit one 1 KiB batch
        big = await batch.send(topic, b"k", b"y" * 5000)
        await batch.flush()
        await asyncio.wait_for(asyncio.gather(*small, big), 10)
    finally:
        await output.close()
    found = await records_by_partition(scenario.settings.broker, topic, 21)
    values = [value for records in found.values() for _, value in records]
    assert values == [b"x" * 200] * 20 + [b"y" * 5000]
