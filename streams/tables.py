"""Faust tables written on the hot path without Faust's per-write machinery.

:class:`DirectTable` updates a Faust table's in-memory store and marks the key dirty, remembering the
partition of the record being processed, which the caller sets in :data:`table_partition` (exactly where
Faust would write its changelog record).
:meth:`DirectTable.flush` sends one changelog record per dirty key — its value at flush time, so several
writes of one key in a batch cost one record, as a compacted changelog would keep anyway — on the worker's
output producer, and returns the delivery futures, so the caller can ack the source events only once their
state changes are durable. Faust still owns the table: it creates the changelog topic and restores the store
from it on start-up and on every rebalance. Keys and values are JSON, as Faust's ``json`` codec writes.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableMapping
from contextvars import ContextVar
from typing import Any

import orjson

table_partition: ContextVar[int | None] = ContextVar("table_partition", default=None)
"""The source partition of the record whose effects are being written (a changelog partition must match it)."""

Send = Callable[[str, bytes, bytes | None, int | None], Awaitable[asyncio.Future[Any]]]


class DirectTable(MutableMapping[str, Any]):
    def __init__(self, table: Any, send: Send) -> None:
        self._table = table
        self._send = send
        self._dirty: dict[str, int] = {}  # key -> changelog partition
        self._in_flight: dict[str, asyncio.Future[Any]] = {}  # key -> delivery of its latest record

    @property
    def _store(self) -> Any:
        return self._table.data

    @property
    def local(self) -> Any:
        """The worker's in-memory store itself: dropping a key from it writes no changelog record."""
        return self._store

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

    def _mark(self, key: str) -> None:
        partition = table_partition.get()
        if partition is None:
            raise RuntimeError("a table write needs the source record's partition (set table_partition)")
        self._dirty[key] = partition

    def __setitem__(self, key: str, value: Any) -> None:
        self._store[key] = value
        self._mark(key)

    def __delitem__(self, key: str) -> None:
        self._store.pop(key, None)
        self._mark(key)

    async def flush(self, keys: Iterable[str] | None = None, send: Send | None = None) -> list[asyncio.Future[Any]]:
        """Send the changelog records of the dirty ``keys`` (all dirty keys by default), with ``send`` if given.

        Returns the delivery futures of those keys' latest records, including records another flush sent
        and the broker has not confirmed yet: a caller acks its event only once its writes are durable.
        """
        wanted = list(self._dirty) if keys is None else keys
        deliveries: list[asyncio.Future[Any]] = []
        for key in wanted:
            partition = self._dirty.pop(key, None)
            if partition is not None:
                value = self._store.get(key)
                record = None if value is None else orjson.dumps(value)
                future = await (send or self._send)(self.topic, orjson.dumps(key), record, partition)
                self._in_flight[key] = future
                future.add_done_callback(functools.partial(self._settled, key))
            if (in_flight := self._in_flight.get(key)) is not None:
                deliveries.append(in_flight)
        return deliveries

    def _settled(self, key: str, done: asyncio.Future[Any]) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
