"""Faust tables written on the hot path without Faust's per-write machinery.

:class:`DirectTable` updates a Faust table's in-memory store and marks the key dirty, remembering the
partition of the record being processed, which the caller names explicitly: writes go through
``table.at(partition)`` (exactly where Faust would write its changelog record); a write without one fails.
:meth:`DirectTable.flush` sends one changelog record per dirty key — its value at flush time, so several
writes of one key in a batch cost one record, as a compacted changelog would keep anyway — on the worker's
output producer, and returns the delivery futures, so the caller can ack the source events only once their
state changes are durable. Faust still owns the table: it creates the changelog topic and restores the store
from it on start-up and on every rebalance. Keys and values are JSON, as Faust's ``json`` codec writes.

Expiry: the table remembers when and for which partition each key was last written (oldest first), so
:meth:`DirectTable.expire` drops the keys not written for a while and :meth:`DirectTable.evict` drops one key,
each with a *tombstone* (a null-value changelog record) on the key's partition when this worker owns it, so a
restore does not bring the entry back; a key of a partition it does not own (a standby copy) stays, since its
owner writes the tombstone and Faust applies it to the copy. Keys restored from the changelog are dated when
they are restored (the table watches Faust's ``apply_changelog_batch``, which also tells their partition).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Iterable, Iterator, MutableMapping
from typing import Any

import orjson

from engine.errors import ConfigurationError
from streams.runtime.eviction import Clock
from streams.runtime.faust_private import table_store_url
from streams.runtime.restore_store import STORE_SCHEME

Send = Callable[[str, bytes, bytes | None, int | None], Awaitable[asyncio.Future[Any]]]


class DirectTable(MutableMapping[str, Any]):
    """A Faust table with an in-memory store, written directly (see the module docstring).

    A persisted store (``rocksdb://``…) is refused: Faust records the changelog offsets it has applied with
    every write it makes itself, and a direct write would skip that bookkeeping, so a restart would replay
    or lose state silently.
    """

    def __init__(self, table: Any, send: Send, clock: Clock = time.monotonic) -> None:
        url = table_store_url(table)
        if not url.startswith(("memory:", f"{STORE_SCHEME}:")):
            raise ConfigurationError(f"table {table.name!r}: direct writes need a memory:// store, not {url}")
        self._table = table
        self._send = send
        self._clock = clock
        self._written: OrderedDict[str, tuple[float, int]] = OrderedDict()  # key -> (written at, partition)
        self._watch_restore(table)
        self._note = getattr(self._store, "note_partition", None)  # streams.runtime.restore_store.RestoreStore
        self._note_failed = getattr(self._store, "note_failed", None)  # ... its lost writes
        self._note_written = getattr(self._store, "note_written", None)  # ... and its delivered ones
        self._dirty: dict[str, int | tuple[int, ...]] = {}  # key -> changelog partition(s)
        self._in_flight: dict[str, asyncio.Future[Any]] = {}  # key -> delivery of its latest record

    def _watch_restore(self, table: Any) -> None:
        """Learn each restored key's partition: Faust applies changelog records (on start-up, on a rebalance, as
        a standby) through the table's public ``apply_changelog_batch``, wrapped here."""
        apply = table.apply_changelog_batch

        def apply_changelog_batch(batch: Iterable[Any]) -> None:
            events = list(batch)
            apply(events)
            self._restored(events)

        table.apply_changelog_batch = apply_changelog_batch

    def _restored(self, events: list[Any]) -> None:
        now = self._clock()
        for event in events:
            message = event.message
            try:
                key = orjson.loads(message.key)
            except (orjson.JSONDecodeError, TypeError):
                continue
            if not isinstance(key, str):
                continue
            if key not in self._store:  # a tombstone
                self._written.pop(key, None)
                continue
            self._written[key] = (now, message.partition)  # restored: dated now
            self._written.move_to_end(key)

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

    def restoring(self, partition: int | None) -> bool:
        """Is ``partition``'s changelog tail still being read into memory, behind Faust's recovery
        (:meth:`streams.runtime.restore_store.RestoreStore.restored`)?"""
        restoring = getattr(self._store, "restoring", None)
        return partition is not None and restoring is not None and bool(restoring(partition))

    async def restored(self, partition: int | None) -> None:
        """Return once ``partition``'s changelog tail is in memory (at once unless it is read behind the
        recovery)."""
        restored = getattr(self._store, "restored", None)
        if partition is not None and restored is not None:
            await restored(partition)

    def at(self, partition: int | None) -> PartitionWrites:
        """This table as written on behalf of a record of source ``partition`` (its changelog partition)."""
        return PartitionWrites(self, partition)

    def write(self, key: str, value: Any, partition: int | None) -> None:
        """Set ``key`` (delete it when ``value`` is None) for a record of source ``partition``."""
        if partition is None:
            raise RuntimeError("a table write needs the source record's partition (write through table.at(p))")
        if value is None:
            self._store.pop(key, None)
            self._written.pop(key, None)
        else:
            self._store[key] = value
            self._written[key] = (self._clock(), partition)
            self._written.move_to_end(key)
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
            for each in (partition,) if isinstance(partition, int) else partition or ():
                value = self._store.get(key)
                record = None if value is None else orjson.dumps(value)
                future = await (send or self._send)(self.topic, orjson.dumps(key), record, each)
                self._in_flight[key] = future
                future.add_done_callback(functools.partial(self._settled, key, each))
            if (in_flight := self._in_flight.get(key)) is not None:
                deliveries.append(in_flight)
        return deliveries

    def evict(self, key: str, owned: Collection[int]) -> bool:
        """Drop ``key`` with a tombstone for the next flush on its partition when that is one of ``owned`` (the
        partitions this worker is active for). A key of another partition is a standby copy: it stays (dated
        now), for its owner's tombstone removes it. A key whose partition is unknown (not written nor restored
        through this table) is dropped with a tombstone on every owned partition (a no-op record where the key
        never was). True when the key was dropped."""
        written = self._written.pop(key, None)
        if written is None:  # rebuilt from the record by a bounded restore: the store knows its partition
            noted = getattr(self._store, "partition_of", {}).get(key)
            return self._drop(key, -1 if noted is None else noted, owned)
        return self._drop(key, written[1], owned)

    def expire(self, ttl_s: float, owned: Collection[int]) -> list[str]:
        """Evict the keys not written (or adopted) for more than ``ttl_s``, oldest first; returns them."""
        cutoff = self._clock() - ttl_s
        expired: list[str] = []
        while self._written:
            key, (written_at, partition) = next(iter(self._written.items()))
            if written_at >= cutoff:
                break
            del self._written[key]
            if self._drop(key, partition, owned):
                expired.append(key)
        return expired

    def _drop(self, key: str, partition: int, owned: Collection[int]) -> bool:
        if key not in self._store:
            return False
        if partition >= 0 and partition not in owned:  # a standby copy: its owner's tombstone removes it
            self._written[key] = (self._clock(), partition)
            return False
        del self._store[key]
        if self._note is not None:
            self._note(key, None)
        if partition < 0:  # partition unknown
            if owned:
                self._dirty[key] = tuple(sorted(owned))
        else:
            self._dirty[key] = partition
        return True

    def adopt(self) -> int:
        """Date now the keys in memory this worker never wrote (restored from the changelog); returns how many."""
        now, adopted = self._clock(), 0
        for key in self._store:
            if key not in self._written:
                self._written[key] = (now, -1)
                adopted += 1
        return adopted

    def _settled(self, key: str, partition: int, done: asyncio.Future[Any]) -> None:
        if self._in_flight.get(key) is done:
            del self._in_flight[key]
        if done.cancelled() or done.exception() is not None:
            if self._note_failed is not None:
                self._note_failed(partition)
        elif self._note_written is not None and isinstance(offset := getattr(done.result(), "offset", None), int):
            self._note_written(partition, offset)  # a batch's delivery names its first record: a lower bound


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
