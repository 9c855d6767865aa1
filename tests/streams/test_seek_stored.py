"""The monitor's and the shadows' consumers start where their stored offsets say; when the database cannot
tell (it is away during the assignment) the partitions stay paused and the loop raises, instead of aiokafka's
default of logging the listener's error and consuming from the beginning."""

from __future__ import annotations

from typing import Any

import asyncpg
import pytest
from aiokafka import TopicPartition

from streams.services.monitor import SeekStored


class Consumer:
    def __init__(self) -> None:
        self.paused: set[TopicPartition] = set()
        self.positions: dict[TopicPartition, int | str] = {}

    def pause(self, *partitions: TopicPartition) -> None:
        self.paused.update(partitions)

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    async def seek_to_beginning(self, tp: TopicPartition) -> None:
        self.positions[tp] = "beginning"


class Store:
    def __init__(self, offsets: dict[int, int] | None) -> None:
        self.offsets = offsets

    async def stored_offsets(self, group: str, topic: str) -> dict[int, int]:
        if self.offsets is None:
            raise asyncpg.CannotConnectNowError("the database system is shutting down")
        return self.offsets


def _owner(store: Store) -> Any:
    """An OffsetOwner whose store() is ``store``."""

    async def access() -> Store:
        return store

    return type("Owner", (), {"group": "persona-drift-monitor", "store": staticmethod(access)})()


ASSIGNED = {TopicPartition("drafts", 0), TopicPartition("drafts", 1)}


async def test_assigned_partitions_start_at_their_stored_offsets_or_the_beginning() -> None:
    consumer = Consumer()
    listener = SeekStored(consumer, _owner(Store({0: 42})))
    await listener.on_partitions_assigned(ASSIGNED)
    listener.check()
    assert consumer.positions == {TopicPartition("drafts", 0): 42, TopicPartition("drafts", 1): "beginning"}
    assert consumer.paused == set()


async def test_a_failed_read_of_the_stored_offsets_pauses_the_partitions_and_is_raised_by_the_loop() -> None:
    consumer = Consumer()
    listener = SeekStored(consumer, _owner(Store(None)))
    await listener.on_partitions_assigned(ASSIGNED)  # aiokafka would only log an error raised here
    assert consumer.paused == ASSIGNED and consumer.positions == {}
    with pytest.raises(asyncpg.CannotConnectNowError):
        listener.check()
