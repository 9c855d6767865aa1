"""The anchor set the live judge re-scores (``monitor_anchors``): queries of :class:`Store`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import asyncpg

#: How many committed messages per dimension make an anchor set when no label file is configured.
SAMPLED_PER_DIMENSION = 20

_SAMPLE_SQL = """
INSERT INTO monitor_anchors (id, dimension, agent_id, events, reference, origin)
SELECT 'committed:' || $1 || ':' || m.message_id, $1, m.agent_id,
       jsonb_build_array(jsonb_build_object('agent_id', m.agent_id, 'agent_name', coalesce(m.agent_name, m.agent_id),
                                            'text', m.text, 'channel', m.channel)),
       NULL, 'committed'
FROM (SELECT * FROM run_messages WHERE kind = 'action' AND origin = 'gate' ORDER BY md5(message_id) LIMIT $2) m
ON CONFLICT (id) DO NOTHING"""


class AnchorQueries:
    """Mixed into :class:`streams.store.Store`: the anchor set and its round-robin re-scoring."""

    pool: asyncpg.Pool

    async def add_anchors(self, items: Sequence[tuple[str, str, str, list[dict[str, Any]], float | None, str]]) -> None:
        """(id, dimension, agent_id, events, reference, origin) rows; a known id is kept as it is."""
        await self.pool.executemany(
            "INSERT INTO monitor_anchors (id, dimension, agent_id, events, reference, origin) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
            items,
        )

    async def sample_anchors(self, dimensions: Sequence[str]) -> int:
        """A fixed sample of committed gate messages per dimension (the same ones on every call: ordered by a
        hash of their ids); their first judge scores become their references. Returns the anchors held."""
        for dimension in dimensions:
            await self.pool.execute(_SAMPLE_SQL, dimension, SAMPLED_PER_DIMENSION)
        return int(await self.pool.fetchval("SELECT count(*) FROM monitor_anchors") or 0)

    async def gated_dimensions(self) -> list[str]:
        """The dimensions the gate has scored (from recent first-attempt correction logs)."""
        rows = await self.pool.fetch(
            "SELECT DISTINCT jsonb_object_keys(dimension_scores) AS d FROM (SELECT dimension_scores FROM "
            "correction_logs WHERE attempt_number = 1 AND dimension_scores IS NOT NULL "
            "ORDER BY created_at DESC LIMIT 1000) recent ORDER BY d"
        )
        return [r["d"] for r in rows]

    async def next_anchor(self) -> dict[str, Any] | None:
        """The least recently scored anchor, claimed (two workers never score the same one at once)."""
        row = await self.pool.fetchrow(
            "UPDATE monitor_anchors SET scored = scored + 1, last_scored_at = now() WHERE id = ("
            "SELECT id FROM monitor_anchors ORDER BY last_scored_at NULLS FIRST, id LIMIT 1 FOR UPDATE SKIP LOCKED) "
            "RETURNING id, dimension, agent_id, events, reference"
        )
        return None if row is None else dict(row)

    async def set_anchor_reference(self, anchor_id: str, score: float) -> None:
        await self.pool.execute(
            "UPDATE monitor_anchors SET reference = $2 WHERE id = $1 AND reference IS NULL", anchor_id, score
        )
