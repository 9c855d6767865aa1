"""Experiments in PostgreSQL (migration ``008_experiments.sql``): ``experiments``, ``experiment_sessions``,
``experiment_scores``, each score linked to the ``evaluation_runs``/``evaluation_scores`` behind it.

:meth:`ExperimentStore.save_session` writes a finished session whole in one transaction — the session row,
one completed evaluation run per subject (keyed by a request id, so never twice) with its proposition rows,
and the metric values — or, when that session is already stored, nothing at all. A killed run therefore
leaves whole sessions or none; ``--resume`` reads :meth:`finished` and skips them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg

from engine.errors import ConfigurationError
from engine.experiments.data import ArmSample, ExperimentData, MetricData
from engine.experiments.metrics import SessionScores, SubjectEvaluation
from engine.models import TokenUsage
from streams.store import Store


@dataclass(frozen=True, slots=True)
class StoredExperiment:
    id: str
    scenario: str
    paper_key: str | None
    status: str
    settings: dict[str, Any]
    attempts: int


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """What is stored about a finished session beside its scores."""

    arm: str
    key: str
    run_id: str
    group: str
    extracted: int | None
    error: str | None
    llm_calls: int
    usage: TokenUsage
    cost_usd: float | None
    wall_s: float


class ExperimentStore:
    def __init__(self, store: Store) -> None:
        self.store = store

    async def create(self, experiment_id: str, scenario: str, paper_key: str | None, settings: dict[str, Any]) -> None:
        await self.store.pool.execute(
            "INSERT INTO experiments (id, scenario, paper_key, status, settings) VALUES ($1, $2, $3, 'running', $4)",
            experiment_id, scenario, paper_key, settings,
        )  # fmt: skip

    async def resume(self, experiment_id: str) -> StoredExperiment:
        """The stored experiment, marked running again for one more attempt."""
        row = await self.store.pool.fetchrow(
            "UPDATE experiments SET status = 'running', attempts = attempts + 1, finished_at = NULL "
            "WHERE id = $1 RETURNING id, scenario, paper_key, status, settings, attempts",
            experiment_id,
        )
        if row is None:
            raise ConfigurationError(f"no experiment {experiment_id!r} in the database")
        return StoredExperiment(**dict(row))

    async def get(self, experiment_id: str) -> StoredExperiment:
        row = await self.store.pool.fetchrow(
            "SELECT id, scenario, paper_key, status, settings, attempts FROM experiments WHERE id = $1", experiment_id
        )
        if row is None:
            raise ConfigurationError(f"no experiment {experiment_id!r} in the database")
        return StoredExperiment(**dict(row))

    async def finish(self, experiment_id: str, status: str) -> None:
        await self.store.pool.execute(
            "UPDATE experiments SET status = $2, finished_at = now() WHERE id = $1", experiment_id, status
        )

    async def finished(self, experiment_id: str) -> set[tuple[str, str]]:
        rows = await self.store.pool.fetch(
            "SELECT arm, session_key FROM experiment_sessions WHERE experiment_id = $1", experiment_id
        )
        return {(r["arm"], r["session_key"]) for r in rows}

    async def save_session(self, experiment_id: str, record: SessionRecord, scores: SessionScores | None) -> bool:
        """Store the session whole; False (and nothing written) when it was already stored."""
        async with self.store.pool.acquire() as conn, conn.transaction():
            inserted = await conn.fetchval(
                "INSERT INTO experiment_sessions (experiment_id, arm, session_key, run_id, grp, extracted, error, "
                "llm_calls, token_usage, cost_usd, wall_s) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11) "
                "ON CONFLICT DO NOTHING RETURNING 1",
                experiment_id, record.arm, record.key, record.run_id, record.group, record.extracted, record.error,
                record.llm_calls, record.usage.as_dict(), record.cost_usd, record.wall_s,
            )  # fmt: skip
            if inserted is None:
                return False
            if scores is not None:
                await self._write_scores(conn, experiment_id, record, scores)
        return True

    async def _write_scores(
        self, conn: asyncpg.Connection, experiment_id: str, record: SessionRecord, scores: SessionScores
    ) -> None:
        await Store._ensure_parents(conn, [(e.subject, e.name, None) for e in scores.evaluations])
        run_ids = {e.subject: await _evaluation_run(conn, experiment_id, record, e) for e in scores.evaluations}
        await conn.executemany(
            "INSERT INTO experiment_scores (experiment_id, arm, session_key, metric, subject, cluster, value, "
            "evaluation_run_id) VALUES ($1,$2,$3,$4,$5,$6,$7,$8)",
            [(experiment_id, record.arm, record.key, v.metric, v.subject, v.cluster, v.value, run_ids.get(v.subject))
             for v in scores.values],
        )  # fmt: skip

    async def samples(self, experiment_id: str) -> list[asyncpg.Record]:
        rows: list[asyncpg.Record] = await self.store.pool.fetch(
            "SELECT arm, session_key, metric, subject, cluster, value FROM experiment_scores WHERE experiment_id = $1 "
            "ORDER BY metric, arm, session_key, subject",
            experiment_id,
        )
        return rows

    async def totals(self, experiment_id: str) -> dict[str, Any]:
        row = await self.store.pool.fetchrow(
            "SELECT count(*) AS sessions, count(error) AS failed, coalesce(sum(llm_calls), 0) AS llm_calls, "
            "sum(cost_usd) AS cost_usd FROM experiment_sessions WHERE experiment_id = $1",
            experiment_id,
        )
        return dict(row) if row is not None else {}


async def _evaluation_run(
    conn: asyncpg.Connection, experiment_id: str, record: SessionRecord, evaluation: SubjectEvaluation
) -> Any:
    run = evaluation.run
    request_id = f"experiment:{experiment_id}:{record.arm}:{record.key}:{evaluation.subject}"
    dims = {d.dimension.value: d.score for d in run.dimension_scores}
    run_id = await conn.fetchval(
        "INSERT INTO evaluation_runs (agent_id, status, dimensions, window_start, window_end, sample_size, "
        "overall_score, token_usage, dimension_scores, request_id, completed_at) "
        "VALUES ($1, 'completed', $2, $3, $4, $5, $6, $7, $8, $9, now()) RETURNING id",
        evaluation.subject, [d.value for d in run.dimensions], run.window_start, run.window_end, run.sample_size,
        run.overall_score, run.token_usage.as_dict(), dims, request_id,
    )  # fmt: skip
    await conn.executemany(
        "INSERT INTO evaluation_scores (evaluation_run_id, dimension, proposition_id, score, reasoning, "
        "context_snippet) VALUES ($1, $2, $3, $4, $5, $6)",
        [(run_id, *row) for row in evaluation.rows],
    )
    return run_id


def experiment_data(stored: StoredExperiment, rows: Sequence[Any], metric_order: Sequence[str] = ()) -> ExperimentData:
    """The stored scores as report input: one sample per metric and arm, clustered by persona (or group)."""
    by: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for row in rows:
        by.setdefault((row["metric"], row["arm"]), []).append((float(row["value"]), str(row["cluster"])))
    seen = dict.fromkeys([*(m for m in metric_order if any(k[0] == m for k in by)), *(k[0] for k in by)])

    def sample(metric: str, arm: str) -> ArmSample:
        pairs = by.get((metric, arm), [])
        return ArmSample(tuple(v for v, _ in pairs), tuple(c for _, c in pairs))

    metrics = tuple(
        MetricData(m, sample(m, "control"), sample(m, "treatment"), kind="count" if "_qty" in m else "score")
        for m in seen
    )
    run = stored.settings
    source = (f"experiment {stored.id} ({stored.status}) · actor {run.get('actor', '?')} · judge "
              f"{run.get('judge', '?')} · scale {run.get('scale', '?')}")  # fmt: skip
    return ExperimentData(stored.scenario, metrics, source=source, paper_key=stored.paper_key)
