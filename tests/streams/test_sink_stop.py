"""A sink closes both of its Kafka clients, even when a second cancel interrupts the consumer's stop."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine.settings import Settings
from streams.services import sinks


class Client:
    """Stands in for aiokafka's consumer and producer: started at once; ``stop`` is recorded."""

    stopped: list[str]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.name = "consumer" if args else "producer"

    async def start(self) -> None:
        return None

    async def getmany(self, **kwargs: Any) -> dict[Any, Any]:
        raise asyncio.CancelledError  # the first Ctrl-C cancels the sink while it fetches

    async def stop(self) -> None:
        Client.stopped.append(self.name)
        if self.name == "consumer":
            raise asyncio.CancelledError  # the second Ctrl-C lands while the consumer leaves its group


async def test_a_second_cancel_during_the_consumer_stop_still_closes_the_producer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Client.stopped = []
    monkeypatch.setattr(sinks, "kafka_consumer", lambda settings, *topics, **kwargs: Client(*topics, **kwargs))
    monkeypatch.setattr(sinks, "AIOKafkaProducer", Client)

    async def no_store() -> Any:
        raise AssertionError("nothing is written")

    with pytest.raises(asyncio.CancelledError):
        await sinks.run_sink(Settings(), no_store, "run_messages")
    assert Client.stopped == ["consumer", "producer"]


async def test_a_stop_during_a_commit_waits_for_it_and_leaves_no_unretrieved_error() -> None:
    """aiokafka shields its commit request: a sink cancelled mid-commit used to leave it failing against the closing
    connection ("Task exception was never retrieved" and a traceback on a routine stop)."""
    events: list[str] = []
    release = asyncio.Event()

    class Consumer:
        async def commit(self) -> None:
            async def request() -> None:  # the shielded request: it fails once the connection closes
                await release.wait()
                events.append("request failed")
                raise ConnectionError("Connection closed")

            await asyncio.shield(asyncio.ensure_future(request()))

    unretrieved: list[Any] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: unretrieved.append(context))
    sink = asyncio.ensure_future(sinks.commit_through_a_stop(Consumer(), grace_s=5.0))
    await asyncio.sleep(0.01)
    sink.cancel()  # the worker stops
    await asyncio.sleep(0.01)
    assert not sink.done()  # still waiting for the commit in flight
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await sink
    assert events == ["request failed"]
    import gc

    gc.collect()
    assert unretrieved == []


async def test_a_commit_refused_because_the_group_rebalanced_does_not_end_the_sink(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A sink's commit that raced its group's rebalance (a worker killed, its sink member evicted) raised aiokafka's
    CommitFailedError out of the sinks' task, which crashed the whole worker app (seen in ``make chaos``
    kill-workers). It is said once and the sink goes on with its next fetch; the rows are written either way."""
    from aiokafka.errors import CommitFailedError, RequestTimedOutError
    from aiokafka.structs import ConsumerRecord, TopicPartition

    refusals = [CommitFailedError("the group has already rebalanced"), RequestTimedOutError()]
    fetches: list[int] = []
    written: list[int] = []

    class Consumer(Client):
        async def getmany(self, **kwargs: Any) -> dict[Any, Any]:
            fetches.append(len(fetches))
            if len(fetches) > 3:
                raise asyncio.CancelledError  # the worker stops
            record = ConsumerRecord("loop.messages", 0, len(fetches), 0, 0, b"k", b"v", None, 1, 1, [])
            return {TopicPartition("loop.messages", 0): [record]}

        async def commit(self) -> None:
            if refusals:
                raise refusals.pop(0)

        async def stop(self) -> None:
            return None

    async def items(model: Any, records: list[Any], reject: Any) -> list[Any]:
        return [record.offset for record in records]

    async def write(writer: Any, table: Any, batch: list[Any], reject: Any, on_retry: Any) -> None:
        written.extend(batch)

    async def store() -> Any:
        return None

    Client.stopped = []
    caplog.set_level(logging.INFO, logger="streams.services.sinks")
    monkeypatch.setattr(sinks, "kafka_consumer", lambda settings, *topics, **kwargs: Consumer(*topics, **kwargs))
    monkeypatch.setattr(sinks, "AIOKafkaProducer", Client)
    monkeypatch.setattr(sinks, "decode_items", items)
    monkeypatch.setattr(sinks, "write_batch", write)
    monkeypatch.setattr(sinks, "_writer", lambda store, table: None)
    with pytest.raises(asyncio.CancelledError):
        await sinks.run_sink(Settings(), store, "run_messages")
    assert written == [1, 2, 3] and refusals == []  # every batch written, past both refused commits
    said = [r.getMessage() for r in caplog.records if "sink offsets not committed" in r.getMessage()]
    assert len(said) == 2 and "rebalanced" in said[0], said
