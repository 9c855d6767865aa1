"""Persistence of evaluation-format runs (``format_runs`` / ``format_results``, migration 007).

:class:`PostgresRunRecorder` is the :class:`engine.formats.results.RunRecorder` of the service: recording a run
upserts its row and every item row in one transaction, so recording the same run again (a resumed or
re-finished run) leaves exactly one row per item.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from engine.formats.results import FormatName, FormatRun
from streams.store import Store

_UPSERT_RUN = """
INSERT INTO format_runs (run_id, format, source, target, judge, status, started_at, finished_at, summary)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb)
ON CONFLICT (run_id) DO UPDATE SET status = EXCLUDED.status, finished_at = EXCLUDED.finished_at,
    summary = EXCLUDED.summary, target = EXCLUDED.target, judge = EXCLUDED.judge"""
_UPSERT_ITEM = """
INSERT INTO format_results (run_id, item_id, score, verdict, error, result) VALUES ($1, $2, $3, $4, $5, $6::jsonb)
ON CONFLICT (run_id, item_id) DO UPDATE SET score = EXCLUDED.score, verdict = EXCLUDED.verdict,
    error = EXCLUDED.error, result = EXCLUDED.result"""


class PostgresRunRecorder:
    def __init__(self, store: Store) -> None:
        self._store = store

    async def record(self, run: FormatRun) -> None:
        run_uuid = uuid.UUID(run.run_id)
        items = [(run_uuid, i.item_id, i.score, i.verdict, i.error, i.model_dump(mode="json")) for i in run.items]
        async with self._store.pool.acquire() as conn, conn.transaction():
            await conn.execute(
                _UPSERT_RUN,
                run_uuid,
                run.format,
                run.source,
                run.target,
                run.judge,
                run.status,
                run.started_at,
                run.finished_at,
                run.model_dump(mode="json")["summary"],
            )
            if items:
                await conn.executemany(_UPSERT_ITEM, items)

    async def runs(self, format_name: FormatName | None = None, limit: int = 50) -> list[dict[str, Any]]:
        rows = await self._store.pool.fetch(
            "SELECT run_id, format, source, target, judge, status, started_at, finished_at, summary FROM format_runs"
            " WHERE ($1::text IS NULL OR format = $1) ORDER BY started_at DESC LIMIT $2",
            format_name,
            limit,
        )
        return [dict(row) for row in rows]

    async def item_count(self, run_id: str) -> int:
        value = await self._store.pool.fetchval(
            "SELECT count(*) FROM format_results WHERE run_id = $1", uuid.UUID(run_id)
        )
        return int(value)


async def record_runs(
    url: str, runs: Sequence[FormatRun], *, migrate: bool = False, max_size: int = 8, timeout_s: float = 5.0
) -> None:
    """Record ``runs`` in the database at ``url`` (one pool for all; ``migrate`` first when asked); an unreachable
    database fails after ``timeout_s`` (the commands pass ``DRIFT_CONNECT_TIMEOUT_S``)."""
    async with await Store.connect(url, max_size=max_size, timeout_s=timeout_s) as store:
        if migrate:
            await store.migrate()
        recorder = PostgresRunRecorder(store)
        for run in runs:
            await recorder.record(run)
