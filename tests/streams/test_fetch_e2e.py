"""One fetch of the worker's consumer thread (Faust's ``_fetch_records`` with ours on top) against the real
aiokafka fetcher and the embedded broker: the partitions a fetch returns are those that were active when it
began, whatever happens to Faust's set of active partitions while it waits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.runtime import faust_private as private
from streams.runtime.faust_app import faust_app
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import consumer_kwargs
from tests.stack import Scenario, eventually
from tests.streams.fakes import NothingToClose, no_skipped_batches

pytestmark = pytest.mark.e2e


async def test_records_of_partitions_paused_while_a_fetch_waits_are_neither_returned_nor_lost(
    scenario: Scenario, tmp_path: Path
) -> None:
    """The end of a table restore, as Faust does it: the changelog partitions (here ``messages``) are paused, so
    the set of active partitions is empty for a moment, before the stream partitions (``drafts``) are resumed.
    Before the fix a fetch waiting just then got the drafts aiokafka had buffered (it reads an empty request as
    "every partition"); Faust dropped them as not active, and aiokafka's position had moved past them: a worker
    restarted with bounded restores stopped handing drafts to the gate."""
    await scenario.create_topics()
    settings = scenario.settings.with_(data_dir=tmp_path)
    drafts = TopicPartition(settings.topic("drafts"), 0)
    changelog = TopicPartition(settings.topic("messages"), 0)
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker)
    await producer.start()
    kafka = AIOKafkaConsumer(**consumer_kwargs(settings), enable_auto_commit=False)
    await kafka.start()
    try:
        for n in range(3):
            await producer.send_and_wait(drafts.topic, b"draft %d" % n, partition=0)
        kafka.assign([drafts, changelog])
        await kafka.seek_to_beginning(drafts, changelog)
        assert await eventually(lambda: _buffered(kafka, drafts))  # aiokafka fetches every assigned partition

        app = faust_app(settings, 3, closing=NothingToClose(), skipped=no_skipped_batches)
        thread = private.consumer_thread(app.consumer)  # the worker's (streams.runtime.transport), not started
        active = {changelog}  # Faust's live set: the restore reads the changelog, the drafts are paused
        fetch = asyncio.ensure_future(thread._fetch_records(kafka, active, timeout=5.0, max_records=500))
        assert await eventually(lambda: _waiting(kafka))  # the fetch waits: the changelog has nothing yet
        active.clear()  # the restore is over: the changelog is paused, the drafts not resumed yet
        await producer.send_and_wait(changelog.topic, b"late changelog record", partition=0)  # wakes the fetch
        fetched = await fetch
        assert drafts not in fetched
        assert [r.offset for r in fetched.get(changelog, [])] in ([0], [])

        assert await thread._fetch_records(kafka, set(), timeout=0.5, max_records=500) == {}  # nothing asked
        resumed = await thread._fetch_records(kafka, {drafts}, timeout=5.0, max_records=500)
        assert [r.offset for r in resumed[drafts]] == [0, 1, 2]  # still there once the drafts are resumed
    finally:
        await kafka.stop()
        await producer.stop()


async def _waiting(kafka: AIOKafkaConsumer) -> bool:
    return bool(private.kafka_fetcher(kafka)._fetch_waiters)


async def _buffered(kafka: AIOKafkaConsumer, tp: TopicPartition) -> bool:
    return tp in private.fetch_results(private.kafka_fetcher(kafka))


async def test_a_partition_the_broker_cannot_list_within_the_wait_is_read_once_the_wait_grows(
    scenario: Scenario,
) -> None:
    """The embedded broker lists every batch of the partition, oldest first, on each fetch and stops at the
    fetch's max wait: past the point the listing reaches, a consumer reads nothing, however long it polls
    (docs/known-issues.md, "A partition the embedded broker cannot list in time"; at 10 ms the gate stopped
    answering after about 13,000 drafts a partition). Here a 1 ms wait and 6,000 batches of one record: the
    bare consumer reads nothing near the end; the worker's consumer (streams.runtime.fetchwait) doubles its
    wait until the broker answers, and reads."""
    settings = scenario.settings.with_(fetch_max_wait_ms=1)
    tp = TopicPartition(settings.topic("listing"), 0)
    producers = [AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=0) for _ in range(4)]
    bare = AIOKafkaConsumer(**consumer_kwargs(settings), enable_auto_commit=False)
    grows = kafka_consumer(settings, enable_auto_commit=False)
    try:
        for client in (*producers, bare, grows):
            await client.start()

        async def fill(producer: AIOKafkaProducer) -> None:
            for _ in range(BATCHES // len(producers)):
                await producer.send_and_wait(tp.topic, b"x" * 100, partition=0)  # one record, one batch

        await asyncio.gather(*(fill(producer) for producer in producers))
        for consumer in (bare, grows):
            consumer.assign([tp])
            consumer.seek(tp, BATCHES - 5)
        assert await _offsets(bare, tp, seconds=2.0) == []  # the quirk: nothing, though 5 records are there
        assert await _offsets(grows, tp, seconds=30.0) == list(range(BATCHES - 5, BATCHES))
        assert private.fetch_max_wait(private.kafka_fetcher(grows)) > 1
    finally:
        for client in (*producers, bare, grows):
            await client.stop()


BATCHES = 6000


async def _offsets(consumer: AIOKafkaConsumer, tp: TopicPartition, seconds: float) -> list[int]:
    """The offsets read until 5 arrived or ``seconds`` passed."""
    deadline, offsets = asyncio.get_running_loop().time() + seconds, list[int]()
    while len(offsets) < 5 and asyncio.get_running_loop().time() < deadline:
        found = await consumer.getmany(tp, timeout_ms=200)
        offsets += [record.offset for record in found.get(tp, [])]
    return offsets


async def test_a_verdict_path_consumer_fetches_briskly_while_records_flow_and_slows_down_at_rest(
    scenario: Scenario,
) -> None:
    """A record costs a hop about half the fetch wait on the embedded broker (it sleeps through the wait): while
    records flow a verdict-path consumer asks at its brisk wait, and a second after the last one at its usual
    wait again, so an idle consumer polls no more often than before."""
    settings = scenario.settings.with_(fetch_max_wait_ms=40, fetch_brisk_wait_ms=4)
    tp = TopicPartition(settings.topic("brisk"), 0)
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=0)
    consumer = kafka_consumer(settings, enable_auto_commit=False, brisk=True)
    try:
        for client in (producer, consumer):
            await client.start()
        consumer.assign([tp])
        await consumer.seek_to_end(tp)
        await consumer.position(tp)
        assert private.fetch_max_wait(private.kafka_fetcher(consumer)) == 40
        await producer.send_and_wait(tp.topic, b"x", partition=0)
        assert [r.value for r in (await consumer.getmany(tp, timeout_ms=5_000)).get(tp, [])] == [b"x"]

        async def wait_is(ms: int) -> bool:
            await consumer.getmany(tp, timeout_ms=50)
            return private.fetch_max_wait(private.kafka_fetcher(consumer)) == ms

        assert await eventually(lambda: wait_is(4), timeout_s=5.0, interval_s=0.0)
        assert await eventually(lambda: wait_is(40), timeout_s=5.0, interval_s=0.0)  # a second after the last
    finally:
        for client in (producer, consumer):
            await client.stop()
