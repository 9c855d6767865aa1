"""Faust tables written on the hot path without Faust's per-write machinery.

:class:`DirectTable` updates a Faust table's in-memory store and queues its changelog record, partitioned like
the event being processed (exactly what Faust does); :meth:`DirectTable.flush` sends the queued records on the
worker's output producer and returns their delivery futures, so the caller can ack the source event only once
its state change is durable. Faust still owns the table: it creates the changelog topic and restores the
store from it on start-up and on every rebalance. Keys and values are JSON, as Faust's ``json`` codec writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

import orjson
from faust.streams import current_event

Send = Callable[[str, bytes, bytes | None, int | None], Awaitable[asyncio.Future[Any]]]


class DirectTable(MutableMapping[str, Any]):
    def __init__(self, table: Any, send: Send) -> None:
        self._table = table
        self._send = send
        self._queued: list[tuple[bytes, bytes | None, int | None]] = []

    @property
    def _store(self) -> Any:
        return self._table.data

    @property
    def topic(self) -> str:
        name: str = self._table.changelog_topic.get_topic_name()
        return name

    def __getitem__(self, key: str) -> Any:
        return self._store[key]

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)

    def __len__(self) -> int:
        return len(self._store)

    def _partition(self) -> int | None:
        event = current_event()
        return None if event is None else int(event.message.partition)

    def __setitem__(self, key: str, value: Any) -> None:
        self._store[key] = value
        self._queued.append((orjson.dumps(key), orjson.dumps(value), self._partition()))

    def __delitem__(self, key: str) -> None:
        self._store.pop(key, None)
        self._queued.append((orjson.dumps(key), None, self._partition()))

    async def flush(self) -> list[asyncio.Future[Any]]:
        """Send the queued changelog records; returns their delivery futures."""
        queued, self._queued = self._queued, []
        return [await self._send(self.topic, key, value, partition) for key, value, partition in queued]
