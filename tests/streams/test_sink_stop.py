"""A sink closes both of its Kafka clients, even when a second cancel interrupts the consumer's stop."""

from __future__ import annotations

import asyncio
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
    monkeypatch.setattr(sinks, "AIOKafkaConsumer", Client)
    monkeypatch.setattr(sinks, "AIOKafkaProducer", Client)

    async def no_store() -> Any:
        raise AssertionError("nothing is written")

    with pytest.raises(asyncio.CancelledError):
        await sinks.run_sink(Settings(), no_store, "run_messages")
    assert Client.stopped == ["consumer", "producer"]
