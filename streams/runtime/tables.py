"""Faust tables written on the hot path without Faust's per-write machinery.

:class:`DirectTable` updates a Faust table's in-memory store and marks the key dirty, remembering the
partition of the record being processed, which the caller names explicitly: writes go through
``table.at(partition)`` (exactly where Faust would write its changelog record); a write without one fails.
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
from typing import Any

import orjson

from engine.errors import ConfigurationError
from streams.runtime.faust_private import table_store_url
from streams.runtime.restore import STORE_SCHEME

Send = Callable[[str, bytes, bytes | None, int | None], Awaitable[asyncio.Future[Any]]]


class DirectTable(MutableMapping[str, Any]):
    """A Faust table with an in-memory store, written directly (see the module docstring).

    A persisted store (``rocksdb://``…) is refused: Faust records the changelog offsets it has applied with
    every write it makes itself, and a direct write would skip that bookkeeping, so a restart would replay
    or lose state silently.
    """

    def __init__(self, table: Any, send: Send) -> None:
        url = table_store_url(table)
        if not url.startswith(("memory:", f"{STORE_SCHEME}:")):
            raise ConfigurationError(f"table {table.name!r}: direct writes need a memory:// store, not {url}")
        self._table = table
        self._send = send
        self._note = getattr(self._store, "note_partition", None)  # streams.runtime.restore.RestoreStore
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

    def at(self, partition: int | None) -> PartitionWrites:
        """This table as written on behalf of a record of source ``partition`` (its changelog partition)."""
        return PartitionWrites(self, partition)

    def write(self, key: str, value: Any, partition: int | None) -> None:
        """Set ``key`` (delete it when ``value`` is None) for a record of source ``partition``."""
        if partition is None:
            raise RuntimeError("a table write needs the source record's partition (write through table.at(p))")
        if value is None:
            self._store.pop(key, None)
        else:
            self._store[key] = value
        if self._note is not None:  # the store drops the keys of partitions this worker no longer owns
            self._note(key, None if value is None else partition)
        self._dirty[key] = partition

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("DirectTable writes name their partition: use table.at(partition)[key] = value")

    def __delitem__(self, key: str) -> None:
        raise TypeError("DirectTable writes name their partition: use del table.at(partition)[key]")

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


class PartitionWrites(MutableMapping[str, Any]):
    """A :class:`DirectTable` bound to the source partition of the record being processed: reads are the
    table's, writes are marked for that partition's changelog (the explicit write context of a record)."""

    def __init__(self, table: DirectTable, partition: int | None) -> None:
        self.table = table
        self.partition = partition

    @property
    def local(self) -> Any:
        return self.table.local

    def __getitem__(self, key: str) -> Any:
        return self.table[key]

    def __contains__(self, key: object) -> bool:
        return key in self.table

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)

    def __setitem__(self, key: str, value: Any) -> None:
        self.table.write(key, value, self.partition)

    def __delitem__(self, key: str) -> None:
        self.table.write(key, None, self.partition)
