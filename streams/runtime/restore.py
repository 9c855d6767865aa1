"""Table restores bounded by live state, not by history, on a broker that never compacts.

Faust restores a table by replaying its changelog from the first offset the broker still holds. Kafka compacts
changelogs (:func:`streams.wire.topics.topic_configs`), so that is about one record per live key there; the
embedded broker (Tansu, memory storage) keeps every record until it stops, so each restore — a worker joining,
a rebalance, a restart — replayed all history (16 s after 150,000 drafts, growing).

The mechanism here, used on every broker unless ``DRIFT_RESTORE_WINDOW_S=0``:

* **A checkpoint index in PostgreSQL.** Every ``DRIFT_RESTORE_CHECKPOINT_S`` a worker records the end offset of
  each changelog partition it owns (``changelog_checkpoints``). Every record before such an offset was written
  by then.
* **Restore the tail only.** When a worker is assigned a partition, each table's changelog is read from the
  newest checkpoint at least ``DRIFT_RESTORE_WINDOW_S`` old (Faust's ``persisted_offset`` hook of the store),
  not from the beginning. A checkpoint of an earlier broker life (the embedded broker forgets everything when
  ``drift up`` stops) is recognised — its offset is past the end, or the record before it is younger than the
  checkpoint — and ignored.
* **Rebuild what lives longer than the tail from the record.** The only long-lived state is an agent's
  ``recent-messages`` window (its similarity window): once the tail is applied, every agent of the worker's
  partitions that has no entry gets its newest committed actions from ``run_messages`` (PostgreSQL). Verdict
  records older than the window are not restored (a draft is redelivered only while its offset is uncommitted:
  seconds), nor those of drafts before the committed offsets when a checkpoint says where those end
  (:mod:`streams.runtime.redelivery`); pending attempts are read back at least ``DRIFT_PENDING_TTL_S``, after
  which they expire anyway.
* **Pending attempts are read behind the recovery.** Their tail is the longest (an hour of retried drafts, and
  a draft asked to retry and never retried stays for all of it), and only a draft's later attempt needs its
  entry. So Faust's recovery waits only until that tail's end offsets are known and starts after them; the
  worker is ready and judges first attempts while the tail is read and applied, and a later attempt of a
  partition still being read waits for it (a newer write of a key wins over the tail's records of it).
  Windowed action counts older than the window restart from what the window holds (an evaluation may come
  later, never twice).

The same rebuild makes the windows survive a restart of the embedded stack: the broker comes back empty, the
checkpoints of its earlier life are ignored, and the windows come from PostgreSQL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.partitioner import murmur2

from engine.errors import ServiceError
from engine.settings import Settings
from streams.runtime import tails
from streams.runtime.fetchwait import kafka_consumer
from streams.runtime.readahead import READ_ON_S
from streams.runtime.redelivery import COMMITTED_WAIT_S, DraftOffsets
from streams.store.restore import Checkpoint, RecentAction, RestoreQueries
from streams.wire.kafka import start_with_retry
from streams.wire.topics import changelog_table

log = logging.getLogger(__name__)

#: How long a restore waits for the database to look up checkpoints before it replays whole changelogs.
LOOKUP_WAIT_S = 10.0
#: The restore consumers' fetch wait: they read records the broker already holds, so a fetch returns as soon as
#: the broker has listed them, and a long wait only stops a slow listing from coming back empty (the embedded
#: broker lists every batch of a partition on each fetch: docs/known-issues.md). At the gate's 10 ms, three tables
#: reading side by side on a loaded host needed more than 1.5 s for one tail (BENCHMARKS.md, run AB).
FETCH_WAIT_MS = 500
#: Checkpoint rows are kept this many windows back (plus the newest older one per partition).
KEEP_WINDOWS = 2
#: The table whose entries are rebuilt from the record after a restore.
SEEDED_TABLE = "recent-messages"
#: The table whose tail is at least the pending TTL, read behind Faust's recovery: only a draft's later attempt
#: needs its entry, and it waits for it (:meth:`streams.runtime.restore_store.RestoreStore.restored`).
PENDING_TABLE = "pending-attempts"
#: What a restore read meets once the plan has closed (the worker stops).
STOPPING = "the worker is stopping: no restore reads"

Database = Callable[[float | None], Awaitable[RestoreQueries | None]]


def agent_partition(agent_id: str, partitions: int) -> int:
    """The partition of a record keyed ``agent_id`` (Kafka's default partitioner, murmur2, as every producer of
    the protocol uses: drafts and messages of one agent share a partition, and so do its table entries)."""
    hashed: int = murmur2(agent_id.encode("utf-8"))
    return (hashed & 0x7FFFFFFF) % partitions


def recent_entries(actions: Iterable[RecentAction]) -> dict[str, list[dict[str, Any]]]:
    """Per agent, its ``recent-messages`` entries rebuilt from its newest actions (oldest first), in the shape
    :func:`streams.services.gate.remember_commit` writes; ``n`` is the action's ordinal among the agent's."""
    grouped: dict[str, list[RecentAction]] = {}
    for action in actions:
        grouped.setdefault(action.agent_id, []).append(action)
    entries: dict[str, list[dict[str, Any]]] = {}
    for agent_id, rows in grouped.items():
        first = rows[0].total - len(rows) + 1
        entries[agent_id] = [
            {"id": r.message_id, "text": r.text, "channel": r.channel, "n": first + i} for i, r in enumerate(rows)
        ]
    return entries


class RestorePlan:
    """Shared by the tables of one worker: restore start offsets, checkpoints, and the rebuild of the windows.

    ``database(timeout)`` returns the store once it is open (None after ``timeout`` seconds; None waits
    forever); ``kept``: entries per agent in ``recent-messages``.
    """

    def __init__(
        self, settings: Settings, database: Database, *, partitions: int, kept: int,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:  # fmt: skip
        self.settings = settings
        self.database = database
        self._close_database = close
        self.partitions = partitions
        self.kept = kept
        #: one consumer per changelog topic: the tables prepare their restores side by side, each assigning its own
        self._consumers: dict[str, AIOKafkaConsumer] = {}
        self._gave_up_at: float | None = None  # when a checkpoint lookup last found no database in time
        self._locks: dict[str, asyncio.Lock] = {}  # per topic: a joining worker starts its consumers side by side
        self._read_ahead_off_until = 0.0  # a read-ahead that took too long turns it off for a while
        self._closed = False
        self.drafts = DraftOffsets(settings, self.consumer)  # where verdict records' restores may start

    @property
    def enabled(self) -> bool:
        return self.settings.restore_window_s > 0

    async def consumer(self, topic: str) -> AIOKafkaConsumer:
        """The plain consumer that reads changelog ``topic`` for restores (started on first use, kept until closed)."""
        async with self._locks.setdefault(topic, asyncio.Lock()):
            if (consumer := self._consumers.get(topic)) is None:
                if self._closed:
                    raise ServiceError(STOPPING)
                consumer = kafka_consumer(self.settings, enable_auto_commit=False, fetch_max_wait_ms=FETCH_WAIT_MS)
                await start_with_retry(consumer, self.settings.broker, 30.0)
                if self._closed:  # closed while it started: close() did not see it
                    await consumer.stop()
                    raise ServiceError(STOPPING)
                self._consumers[topic] = consumer
            return consumer

    async def close(self) -> None:
        self._closed = True
        consumers, self._consumers = list(self._consumers.values()), {}
        await asyncio.gather(*(consumer.stop() for consumer in consumers), self.drafts.close(), return_exceptions=True)
        if self._close_database is not None:
            await self._close_database()

    async def start_offsets(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        """Per partition of changelog ``topic``, the offset its restore starts at (absent: the beginning)."""
        if not self.enabled:
            return {}
        # once a lookup has waited in vain, the tables of the next rebalances do not wait again (Faust's recovery
        # waits for them)
        gave_up = self._gave_up_at is not None and time.monotonic() - self._gave_up_at < 2 * LOOKUP_WAIT_S
        db = await self.database(0.0 if gave_up else LOOKUP_WAIT_S)
        self._gave_up_at = time.monotonic() if db is None else None
        if db is None:
            log.warning("no database within %.0f s: %s is restored from its beginning", LOOKUP_WAIT_S, topic)
            return {}
        before = datetime.now(UTC) - timedelta(seconds=self.window_s(topic))
        wanted = set(partitions)
        found = [c for c in await db.checkpoints_before([topic], before) if c.partition in wanted]
        if not (self.drafts.follows(topic) and wanted):
            return await self._valid(topic, found)
        later = await self._past_committed(db, topic, wanted)
        # a window checkpoint counts only where it could start later than the committed drafts' (a commit that
        # stalled): checking one costs a fetch, slow on a long partition of the embedded broker
        starts = await self._valid(topic, [c for c in found if c.end_offset > later.get(c.partition, -1)])
        return {p: max(starts.get(p, -1), later.get(p, -1)) for p in starts.keys() | later.keys()}

    async def _past_committed(self, db: RestoreQueries, topic: str, wanted: set[int]) -> dict[int, int]:
        """The starts the drafts' committed offsets allow (streams.runtime.redelivery); none when they cannot be
        read (the window's starts hold)."""
        try:
            async with asyncio.timeout(COMMITTED_WAIT_S):
                committed = await self.drafts.committed(wanted)
            return await self._valid(topic, await db.checkpoints_covering(topic, committed))
        except Exception as exc:  # the window's starts are never wrong, only longer
            reason = str(exc) or type(exc).__name__
            log.warning("%s: the drafts' committed offsets not read (%s); restoring the window", topic, reason)
            return {}

    async def read_tails(
        self, topic: str, starts: dict[int, int | None], ends_known: tails.EndsKnown | None = None
    ) -> dict[int, list[tails.ChangelogMessage]]:
        """The records of ``topic``'s partitions from each start (None: the beginning) to their end (see
        :mod:`streams.runtime.tails`; ``ends_known`` is told those ends first), within ``READ_ON_S``
        (:mod:`streams.runtime.readahead`: Faust's recovery waits for it). Nothing (Faust's recovery reads them)
        when it takes longer, and for the other tables of the next seconds (a broker that does not answer)."""
        if time.monotonic() < self._read_ahead_off_until:
            return {}
        try:
            async with asyncio.timeout(READ_ON_S):
                return await self._read(topic, starts, ends_known)
        except TimeoutError:
            self._read_ahead_off_until = time.monotonic() + 2 * LOOKUP_WAIT_S
            log.warning("%s: changelog tails not read within %.0f s; Faust's recovery reads them", topic, READ_ON_S)
            return {}

    async def _read(
        self, topic: str, starts: dict[int, int | None], ends_known: tails.EndsKnown | None
    ) -> dict[int, list[tails.ChangelogMessage]]:
        return await tails.read_tails(await self.consumer(topic), topic, starts, ends_known)

    def window_s(self, topic: str) -> float:
        """How much tail a restore of changelog ``topic`` reads: ``DRIFT_RESTORE_WINDOW_S``; pending attempts at
        least their TTL (``DRIFT_PENDING_TTL_S``: only retried drafts write there, so that tail stays small)."""
        window = self.settings.restore_window_s
        return max(window, self.settings.pending_ttl_s) if changelog_table(topic) == PENDING_TABLE else window

    async def _valid(self, topic: str, found: list[Checkpoint]) -> dict[int, int]:
        """The checkpoints of this broker's life: the offset is not past the end and the record just before it
        was written no later than the checkpoint (a record of a later life is younger than every old one)."""
        if not found:
            return {}
        consumer = await self.consumer(topic)
        tps = {c.partition: TopicPartition(c.topic, c.partition) for c in found if c.end_offset > 0}
        ends = await consumer.end_offsets(list(tps.values())) if tps else {}
        candidates = [c for c in found if c.end_offset > 0 and c.end_offset <= ends.get(tps[c.partition], -1)]
        stamps = await tails.timestamps(consumer, {tps[c.partition]: c.end_offset - 1 for c in candidates})
        valid: dict[int, int] = {}
        for c in candidates:
            stamp = stamps.get(tps[c.partition])
            if stamp is not None and stamp <= c.taken_at.timestamp() * 1000:
                valid[c.partition] = c.end_offset
        return valid

    async def record_checkpoints(self, topic: str, partitions: Iterable[int], last: dict[int, int]) -> None:
        """Record the end offsets of ``topic``'s ``partitions`` that moved since ``last`` (updated in place)."""
        db = await self.database(0.0)
        if db is None:
            return
        consumer = await self.consumer(topic)
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        ends = await consumer.end_offsets(tps) if tps else {}
        now = datetime.now(UTC)
        moved = {tp.partition: end for tp, end in ends.items() if last.get(tp.partition) != end}
        sources = await self.drafts.ends(moved) if self.drafts.follows(topic) else {}  # after the changelog's ends
        rows = [Checkpoint(topic, p, end, now, sources.get(p)) for p, end in moved.items()]
        keep_from = now - timedelta(seconds=KEEP_WINDOWS * self.settings.restore_window_s)
        await db.record_checkpoints(rows, keep_from)
        last.update({row.partition: row.end_offset for row in rows})

    async def rebuild(
        self, data: MutableMapping[Any, Any], note: Callable[[str, int], None], partitions: set[int]
    ) -> int:
        """Give every agent of ``partitions`` without an entry its newest committed actions from the record;
        returns how many agents were rebuilt. Agents idle longer than ``DRIFT_AGENT_IDLE_TTL_S`` stay out: idle
        eviction dropped them on purpose."""
        db = await self.database(None)
        if db is None:  # said why; the windows of these partitions start empty
            return 0
        ttl = self.settings.agent_idle_ttl_s
        since = datetime.now(UTC) - timedelta(seconds=ttl) if ttl > 0 else None
        rebuilt = 0
        for agent_id, entries in recent_entries(await db.recent_actions(since, self.kept)).items():
            partition = agent_partition(agent_id, self.partitions)
            if partition in partitions and agent_id not in data:
                data[agent_id] = entries
                note(agent_id, partition)
                rebuilt += 1
        return rebuilt
