"""The record a bounded table restore starts from (``changelog_checkpoints``, migration 010) and the agents'
recent actions it rebuilds their windows from; queries of :class:`streams.store.Store`. See
:mod:`streams.runtime.restore` for the mechanism."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NamedTuple

import asyncpg

#: An agent's action count is read up to this many (``minimum_required_qty_of_actions`` compares small numbers).
COUNT_CAP = 1000

_RECENT_ACTIONS_SQL = """
SELECT a.id AS agent_id, r.message_id, r.text, r.channel, c.total FROM agents a
CROSS JOIN LATERAL (
    SELECT m.message_id, m.text, m.channel, m.ts, m.seq FROM run_messages m
    WHERE m.agent_id = a.id AND m.kind = 'action' ORDER BY m.ts DESC, m.seq DESC LIMIT $2) r
CROSS JOIN LATERAL (
    SELECT count(*) AS total FROM (
        SELECT 1 FROM run_messages m WHERE m.agent_id = a.id AND m.kind = 'action' LIMIT $3) capped) c
WHERE $1::timestamptz IS NULL OR EXISTS (
    SELECT 1 FROM run_messages m WHERE m.agent_id = a.id AND m.kind = 'action' AND m.ts >= $1)
ORDER BY a.id, r.ts, r.seq"""

_CHECKPOINTS_SQL = """
SELECT DISTINCT ON (topic, partition) topic, partition, end_offset, taken_at, source_end FROM changelog_checkpoints
WHERE topic = ANY($1::text[]) AND taken_at <= $2 ORDER BY topic, partition, taken_at DESC"""

#: Per partition, the newest checkpoint whose source end is at most the given offset (the group's committed one).
_COVERING_SQL = """
SELECT DISTINCT ON (c.partition) c.topic, c.partition, c.end_offset, c.taken_at, c.source_end
FROM changelog_checkpoints c JOIN unnest($2::int[], $3::bigint[]) AS w(partition, committed) USING (partition)
WHERE c.topic = $1 AND c.source_end IS NOT NULL AND c.source_end <= w.committed
ORDER BY c.partition, c.taken_at DESC"""

#: Rows older than the cutoff go, except the newest of them per partition (a restore may still start there).
_PRUNE_SQL = """
DELETE FROM changelog_checkpoints c WHERE c.topic = ANY($1::text[]) AND c.taken_at < (
    SELECT max(d.taken_at) FROM changelog_checkpoints d
    WHERE d.topic = c.topic AND d.partition = c.partition AND d.taken_at < $2)"""


class Checkpoint(NamedTuple):
    """A changelog partition's end offset at ``taken_at``: every record before it was written by then.
    ``source_end``: the end of the source partition the table's records come from, taken just after (only for
    verdict records: :mod:`streams.runtime.redelivery`)."""

    topic: str
    partition: int
    end_offset: int
    taken_at: datetime
    source_end: int | None = None


def _checkpoint(row: asyncpg.Record) -> Checkpoint:
    return Checkpoint(row["topic"], row["partition"], row["end_offset"], row["taken_at"], row["source_end"])


class RecentAction(NamedTuple):
    """One of an agent's newest committed actions; ``total``: the agent's actions (read up to COUNT_CAP)."""

    agent_id: str
    message_id: str
    text: str
    channel: str | None
    total: int


class RestoreQueries:
    """Mixed into :class:`streams.store.Store`: the checkpoint index and the recent actions of the record."""

    pool: asyncpg.Pool

    async def record_checkpoints(self, rows: Sequence[Checkpoint], prune_before: datetime) -> None:
        """Insert ``rows`` (idempotent) and drop the rows of their topics older than ``prune_before``, keeping the
        newest of those per partition."""
        if not rows:
            return
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO changelog_checkpoints (topic, partition, end_offset, taken_at, source_end) "
                "VALUES ($1,$2,$3,$4,$5) "
                "ON CONFLICT DO NOTHING",
                [tuple(r) for r in rows],
            )
            await conn.execute(_PRUNE_SQL, sorted({r.topic for r in rows}), prune_before)

    async def checkpoints_before(self, topics: Sequence[str], before: datetime) -> list[Checkpoint]:
        """Per partition of ``topics``, the newest checkpoint taken at or before ``before``."""
        try:
            rows = await self.pool.fetch(_CHECKPOINTS_SQL, list(topics), before)
        except (asyncpg.UndefinedTableError, asyncpg.UndefinedColumnError):  # a database not migrated yet (the
            return []  # worker migrates after the restore)
        return [_checkpoint(r) for r in rows]

    async def checkpoints_covering(self, topic: str, committed: Mapping[int, int]) -> list[Checkpoint]:
        """Per partition of ``committed``, the newest checkpoint of ``topic`` whose source end is at most the
        partition's committed offset."""
        if not committed:
            return []
        partitions = sorted(committed)
        try:
            rows = await self.pool.fetch(_COVERING_SQL, topic, partitions, [committed[p] for p in partitions])
        except (asyncpg.UndefinedTableError, asyncpg.UndefinedColumnError):  # not migrated yet
            return []
        return [_checkpoint(r) for r in rows]

    async def recent_actions(self, active_since: datetime | None, kept: int) -> list[RecentAction]:
        """Each agent's ``kept`` newest actions (gate commits and external ones), oldest first; only agents that
        acted at or after ``active_since`` (all agents when None)."""
        try:
            rows = await self.pool.fetch(_RECENT_ACTIONS_SQL, active_since, kept, COUNT_CAP)
        except asyncpg.UndefinedTableError:  # a fresh database: nothing recorded yet
            return []
        return [RecentAction(r["agent_id"], r["message_id"], r["text"], r["channel"], r["total"]) for r in rows]
