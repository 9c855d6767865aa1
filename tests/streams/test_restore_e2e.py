"""The restore checkpoints on the real broker and database: a restore starts at the newest checkpoint older than
the window, and a checkpoint of another broker life (an offset past the end, or a record younger than the
checkpoint before it) is ignored, so Faust replays from the beginning instead of skipping state."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.runtime.restore import RestorePlan
from streams.store import Store
from streams.store.restore import Checkpoint, RestoreQueries
from tests.stack import Scenario

pytestmark = pytest.mark.e2e
HOUR_MS = 3_600_000


async def produce(broker: str, topic: str, partition: int, stamps_ms: list[int]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker)
    await producer.start()
    try:
        for i, stamp in enumerate(stamps_ms):
            await producer.send_and_wait(topic, b"v%d" % i, key=b"k%d" % i, partition=partition, timestamp_ms=stamp)
    finally:
        await producer.stop()


async def test_restore_starts_at_a_checkpoint_of_this_broker_life_only(scenario: Scenario) -> None:
    settings = scenario.settings.with_(restore_window_s=60.0)
    topic = f"{scenario.prefix}probe-changelog"
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.broker)
    await admin.start()
    await admin.create_topics([NewTopic(topic, 3, 1)])
    await admin.close()
    now_ms = int(time.time() * 1000)
    await produce(settings.broker, topic, 0, [now_ms - 2 * HOUR_MS] * 10)  # old records: p0's checkpoint holds
    await produce(settings.broker, topic, 1, [now_ms] * 10)  # records younger than p1's checkpoint: another life
    async with await Store.connect(settings.database()) as store:
        taken = datetime.now(UTC) - timedelta(hours=1)
        rows = [
            Checkpoint(topic, 0, 8, taken),
            Checkpoint(topic, 1, 8, taken),
            Checkpoint(topic, 2, 5, taken),
            Checkpoint(topic, 0, 9, datetime.now(UTC)),
        ]  # fmt: skip  (p2: past its end; p0 @9: too recent)
        await store.record_checkpoints(rows, taken - timedelta(hours=1))

        async def database(timeout_s: float | None) -> RestoreQueries:
            return store

        plan = RestorePlan(settings, database, partitions=3, kept=10)
        try:
            assert await plan.start_offsets(topic, {0, 1, 2}) == {0: 8}
            assert await plan.start_offsets(topic, {1, 2}) == {}
            assert await plan.start_offsets(topic, set()) == {}
        finally:
            await plan.close()


async def test_the_embedded_broker_holds_the_changelogs_as_compacted(scenario: Scenario) -> None:
    """It keeps the configuration (it does not compact, which is why restores are bounded another way)."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    from streams.wire.topics import changelog_topics

    await scenario.create_topics()
    admin = AIOKafkaAdminClient(bootstrap_servers=scenario.settings.broker)
    await admin.start()
    try:
        names = changelog_topics(scenario.settings)
        described = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
    finally:
        await admin.close()
    policies = {r[3]: dict((e[0], e[1]) for e in r[4]) for response in described for r in response.resources}
    assert {n: policies[n]["cleanup.policy"] for n in names} == {
        n: "compact,delete" if "message-counts" in n else "compact" for n in names
    }
