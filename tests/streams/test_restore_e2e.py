"""The restore checkpoints on the real broker and database: a restore starts at the newest checkpoint older than
the window, and a checkpoint of another broker life (an offset past the end, or a record younger than the
checkpoint before it) is ignored, so Faust replays from the beginning instead of skipping state."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from engine.settings import Settings
from streams.runtime.restore import RestorePlan
from streams.store import Store
from streams.store.restore import Checkpoint, RestoreQueries
from streams.wire.topics import Topics, app_id, changelog_topics
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


async def send_batch(producer: AIOKafkaProducer, topic: str, partition: int, count: int) -> None:
    """``count`` records in one batch (the embedded broker then reports the partition's end too low)."""
    batch = producer.create_batch()
    for i in range(count):
        batch.append(key=b"k%d" % i, value=b"v%d" % i, timestamp=None)
    await (await producer.send_batch(batch, topic, partition=partition))


async def commit_drafts(settings: Settings, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` of the drafts topic for the gate's consumer group, as a worker does."""
    tps = {p: TopicPartition(Topics(settings.topic_prefix).drafts, p) for p in offsets}
    committer = AIOKafkaConsumer(bootstrap_servers=settings.broker, group_id=app_id(settings), enable_auto_commit=False)
    await committer.start()
    try:
        committer.assign(list(tps.values()))
        await committer.commit({tps[p]: offset for p, offset in offsets.items()})
    finally:
        await committer.stop()


async def test_a_verdict_records_restore_starts_where_the_committed_drafts_begin(scenario: Scenario) -> None:
    """Each verdict-records checkpoint also records the drafts partition's true end; a restore starts at the newest
    checkpoint whose drafts end is at most the committed offset (later than the window's), on the real broker."""
    await scenario.create_topics()
    settings = scenario.settings.with_(restore_window_s=900.0)
    drafts = Topics(settings.topic_prefix).drafts
    verdicts, pending = (next(t for t in changelog_topics(settings) if name in t) for name in ("verdict", "pending"))
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker)
    await producer.start()
    async with await Store.connect(settings.database()) as store:

        async def database(timeout_s: float | None) -> RestoreQueries:
            return store

        plan, last = RestorePlan(settings, database, partitions=3, kept=10), dict[int, int]()
        try:
            now_ms = int(time.time() * 1000)
            for p in (0, 1):  # p: 5 drafts (one batch), 4 verdict records; checkpoint; 3 drafts, 3 records; again
                await send_batch(producer, drafts, p, 5)
                await produce(settings.broker, verdicts, p, [now_ms] * 4)
            await plan.record_checkpoints(verdicts, {0, 1}, last)
            for p in (0, 1):
                await send_batch(producer, drafts, p, 3)
                await produce(settings.broker, verdicts, p, [now_ms] * 3)
            await plan.record_checkpoints(verdicts, {0, 1}, last)
            rows = await store.checkpoints_before([verdicts], datetime.now(UTC))
            assert sorted((r.partition, r.end_offset, r.source_end) for r in rows) == [(0, 7, 8), (1, 7, 8)]
            assert await plan.start_offsets(verdicts, {0, 1}) == {}  # nothing committed: the window's (none)
            await commit_drafts(settings, {0: 6, 1: 3})
            assert await plan.start_offsets(verdicts, {0, 1}) == {0: 4}  # p0 past draft 5: the first checkpoint
            await commit_drafts(settings, {0: 8})
            assert await plan.start_offsets(verdicts, {0, 1}) == {0: 7}  # every draft judged: the second one
            assert await plan.start_offsets(pending, {0, 1}) == {}  # other tables keep the window
        finally:
            await producer.stop()
            await plan.close()
