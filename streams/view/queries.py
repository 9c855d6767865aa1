"""The view's read-only queries. Every list is paginated (``limit`` ≤ :data:`MAX_LIMIT`, newest first, with a
``before`` cursor on the creation time) so a table of a million rows costs one index range scan per page."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from streams.store import Store

MAX_LIMIT = 200
DEFAULT_LIMIT = 50

_AGENTS = """
SELECT a.id AS agent_id, a.name,
       count(c.id) AS attempts,
       count(c.id) FILTER (WHERE c.attempt_number = 1) AS drafts,
       count(c.id) FILTER (WHERE c.decision = 'retry') AS retries,
       count(c.id) FILTER (WHERE c.outcome = 'forced_through') AS forced_through,
       count(c.id) FILTER (WHERE c.outcome = 'rejected') AS rejected,
       max(c.created_at) AS last_verdict
FROM agents a LEFT JOIN correction_logs c ON c.agent_id = a.id
GROUP BY a.id, a.name ORDER BY a.id LIMIT $1 OFFSET $2"""
_ATTEMPTS = """
SELECT draft_id, attempt_number, agent_id, run_id, original_text, corrected_text, dimension_scores,
       similarity_score, total_score, decision, outcome, latency_ms, created_at
FROM correction_logs WHERE draft_id = $1 ORDER BY attempt_number LIMIT 100"""
_VERDICTS = """
SELECT draft_id, attempt_number, agent_id, run_id, decision, outcome, total_score, latency_ms, created_at
FROM correction_logs
WHERE ($1::text IS NULL OR agent_id = $1) AND ($2::text IS NULL OR run_id = $2)
  AND ($3::text IS NULL OR outcome = $3) AND ($4::timestamptz IS NULL OR created_at < $4)
ORDER BY created_at DESC LIMIT $5"""
_SCORES = """
SELECT id::text AS run_id, created_at, completed_at, overall_score, dimension_scores, sample_size, is_baseline
FROM evaluation_runs
WHERE agent_id = $1 AND status = 'completed' AND ($2::timestamptz IS NULL OR created_at < $2)
ORDER BY created_at DESC LIMIT $3"""
_EVAL_RUNS = """
SELECT id::text AS run_id, agent_id, status, created_at, completed_at, overall_score, dimension_scores,
       sample_size, is_baseline, error
FROM evaluation_runs WHERE ($1::timestamptz IS NULL OR created_at < $1) ORDER BY created_at DESC LIMIT $2"""
_FORMAT_RUNS = """
SELECT run_id::text AS run_id, format, source, target, judge, status, started_at AS created_at, finished_at, summary
FROM format_runs
WHERE ($1::text IS NULL OR format = $1) AND ($2::timestamptz IS NULL OR started_at < $2)
ORDER BY started_at DESC LIMIT $3"""
_EXPERIMENTS = """
SELECT e.id AS experiment_id, e.scenario, e.status, e.created_at, e.finished_at,
       (SELECT count(*) FROM experiment_sessions s WHERE s.experiment_id = e.id) AS sessions
FROM experiments e WHERE ($1::timestamptz IS NULL OR e.created_at < $1) ORDER BY e.created_at DESC LIMIT $2"""
_FORMAT_ITEMS = """
SELECT item_id, score, verdict, error, result FROM format_results
WHERE run_id = $1 ORDER BY item_id LIMIT $2 OFFSET $3"""


@dataclass(frozen=True, slots=True)
class Page:
    limit: int = DEFAULT_LIMIT
    before: datetime | None = None
    offset: int = 0


def _rows(records: list[Any]) -> list[dict[str, Any]]:
    return [{k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in dict(r).items()} for r in records]


class ViewQueries:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._pool = store.pool

    async def agents(self, page: Page) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_AGENTS, page.limit, page.offset))

    async def draft(self, draft_id: str) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_ATTEMPTS, draft_id))

    async def verdicts(
        self, page: Page, agent: str | None = None, run: str | None = None, outcome: str | None = None
    ) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_VERDICTS, agent, run, outcome, page.before, page.limit))

    async def agent_scores(self, agent: str, page: Page) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_SCORES, agent, page.before, page.limit))

    async def evaluation_runs(self, page: Page) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_EVAL_RUNS, page.before, page.limit))

    async def format_runs(self, page: Page, format_name: str | None = None) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_FORMAT_RUNS, format_name, page.before, page.limit))

    async def experiments(self, page: Page) -> list[dict[str, Any]]:
        return _rows(await self._pool.fetch(_EXPERIMENTS, page.before, page.limit))

    async def format_items(self, run_id: str, page: Page) -> list[dict[str, Any]]:
        try:
            key = uuid.UUID(run_id)
        except ValueError:
            return []
        return _rows(await self._pool.fetch(_FORMAT_ITEMS, key, page.limit, page.offset))
