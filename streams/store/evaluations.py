"""Offline evaluation runs and their scores (``evaluation_runs``, ``evaluation_scores``), and the stored
messages as the evaluation harness's message source."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg

from engine.errors import ConfigurationError, ServiceError
from engine.models import Dimension, Event
from streams.store.postgres import Store

if TYPE_CHECKING:
    from engine.evaluation.run import EvaluationRun, ScoreRow


class DuplicateRequest(ServiceError):
    """An evaluation request whose run has already finished was started again."""


@dataclass(frozen=True, slots=True)
class StoredRun:
    """An ``evaluation_runs`` row, as far as the service needs it (summaries, idempotency)."""

    id: str
    agent_id: str
    status: str
    request_id: str | None
    dimension_scores: dict[str, float]
    overall_score: float | None
    sample_size: int
    error: str | None


_RUN_COLUMNS = "id::text, agent_id, status, request_id, dimension_scores, overall_score, sample_size, error"


def _run_uuid(run_id: str) -> uuid.UUID:
    try:
        return uuid.UUID(run_id)
    except ValueError:
        raise ConfigurationError(f"{run_id!r} is not an evaluation run id") from None


class PostgresEvaluationStore:
    """:class:`engine.evaluation.run.EvaluationStore` over ``evaluation_runs`` / ``evaluation_scores``.

    With a ``request_id`` the run is keyed by it: a redelivered request restarts its unfinished run (same
    id) instead of creating a second one, and raises :class:`DuplicateRequest` when that run has finished.
    Every transition checks the current status: pending → running → completed | failed.
    """

    def __init__(self, store: Store, *, request_id: str | None = None) -> None:
        self.store = store
        self.request_id = request_id
        self.run_id: str | None = None

    async def create_run(self, agent_id: str, dimensions: Sequence[Dimension], is_baseline: bool) -> str:
        async with self.store.pool.acquire() as conn, conn.transaction():
            await Store._ensure_parents(conn, [(agent_id, None, None)])
            run_id = await conn.fetchval(
                "INSERT INTO evaluation_runs (agent_id, status, dimensions, sample_size, is_baseline, request_id) "
                "VALUES ($1, 'pending', $2, 0, $3, $4) ON CONFLICT (request_id) DO UPDATE SET status = 'pending', "
                "dimensions = EXCLUDED.dimensions, is_baseline = EXCLUDED.is_baseline, error = NULL, "
                "completed_at = NULL, created_at = now() WHERE evaluation_runs.status IN ('pending', 'running') "
                "RETURNING id::text",
                agent_id, [Dimension(d).value for d in dimensions], is_baseline, self.request_id,
            )  # fmt: skip
        if run_id is None:
            raise DuplicateRequest(f"evaluation request {self.request_id!r} already has a finished run")
        self.run_id = str(run_id)
        return self.run_id

    async def mark_running(self, run_id: str) -> None:
        sql = "UPDATE evaluation_runs SET status = 'running' WHERE id = $1 AND status = 'pending'"
        await _transition(self.store.pool, run_id, "start", sql)

    async def complete_run(self, run_id: str, run: EvaluationRun, rows: list[ScoreRow]) -> None:
        dims = {d.dimension.value: d.score for d in run.dimension_scores}
        async with self.store.pool.acquire() as conn, conn.transaction():
            await _transition(
                conn, run_id, "complete",
                "UPDATE evaluation_runs SET status = 'completed', overall_score = $2, sample_size = $3, "
                "window_start = $4, window_end = $5, token_usage = $6, dimension_scores = $7, completed_at = now() "
                "WHERE id = $1 AND status = 'running'",
                run.overall_score, run.sample_size, run.window_start, run.window_end, run.token_usage.as_dict(), dims,
            )  # fmt: skip
            await conn.execute("DELETE FROM evaluation_scores WHERE evaluation_run_id = $1", _run_uuid(run_id))
            await conn.executemany(
                "INSERT INTO evaluation_scores (evaluation_run_id, dimension, proposition_id, score, reasoning, "
                "context_snippet) VALUES ($1, $2, $3, $4, $5, $6)",
                [(_run_uuid(run_id), *row) for row in rows],
            )

    async def fail_run(self, run_id: str, reason: str) -> None:
        sql = (
            "UPDATE evaluation_runs SET status = 'failed', error = $2, completed_at = now() "
            "WHERE id = $1 AND status IN ('pending', 'running')"
        )
        await _transition(self.store.pool, run_id, "fail", sql, reason)

    async def find_run(self, *, run_id: str | None = None, request_id: str | None = None) -> StoredRun | None:
        """The run with this id, or the run of this request id."""
        key, value = ("id", _run_uuid(run_id)) if run_id is not None else ("request_id", request_id)
        row = await self.store.pool.fetchrow(f"SELECT {_RUN_COLUMNS} FROM evaluation_runs WHERE {key} = $1", value)  # noqa: S608
        return None if row is None else StoredRun(**{**dict(row), "dimension_scores": row["dimension_scores"] or {}})

    async def last_evaluated(self, agent_id: str) -> datetime | None:
        """The newest message time covered by the agent's last completed run (None: never evaluated)."""
        value: datetime | None = await self.store.pool.fetchval(
            "SELECT COALESCE(window_end, created_at) FROM evaluation_runs WHERE agent_id = $1 "
            "AND status = 'completed' ORDER BY created_at DESC LIMIT 1",
            agent_id,
        )
        return value

    async def count_actions(self, agent_id: str, since: datetime | None, until: datetime | None) -> int:
        sql = (
            "SELECT count(*) FROM run_messages WHERE agent_id = $1 AND kind = 'action' "
            "AND ($2::timestamptz IS NULL OR ts >= $2) AND ($3::timestamptz IS NULL OR ts <= $3)"
        )
        return int(await self.store.pool.fetchval(sql, agent_id, since, until))

    async def due_agents(self) -> list[tuple[str, int]]:
        """Agents with actions newer than their last run that did not fail, with the number of those actions."""
        rows = await self.store.pool.fetch(
            "WITH marks AS (SELECT DISTINCT ON (agent_id) agent_id, COALESCE(window_end, created_at) AS mark "
            "FROM evaluation_runs WHERE status <> 'failed' ORDER BY agent_id, created_at DESC) "
            "SELECT m.agent_id, count(*)::int AS fresh FROM run_messages m LEFT JOIN marks k USING (agent_id) "
            "WHERE m.kind = 'action' AND (k.mark IS NULL OR m.ts > k.mark) GROUP BY m.agent_id ORDER BY m.agent_id"
        )
        return [(r["agent_id"], r["fresh"]) for r in rows]


async def _transition(conn: asyncpg.Pool | asyncpg.Connection, run_id: str, verb: str, sql: str, *args: Any) -> None:
    result = await conn.execute(sql, _run_uuid(run_id), *args)
    if result.endswith(" 1"):
        return
    status = await conn.fetchval("SELECT status FROM evaluation_runs WHERE id = $1", _run_uuid(run_id))
    raise ServiceError(f"cannot {verb} evaluation run {run_id}: it {'is ' + status if status else 'does not exist'}")


class PostgresMessageSource:
    """:class:`engine.evaluation.messages.MessageSource` over the stored messages (``run_messages``).

    Use it as an async context manager to keep one connection pool; otherwise every call connects.
    """

    def __init__(self, database_url: str, *, limit: int | None = None) -> None:
        self.database_url = database_url
        self.limit = limit
        self._store: Store | None = None

    async def __aenter__(self) -> PostgresMessageSource:
        self._store = await Store.connect(self.database_url, max_size=2)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._store is not None:
            await self._store.close()
            self._store = None

    async def events(self, agent_ids: Sequence[str] | None, run_id: str | None, since: datetime | None) -> list[Event]:
        if self._store is not None:
            return await self._store.message_events(agent_ids, run_id, since, limit=self.limit)
        async with await Store.connect(self.database_url, max_size=2) as store:
            return await store.message_events(agent_ids, run_id, since, limit=self.limit)
