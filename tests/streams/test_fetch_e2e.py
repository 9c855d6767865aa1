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
