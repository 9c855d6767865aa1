"""A worker's partition claims: what lets it go on judging through a rebalance's join without a partition ever
being read by two workers at once (:mod:`streams.runtime.faust_private.rejoin`).

The claims live in PostgreSQL (``group_claims``, migration 016), written on the peer watch's own connection while
it holds the worker's lock (:mod:`streams.worker.peers`): a claim counts only as long as its worker's connection,
so a killed worker's partitions wait for nothing. The coordinator calls this class on the consumer's thread; the
connection lives on the worker's event loop, so each call crosses over to it.

Without its lock (the database away, or the worker not registered yet) a worker claims nothing and revokes its
partitions before each join, as aiokafka does; a new owner that cannot read the claims waits
:data:`UNREADABLE_WAIT_S` and goes on, with a warning.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

from streams.store.peers import PeerLock, claimed_elsewhere, connect

if TYPE_CHECKING:
    from streams.worker.peers import PeerWatch

log = logging.getLogger(__name__)

T = TypeVar("T")

#: How often a new owner asks whether the partitions it gets are still claimed.
POLL_S = 0.02
#: How long a new owner waits for claims that are not released (the old owner is stuck, or cut off from the
#: database while it lives) before it goes on, with a warning.
CLAIMED_WAIT_S = 30.0
#: How long a new owner that cannot read the claims (the database away) waits before it goes on.
UNREADABLE_WAIT_S = 5.0
#: How long one claim may take before the worker counts it as not written, and how often it tries.
CLAIM_BOUND_S = 2.0
CLAIM_TRIES = 3


class PartitionClaims:
    """The worker's claims, on its peer watch's connection (:class:`streams.runtime.faust_private.rejoin.Claims`)."""

    def __init__(self, watch: PeerWatch, loop: asyncio.AbstractEventLoop) -> None:
        self.watch = watch
        self.loop = loop  # the worker's event loop, where the connection lives
        self.waited_s = 0.0  # how long partitions new to this worker waited for releases, in all (/metrics)
        self._written: tuple[frozenset[str], PeerLock] | None = None
        self._order = itertools.count(1)  # claims are numbered when asked for, on whichever thread
        self._asking = threading.Lock()
        self._asked: frozenset[str] | None = None  # the newest claim asked for
        self._newest = 0  # the number of the newest claim written: an older one arriving later is dropped

    def holds(self, partitions: frozenset[str]) -> bool:
        lock = self.watch.held_lock()
        return lock is not None and self._written == (partitions, lock)

    async def claim(self, partitions: frozenset[str]) -> bool:
        """Tried :data:`CLAIM_TRIES` times: a claim not written leaves a partition this worker released claimed
        (its next owner waits until this worker's connection closes, or :data:`CLAIMED_WAIT_S`)."""
        with self._asking:  # numbered and remembered together: the watch reads the newest from another thread
            number, self._asked = next(self._order), partitions
        return await self._write(partitions, number)

    async def claim_again(self) -> bool:
        """Write the newest claim asked for again (the worker has just registered, or registered again after the
        database came back): a join's claim asked for meanwhile is newer and wins. False: none asked for yet."""
        with self._asking:
            number, partitions = next(self._order), self._asked
        return partitions is not None and await self._write(partitions, number)

    async def _write(self, partitions: frozenset[str], number: int) -> bool:
        for _ in range(CLAIM_TRIES):
            try:
                return await self._on_worker_loop(self._claim(partitions, number))
            except Exception as exc:
                log.debug("partition claims: not written (%s: %s)", type(exc).__name__, exc)
                self._written = None
        return False

    async def _claim(self, partitions: frozenset[str], number: int) -> bool:
        if (lock := self.watch.held_lock()) is None:
            self._written = None
            return False
        async with asyncio.timeout(CLAIM_BOUND_S), self.watch.busy:
            if number < self._newest:  # a later claim is written already (the watch's, read before a join's)
                return False
            await lock.claim(sorted(partitions))
            self._newest = number
        self._written = (partitions, lock)
        return True

    async def released(self, partitions: frozenset[str]) -> None:
        if not partitions:
            return
        started = time.monotonic()
        await self._on_worker_loop(self._released(sorted(partitions)))
        self.waited_s += time.monotonic() - started

    async def _released(self, partitions: list[str]) -> None:
        if (group := self.watch.group_id()) is None:
            return
        started, own = time.monotonic(), None  # own: a connection of its own while the worker is not registered
        try:
            while True:
                try:
                    if (lock := self.watch.held_lock()) is None:
                        own = own or await connect(self.watch.settings.database(), CLAIM_BOUND_S)
                    if own is None and lock is not None:
                        claimed = await self._claimed(lock.connection, True, group, partitions)
                    else:
                        claimed = await self._claimed(own, False, group, partitions)
                except Exception as exc:
                    if time.monotonic() - started >= UNREADABLE_WAIT_S:
                        log.warning("partition claims unreadable (%s: %s): taking %d partition(s) without waiting "
                                    "for their release", type(exc).__name__, exc, len(partitions))  # fmt: skip
                        return
                    claimed = None
                if claimed is not None and not claimed:
                    return
                if time.monotonic() - started >= CLAIMED_WAIT_S:
                    log.warning("partitions %s still claimed by another worker after %.0f s: taking them anyway",
                                sorted(claimed or ()), CLAIMED_WAIT_S)  # fmt: skip
                    return
                await asyncio.sleep(POLL_S)
        finally:
            if own is not None:
                own.terminate()

    async def _claimed(self, connection: Any, shared: bool, group: str, partitions: list[str]) -> set[str]:
        """``shared``: the peer watch's connection, one operation at a time."""
        async with asyncio.timeout(CLAIM_BOUND_S):
            if not shared:
                return await claimed_elsewhere(connection, group, self.watch.token, partitions)
            async with self.watch.busy:
                return await claimed_elsewhere(connection, group, self.watch.token, partitions)

    async def unclaim(self) -> None:
        try:
            await self._on_worker_loop(self._unclaim())
        except Exception as exc:  # the claim counts until the worker's connection closes, a moment later
            log.debug("partition claims: not withdrawn (%s: %s)", type(exc).__name__, exc)

    async def _unclaim(self) -> None:
        self._written = None
        if (lock := self.watch.held_lock()) is not None:
            async with asyncio.timeout(CLAIM_BOUND_S), self.watch.busy:
                await lock.unclaim()

    def rejoining(self) -> None:
        news = self.watch.rebalancing()
        try:
            asyncio.run_coroutine_threadsafe(news, self.loop)
        except RuntimeError:  # the worker's loop is closed: nobody to tell
            news.close()

    async def _on_worker_loop(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` on the worker's event loop from whichever loop calls (the consumer thread's)."""
        if asyncio.get_running_loop() is self.loop:
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))
