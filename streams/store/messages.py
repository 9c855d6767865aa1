"""Committed messages and correction logs (``run_messages``, ``correction_logs``): the sinks' idempotent batch
writes and the reads of a window of messages; queries of :class:`Store`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from engine.errors import ConfigurationError
from engine.models import Event, EventKind
from streams.wire.payloads import CorrectionLog, Message

#: Messages of a window (run, since, until): the agents' own and, with agent ids, those of their channels.
_EVENTS_SQL = """
SELECT * FROM (
    SELECT m.agent_id, m.agent_name, m.text, m.kind, m.channel, m.source, m.ts, m.seq FROM run_messages m
    WHERE ($2::text IS NULL OR m.run_id = $2) AND ($3::timestamptz IS NULL OR m.ts >= $3)
      AND ($4::timestamptz IS NULL OR m.ts <= $4)
      AND ($1::text[] IS NULL OR m.agent_id = ANY($1) OR m.channel IN (
          SELECT o.channel FROM run_messages o
          WHERE o.agent_id = ANY($1) AND o.channel IS NOT NULL AND ($2::text IS NULL OR o.run_id = $2)
            AND ($3::timestamptz IS NULL OR o.ts >= $3) AND ($4::timestamptz IS NULL OR o.ts <= $4)))
    ORDER BY m.ts DESC, m.seq DESC LIMIT $5::bigint
) recent ORDER BY ts, seq"""


#: First attempts recorded in a window (their correction logs), with what the record kept of the draft: the
#: channel, recipient and name of a committed draft come from its message (the draft id is its message id).
_RECORDED_DRAFTS_SQL = """
SELECT c.draft_id, c.agent_id, c.run_id, c.original_text, c.created_at,
       coalesce(m.agent_name, a.name) AS agent_name, m.channel, m.recipient,
       (SELECT count(*) FROM correction_logs r WHERE r.draft_id = c.draft_id AND r.attempt_number > 1) AS retries
FROM correction_logs c
JOIN agents a ON a.id = c.agent_id
LEFT JOIN run_messages m ON m.message_id = c.draft_id
WHERE c.attempt_number = 1 AND c.created_at >= $1 AND ($2::timestamptz IS NULL OR c.created_at < $2)
ORDER BY c.created_at, c.draft_id"""


class MessageQueries:
    """Mixed into :class:`streams.store.Store`: sink writes (idempotent) and message reads."""

    pool: asyncpg.Pool

    async def write_correction_logs(self, logs: Sequence[CorrectionLog]) -> None:
        if not logs:
            return
        async with self.pool.acquire() as conn, conn.transaction():
            await self._ensure_parents(conn, [(c.agent_id, None, c.run_id) for c in logs])
            await conn.executemany(
                "INSERT INTO correction_logs (draft_id, agent_id, run_id, original_text, corrected_text, "
                "dimension_scores, similarity_score, total_score, attempt_number, decision, outcome, "
                "token_usage, latency_ms, created_at) "
                "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14) "
                "ON CONFLICT (draft_id, attempt_number) DO NOTHING",
                [
                    (
                        c.draft_id, c.agent_id, c.run_id, c.original_text, c.corrected_text,
                        c.dimension_scores, c.similarity_score, c.total_score, c.attempt_number,
                        c.decision, c.outcome, c.token_usage.model_dump(), c.latency_ms, c.created_at,
                    )
                    for c in logs
                ],
            )  # fmt: skip

    async def write_messages(self, messages: Sequence[Message]) -> None:
        if not messages:
            return
        async with self.pool.acquire() as conn, conn.transaction():
            await self._ensure_parents(conn, [(m.agent_id, m.agent_name, m.run_id) for m in messages])
            await conn.executemany(
                "INSERT INTO run_messages (message_id, run_id, agent_id, agent_name, channel, recipient, "
                "kind, source, origin, text, ts) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) "
                "ON CONFLICT (message_id) DO NOTHING",
                [
                    (m.message_id, m.run_id, m.agent_id, m.agent_name, m.channel, m.recipient,
                     m.kind, m.source, m.origin, m.text, m.ts)
                    for m in messages
                ],
            )  # fmt: skip

    @staticmethod
    async def _ensure_parents(conn: asyncpg.Connection, refs: Sequence[tuple[str, str | None, str | None]]) -> None:
        agents = sorted({(a, n) for a, n, _ in refs}, key=lambda r: (r[0], r[1] or ""))
        runs = sorted({(r,) for _, _, r in refs if r})
        await conn.executemany("INSERT INTO agents (id, name) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING", agents)
        await conn.executemany(
            "INSERT INTO agent_evaluation_config (agent_id) VALUES ($1) ON CONFLICT (agent_id) DO NOTHING",
            sorted({(a,) for a, _ in agents}),
        )
        if runs:
            await conn.executemany("INSERT INTO runs (id) VALUES ($1) ON CONFLICT (id) DO NOTHING", runs)

    async def recorded_drafts(self, since: datetime, until: datetime | None) -> list[dict[str, Any]]:
        """The first attempts judged in ``[since, until)``, oldest first, as the database recorded them: draft id,
        agent id, run id, text, and (for committed drafts) agent name, channel and recipient; ``retries``: how
        many later attempts of the draft were recorded."""
        return [dict(r) for r in await self.pool.fetch(_RECORDED_DRAFTS_SQL, since, until)]

    async def count(self, table: str) -> int:
        if table not in {"correction_logs", "run_messages", "agents", "evaluation_runs", "evaluation_scores"}:
            raise ConfigurationError(f"unknown table {table!r}")
        return int(await self.pool.fetchval(f"SELECT count(*) FROM {table}"))  # noqa: S608

    async def message_events(
        self,
        agent_ids: Sequence[str] | None,
        run_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int | None = None,
    ) -> list[Event]:
        """Stored messages in ``[since, until]`` (of ``run_id``), oldest first; at most the ``limit`` newest.

        With ``agent_ids`` the result holds their messages and every other message of the channels they
        posted in within the same window; messages without a channel are not shared between agents.
        """
        ids = None if agent_ids is None else list(agent_ids)
        rows = await self.pool.fetch(_EVENTS_SQL, ids, run_id, since, until, limit)
        names = ("agent_id", "text", "channel", "source", "ts")
        return [
            Event(**{n: r[n] for n in names}, agent_name=r["agent_name"] or r["agent_id"], kind=EventKind(r["kind"]))
            for r in rows
        ]
