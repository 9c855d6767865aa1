"""The drift monitor's tables (``monitor_streams``, ``monitor_offsets``, ``alerts``, ``monitor_anchors``): queries
of :class:`Store`.

A batch of observations is applied in **one transaction**: the stream states it changed, the offsets it
consumed up to and the alerts it raised are written together, under row locks, so a worker that dies at any
point resumes exactly where the stored state stands (no observation counted twice or lost) and two workers
that briefly both own a partition during a rebalance cannot both apply the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import asyncpg

from engine.ids import check_agent_id

StreamKey = tuple[str, str, str]  # (agent_id, dimension, source)

_ALERT_COLUMNS = (
    "id, agent_id, dimension, source, cause, direction, reference, recent_mean, evidence, alpha, min_shift, "
    "observation, created_at, acknowledged_at"
)


@dataclass(frozen=True, slots=True)
class StoredStream:
    """A stream's stored state, and whether its open alert has been acknowledged since."""

    state: dict[str, Any]
    acknowledged: bool


class MonitorBatch:
    """One transaction of the monitor: lock, read, then write states, offsets and alerts."""

    def __init__(self, conn: asyncpg.Connection, group: str) -> None:
        self.conn, self.group = conn, group

    async def offsets(self, topic: str, partitions: Iterable[int]) -> dict[int, int]:
        """The next offset to apply per partition (locked until the transaction ends)."""
        rows = await self.conn.fetch(
            "SELECT partition, next_offset FROM monitor_offsets WHERE consumer_group = $1 AND topic = $2 "
            "AND partition = ANY($3::int[]) ORDER BY partition FOR UPDATE",
            self.group,
            topic,
            sorted(set(partitions)),
        )
        return {row["partition"]: row["next_offset"] for row in rows}

    async def first_sight(self, record_keys: Sequence[str]) -> set[str]:
        """The keys among ``record_keys`` never applied before (now recorded as applied)."""
        rows = await self.conn.fetch(
            "INSERT INTO monitor_seen (record_key) SELECT DISTINCT unnest($1::text[]) ON CONFLICT DO NOTHING "
            "RETURNING record_key",
            list(record_keys),
        )
        return {r["record_key"] for r in rows}

    async def streams(self, keys: Sequence[StreamKey]) -> dict[StreamKey, StoredStream]:
        """The stored streams of ``keys`` (locked), each with its open alert's acknowledgement."""
        rows = await self.conn.fetch(
            "SELECT s.agent_id, s.dimension, s.source, s.state, a.acknowledged_at IS NOT NULL AS acknowledged "
            "FROM monitor_streams s LEFT JOIN alerts a ON a.id = s.state->>'open_alert' WHERE s.scope = $4 "
            "AND (s.agent_id, s.dimension, s.source) IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])) "
            "ORDER BY s.agent_id, s.dimension, s.source FOR UPDATE OF s",
            [k[0] for k in keys],
            [k[1] for k in keys],
            [k[2] for k in keys],
            self.group,
        )
        return {(r["agent_id"], r["dimension"], r["source"]): StoredStream(r["state"], r["acknowledged"]) for r in rows}

    async def attribution_inputs(
        self, dimension: str, since: datetime, agent_id: str
    ) -> tuple[datetime | None, int, int, bool]:
        """The anchor detector's last alarm on ``dimension``, the agents alerting on it since ``since`` with
        ``agent_id`` counted in, the monitored cast of the dimension, and whether any anchor is configured."""
        row = await self.conn.fetchrow(
            "SELECT (SELECT max(created_at) FROM alerts WHERE scope = $4 AND dimension = $1 AND source = 'anchor') "
            " AS anchor_at, (SELECT count(DISTINCT agent_id) + 1 FROM alerts WHERE scope = $4 AND dimension = $1 "
            " AND source <> 'anchor' AND created_at >= $2 AND agent_id <> $3) AS window_agents, "
            "(SELECT count(DISTINCT agent_id) FROM monitor_streams WHERE scope = $4 AND dimension = $1 "
            " AND source <> 'anchor') AS cast_size, EXISTS (SELECT 1 FROM monitor_anchors) AS anchors",
            dimension,
            since,
            agent_id,
            self.group,
        )
        assert row is not None
        return row["anchor_at"], row["window_agents"], row["cast_size"], row["anchors"]

    async def revise(self, dimension: str, since: datetime) -> list[dict[str, Any]]:
        """Every agent alert on ``dimension`` since ``since`` not yet the judge's becomes the judge's."""
        rows = await self.conn.fetch(
            f"UPDATE alerts SET cause = 'judge' WHERE scope = $3 AND dimension = $1 AND source <> 'anchor' "  # noqa: S608
            f"AND cause <> 'judge' AND created_at >= $2 RETURNING {_ALERT_COLUMNS}",
            dimension,
            since,
            self.group,
        )
        return [dict(r) for r in rows]

    async def write(
        self, states: dict[StreamKey, dict[str, Any]], offsets: dict[tuple[str, int], int], alerts: list[dict[str, Any]]
    ) -> None:
        """Store the changed states, the consumed offsets and the new alerts (a known alert id is kept)."""
        if states:
            await self.conn.executemany(
                "INSERT INTO monitor_streams (scope, agent_id, dimension, source, state) VALUES ($5, $1, $2, $3, $4) "
                "ON CONFLICT (scope, agent_id, dimension, source) DO UPDATE SET state = EXCLUDED.state, "
                "updated_at = now()",
                [(*key, state, self.group) for key, state in states.items()],
            )
        if offsets:
            await self.conn.executemany(
                "INSERT INTO monitor_offsets (consumer_group, topic, partition, next_offset) VALUES ($1, $2, $3, $4) "
                "ON CONFLICT (consumer_group, topic, partition) DO UPDATE SET next_offset = EXCLUDED.next_offset",
                [(self.group, topic, partition, offset) for (topic, partition), offset in offsets.items()],
            )
        if alerts:
            await self.conn.executemany(
                f"INSERT INTO alerts (scope, {_ALERT_COLUMNS}) VALUES "  # noqa: S608
                "($14, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, NULL) ON CONFLICT (id) DO NOTHING",
                [(*(a[c] for c in _ALERT_COLUMNS.split(", ")[:13]), self.group) for a in alerts],
            )


class MonitorQueries:
    """Mixed into :class:`streams.store.Store`: the monitor's batches, alerts and anchors."""

    pool: asyncpg.Pool

    async def stored_offsets(self, group: str, topic: str) -> dict[int, int]:
        rows = await self.pool.fetch(
            "SELECT partition, next_offset FROM monitor_offsets WHERE consumer_group = $1 AND topic = $2", group, topic
        )
        return {row["partition"]: row["next_offset"] for row in rows}

    async def alerts(
        self, *, agent_id: str | None = None, since: datetime | None = None, open_only: bool = False, limit: int = 200
    ) -> list[dict[str, Any]]:
        """Alerts, newest first."""
        if agent_id is not None:
            check_agent_id(agent_id)
        rows = await self.pool.fetch(
            f"SELECT {_ALERT_COLUMNS} FROM alerts WHERE ($1::text IS NULL OR agent_id = $1) "  # noqa: S608
            "AND ($2::timestamptz IS NULL OR created_at >= $2) AND (NOT $3 OR acknowledged_at IS NULL) "
            "ORDER BY created_at DESC, id LIMIT $4",
            agent_id,
            since,
            open_only,
            limit,
        )
        return [dict(r) for r in rows]

    async def acknowledge_alert(self, alert_id: str) -> dict[str, Any] | None:
        """Mark an alert acknowledged (its stream re-references at its next observation); None when unknown.
        Acknowledging twice keeps the first time."""
        row = await self.pool.fetchrow(
            f"UPDATE alerts SET acknowledged_at = coalesce(acknowledged_at, now()) WHERE id = $1 "  # noqa: S608
            f"RETURNING {_ALERT_COLUMNS}",
            alert_id,
        )
        return None if row is None else dict(row)

    async def prune_monitor_seen(self, older_than_s: float = 86_400.0) -> None:
        await self.pool.execute(
            "DELETE FROM monitor_seen WHERE seen_at < now() - make_interval(secs => $1)", older_than_s
        )

    async def open_alerts(self) -> int:
        return int(await self.pool.fetchval("SELECT count(*) FROM alerts WHERE acknowledged_at IS NULL") or 0)
