"""Changelog tails read ahead beyond the rebalance callback, with Faust's recovery waiting for them.

A table's read-ahead (:meth:`streams.runtime.restore_store.RestoreStore.on_rebalance`) reads a moved partition's
changelog tail with a plain consumer, tens of thousands of records a second, where Faust's recovery hands them
through one at a time (about 2,000 a second here). It used to run inside the rebalance callback, which must
return soon (a member cannot rejoin a next rebalance before it has), so it had 1.5 s, and a longer tail fell back
to Faust's recovery: a joining worker then spent seconds restoring.

Now the read is a task of its store (:class:`Reading`) that goes on after the callback returns. Faust's recovery
starts right after the callback and, before it decides where each changelog's reading starts, waits for every
store's read (:class:`ReadAheadRecovery`) and takes the offsets it applied: it finds nothing left to read. A next
rebalance cancels a read still going (the next restore starts over from what was applied); a read that outlasts
``READ_ON_S`` (a broker that does not answer) gives up, and Faust's recovery reads the tail as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from faust.tables.recovery import Recovery

log = logging.getLogger(__name__)

#: How long a table's read-ahead may go on in all before Faust's recovery reads its tails instead. Below Faust's
#: ``broker_request_timeout`` (90 s), which bounds the recovery's wait for it: past that Faust would read on its own.
READ_ON_S = 30.0


class Reading:
    """A store's read-ahead, at most one at a time."""

    def __init__(self) -> None:
        self._task: asyncio.Future[None] | None = None
        self._released = asyncio.Event()

    async def start(self, read: Callable[[], Awaitable[None]], name: str) -> None:
        """Cancel a read still going, then start ``read()`` of changelog ``name`` (it runs on; :meth:`done` waits
        for it, or until it calls :meth:`release`)."""
        await self.cancel()
        self._released = asyncio.Event()
        self._task = asyncio.ensure_future(_logged(read, name))

    def release(self) -> None:
        """The read goes on, but Faust's recovery need not wait for the rest of it: :meth:`done` returns (a read
        behind the recovery, :meth:`streams.runtime.restore_store.RestoreStore.restored`)."""
        self._released.set()

    async def done(self) -> None:
        """Wait until the current read has ended or released the recovery (a cancellation of the caller does not
        cancel the read)."""
        if (task := self._task) is None:
            return
        released: asyncio.Future[Any] = asyncio.ensure_future(self._released.wait())
        try:
            await asyncio.wait({task, released}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            released.cancel()

    async def cancel(self) -> None:
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait({task})


async def _logged(read: Callable[[], Awaitable[None]], name: str) -> None:
    try:
        await read()
    except asyncio.CancelledError:
        raise
    except Exception:  # Faust's own recovery reads on from wherever this stopped
        log.exception("changelog tails of %s not read ahead; Faust's recovery reads them", name)


def readings(tables: Iterable[Any]) -> list[Reading]:
    """The read-aheads of ``tables`` whose stores have one."""
    found = (getattr(getattr(table, "data", None), "reading", None) for table in tables)
    return [reading for reading in found if isinstance(reading, Reading)]


class ReadAheadRecovery(Recovery):
    """Faust's recovery that waits for its tables' read-aheads before it builds the offsets its reading starts at,
    and starts each changelog partition after what they applied (the store's ``persisted_offset`` now).

    Its highwaters are then raised to at least what the tables applied, read after their read-aheads and last
    writes: a table's persisted offset is a record the broker acknowledged (its own write) or served (a restore),
    so a highwater below it is one the embedded broker could not list in time (docs/known-issues.md, "Faust's
    consistency check crashed a worker that had just judged through a join"). Right after a worker judged through
    a join and revoked, its newest changelog writes are milliseconds old; Faust's consistency check took the
    listing's lag for lost data and crashed the worker (``ops.bench.handover --rounds 9``: 6048 applied, 6045
    listed)."""

    async def _build_offsets(self, consumer: Any, tps: Any, destination: Any, title: str) -> None:
        # Faust asks for the earliest offsets next: beside the reads (the embedded broker lists every batch of a
        # partition to answer, as long as a read's fetch on a long changelog)
        earliest: asyncio.Future[Any] = asyncio.ensure_future(consumer.earliest_offsets(*tps))
        try:
            await asyncio.gather(*(reading.done() for reading in readings(self.tables.values())))
        except BaseException:
            earliest.cancel()
            raise
        for tp in tps:
            table = self.tp_to_table.get(tp)
            applied = None if table is None else table.persisted_offset(tp)
            if applied is not None and (destination[tp] is None or applied > destination[tp]):
                destination[tp] = applied
        answered: Any = _Answered(earliest)
        await super()._build_offsets(answered, tps, destination, title)
        highwaters = self.active_highwaters if title == "active" else self.standby_highwaters
        for tp in tps:
            if destination[tp] is not None and highwaters.get(tp) is not None and destination[tp] > highwaters[tp]:
                log.info("%s[%d]: the broker lists up to %d, the table applied %d: its highwater is %d",
                         tp.topic, tp.partition, highwaters[tp], destination[tp], destination[tp])  # fmt: skip
                highwaters[tp] = destination[tp]


class _Answered:
    """Faust's consumer as its ``_build_offsets`` uses it, with the earliest offsets already asked for."""

    def __init__(self, earliest: asyncio.Future[Any]) -> None:
        self._earliest = earliest

    async def earliest_offsets(self, *partitions: Any) -> Any:
        return await self._earliest
