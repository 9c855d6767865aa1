"""The table store of a bounded restore (``drift-memory://``): Faust's in-memory store whose restore starts at a
checkpoint, reads the moved partitions' tails ahead and rebuilds the agents' windows from the record, as the
worker's :class:`~streams.runtime.restore.RestorePlan` says (:mod:`streams.runtime.restore` tells how)."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from faust.stores import STORES
from faust.stores.memory import Store as MemoryStore
from mode import Service

from streams.runtime import tails
from streams.runtime.readahead import Reading
from streams.runtime.restore import PENDING_TABLE, SEEDED_TABLE, RestorePlan

log = logging.getLogger(__name__)

STORE_SCHEME = "drift-memory"
STORE_URL = f"{STORE_SCHEME}://"


def register_store() -> str:
    """Make ``drift-memory://`` name :class:`RestoreStore` for Faust (idempotent); returns the URL."""
    STORES.aliases.setdefault(STORE_SCHEME, f"{__name__}:RestoreStore")
    return STORE_URL


def plan_of(app: Any) -> RestorePlan | None:
    plan = getattr(app, "restore", None)
    return plan if isinstance(plan, RestorePlan) else None


class RestoreStore(MemoryStore[Any, Any]):
    """Faust's in-memory table store whose restore starts at a checkpoint (see the module docstring); without a
    :class:`RestorePlan` on the app (``app.restore``) it is Faust's memory store.

    Keys written directly (:class:`streams.runtime.tables.DirectTable`) have their partition noted too, so a
    partition this worker no longer owns leaves its memory at the end of the next restore, as restored keys do.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.partition_of: dict[Any, int] = {}
        self.starts: dict[int, int] = {}
        self.active: set[int] = set()
        self.checkpointed: dict[int, int] = {}
        self.complete: set[int] = set()  # partitions whose memory holds their whole changelog (last recovery)
        self.failed: set[int] = set()  # partitions a changelog record of this worker failed to reach since then
        self.written: dict[int, int] = {}  # partition -> the last changelog offset known to be in memory
        self.reading = Reading()  # the moved partitions' read-ahead (streams.runtime.readahead)
        self.behind: dict[int, int] = {}  # partition -> the last offset of its tail read behind the recovery
        self._fresh: set[Any] = set()  # keys written directly meanwhile: newer than the tail's records of them
        self._caught_up = asyncio.Event()  # nothing is read behind the recovery
        self._caught_up.set()

    @property
    def topic(self) -> str:
        name: str = self.table.changelog_topic.get_topic_name()
        return name

    def note_partition(self, key: Any, partition: int | None) -> None:
        """``key`` was written for ``partition`` (None: deleted)."""
        if self.behind:
            self._fresh.add(key)
        if partition is None:
            self.partition_of.pop(key, None)
        else:
            self.partition_of[key] = partition

    def persisted_offset(self, tp: Any) -> int | None:
        """The last offset of ``tp`` already in memory: Faust applies the records after it. A partition this
        worker keeps across the rebalance is in memory up to its end, a moved one up to its read-ahead; any other
        starts after its checkpoint."""
        if (behind := self.behind.get(tp.partition)) is not None:  # read behind the recovery: Faust starts after
            return max(behind, self.written.get(tp.partition, -1))
        if (written := self.written.get(tp.partition)) is not None:
            return written
        start = self.starts.get(tp.partition)
        return None if start is None else start - 1

    def note_written(self, partition: int, offset: int) -> None:
        """Changelog record ``offset`` of ``partition`` is in memory (written here and delivered, or restored)."""
        if offset > self.written.get(partition, -1):
            self.written[partition] = offset

    def set_persisted_offset(self, tp: Any, offset: int) -> None:
        """Faust's call once a changelog record of its own table writes is delivered (a no-op in its memory
        store)."""
        self.note_written(tp.partition, offset)

    def apply_changelog_batch(self, batch: Any, to_key: Any, to_value: Any) -> None:
        events = list(batch)
        super().apply_changelog_batch(events, to_key, to_value)
        for event in events:
            self.note_written(event.message.partition, event.message.offset)

    def note_failed(self, partition: int) -> None:
        """A changelog record written here did not reach the broker: memory and changelog may differ, so the
        partition's next restore reads its changelog again even if this worker keeps it."""
        self.failed.add(partition)

    async def on_rebalance(self, assigned: Any, revoked: Any, newly_assigned: Any, generation_id: int = 0) -> None:
        await self.reading.cancel()  # a read of the previous rebalance still going: this one starts over
        await super().on_rebalance(assigned, revoked, newly_assigned, generation_id)
        plan = plan_of(self.app)
        retained = self._retained(assigned, newly_assigned)
        self.written = {p: offset for p, offset in self.written.items() if p in retained}
        self.complete, self.failed = set(), set()
        if plan is None:
            return
        moved = {tp.partition for tp in assigned if tp.topic == self.topic} - set(self.written)
        self.starts = {}  # looked up after the callback (_restore): Faust's recovery waits for that
        await self.reading.start(lambda: self._restore(plan, moved), self.topic)  # goes on past the callback

    async def _restore(self, plan: RestorePlan, moved: set[int]) -> None:
        """Look up where the tails of the ``moved`` partitions start, then read them (behind the recovery for
        pending attempts). Both happen after the rebalance callback, beside Faust's own preparations (its
        highwaters); a failed lookup leaves Faust's recovery to replay whole changelogs (slower, never wrong)."""
        began = time.monotonic()
        try:
            self.starts = await plan.start_offsets(self.topic, moved)
        except Exception:  # the broker or the database failed
            log.exception("no restore checkpoints for %s; restoring from the beginning", self.topic)
            self.starts = {}
            return
        read = self._read_behind if self.table.name == PENDING_TABLE else self._read_ahead
        await read(plan, moved, time.monotonic() - began)

    async def _read_ahead(self, plan: RestorePlan, partitions: set[int], looked_up: float) -> None:
        """Apply the changelog tails of ``partitions`` (from their checkpoints) read with the plan's own consumer,
        through the table as Faust's restore would (:mod:`streams.runtime.tails`); the store notes the offsets
        applied (:meth:`apply_changelog_batch`), where Faust's recovery then starts."""
        began = time.monotonic()
        found = await plan.read_tails(self.topic, {p: self.starts.get(p) for p in partitions})
        read = time.monotonic() - began
        self._apply(found)
        if partitions:
            applied = time.monotonic() - began - read
            log.info("%s: restore starts looked up in %.2f s, %d record(s) read in %.2f s and applied in %.2f s",
                     self.topic, looked_up, sum(map(len, found.values())), read, applied)  # fmt: skip

    async def _read_behind(self, plan: RestorePlan, partitions: set[int], looked_up: float) -> None:
        """:meth:`_read_ahead`, but Faust's recovery waits only until the tails' end offsets are known and starts
        after them (:attr:`behind`): the worker judges while the records before are read and applied. A key
        written directly meanwhile keeps its newer value. A read that does not end (a next rebalance, the
        broker) leaves its partitions to be read again at the next rebalance (:attr:`failed`)."""
        began, ended, released = time.monotonic(), False, 0.0

        def ends_known(ends: dict[int, int]) -> None:
            nonlocal released
            self.behind = {p: end - 1 for p, end in ends.items()}
            if self.behind:
                self._caught_up.clear()
            self.reading.release()
            released = time.monotonic() - began

        try:
            found = await plan.read_tails(self.topic, {p: self.starts.get(p) for p in partitions}, ends_known)
            self._apply(found)
            ended = bool(found) or not self.behind
        finally:
            if not ended:
                log.warning("%s: the tails of partitions %s not read; a later attempt of their drafts counts the "
                            "earlier ones as unknown", self.topic, sorted(self.behind))  # fmt: skip
                self.failed.update(self.behind)
            self.behind, self._fresh = {}, set()
            self._caught_up.set()
        log.info("%s: restore starts looked up in %.2f s, the recovery released after %.2f s, %d record(s) read and "
                 "applied behind it in %.2f s", self.topic, looked_up, released, sum(map(len, found.values())),
                 time.monotonic() - began)  # fmt: skip

    def _apply(self, found: dict[int, list[tails.ChangelogMessage]]) -> None:
        """Apply the records read through the table, as Faust's restore would; a key written directly during a
        read behind the recovery keeps its newer value (none is, outside one)."""
        for messages in found.values():
            events: Any = [e for e in tails.changelog_events(messages) if e.key not in self._fresh]  # Faust's EventT
            if events:
                self.table.apply_changelog_batch(events)

    def restoring(self, partition: int) -> bool:
        """Is ``partition``'s changelog tail being read behind the recovery?"""
        return partition in self.behind

    async def restored(self, partition: int) -> None:
        """Return once ``partition``'s changelog tail read behind the recovery is in memory (at once when none
        is being read; a read that fails or is cancelled ends the wait too, with what was applied)."""
        while partition in self.behind:
            await self._caught_up.wait()

    def _retained(self, assigned: Any, newly_assigned: Any) -> set[int]:
        """The partitions this worker keeps, whose memory is whole: owned before and after the rebalance (Faust's
        ``newly_assigned`` is against the previous assignment), recovered completely, no write of theirs lost.
        This worker was their only writer (a partition's records are written by its owner), so their memory
        holds every record of their changelogs: their restore has nothing to read (eager rebalances revoke every
        partition, and Faust would otherwise replay the changelog tail of each kept partition again)."""
        mine = {tp.partition for tp in assigned if tp.topic == self.topic}
        new = {tp.partition for tp in newly_assigned if tp.topic == self.topic}
        return (mine - new) & self.complete - self.failed

    async def on_stop(self) -> None:
        await self.reading.cancel()
        await super().on_stop()

    async def on_recovery_completed(self, active_tps: Any, standby_tps: Any) -> None:
        await super().on_recovery_completed(active_tps, standby_tps)
        self.active = {tp.partition for tp in active_tps}
        self.complete = set(self.active)
        for key in [k for k, p in self.partition_of.items() if p not in self.active]:
            self.data.pop(key, None)
            del self.partition_of[key]
        plan = plan_of(self.app)
        if plan is None:
            return
        if plan.enabled and self.table.name == SEEDED_TABLE and self.active:
            rebuilt = await plan.rebuild(self.data, self.note_partition, self.active)
            log.info("%s: %d agent window(s) rebuilt from the database", self.topic, rebuilt)

    @Service.task
    async def _checkpoints(self) -> None:
        """Record this table's changelog end offsets for the partitions it owns, every checkpoint interval.

        The stop wakes the sleep: no round then (it sits on the stop's path before the worker leaves its group,
        and grew with the broker's history to 0.3 s a table; a checkpoint that young is never a restore's
        start anyway, which takes one at least ``DRIFT_RESTORE_WINDOW_S`` old)."""
        plan = plan_of(self.app)
        if plan is None or not plan.enabled:
            return
        while not self.should_stop:
            await self.sleep(plan.settings.restore_checkpoint_s)
            if self.active and not self.should_stop:
                try:
                    await plan.record_checkpoints(self.topic, self.active, self.checkpointed)
                except Exception as exc:  # the next round tries again
                    log.warning("restore checkpoint of %s not recorded: %s", self.topic, exc)
