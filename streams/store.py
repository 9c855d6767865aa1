"""The one persistence module: PostgreSQL through asyncpg. Parameterised SQL only.

Migrations are the plain ``.sql`` files in ``streams/migrations/``, applied in name order and recorded in
``schema_migrations`` (``drift db migrate`` is idempotent). Sink writes are batched and idempotent: a
redelivered record never makes a duplicate row.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import asyncpg
import orjson

from engine.config_changes import CONFIG_FIELDS, validated_change
from engine.errors import ConfigurationError, ServiceError
from engine.ids import check_agent_id
from engine.models import AgentConfig, Dimension, Event, EventKind
from engine.redaction import ENCODING_HINT, mask_text, mask_url, userinfo_needs_encoding
from streams.payloads import CorrectionLog, Message

if TYPE_CHECKING:
    from engine.evaluation.run import EvaluationRun, ScoreRow

MIGRATIONS = Path(__file__).parent / "migrations"
_CONFIG_COLUMNS = ", ".join(CONFIG_FIELDS)
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


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json, decoder=orjson.loads, schema="pg_catalog")


class Store:
    """An asyncpg pool plus every query persona-drift runs."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def connect(cls, url: str, *, min_size: int = 1, max_size: int = 8, timeout_s: float = 60.0) -> Store:
        if not url:
            raise ConfigurationError("no database URL: pass --database or set DRIFT_DATABASE_URL")
        try:
            pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, init=_init_connection,
                                             timeout=timeout_s)  # fmt: skip
        except (OSError, ValueError, TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            reason = mask_text(str(exc) or type(exc).__name__, [url])  # drivers may echo the DSN or its password
            reason += f"; {ENCODING_HINT}" if userinfo_needs_encoding(url) else ""
            raise ServiceError(f"cannot connect to the database {mask_url(url)}: {reason}") from None
        return cls(pool)

    async def close(self) -> None:
        await self.pool.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- migrations -------------------------------------------------------------------------------

    async def migrate(self) -> list[str]:
        """Apply pending migrations in order; return the names applied now."""
        applied_now: list[str] = []
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(7311001)")
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                "name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            done = {r["name"] for r in await conn.fetch("SELECT name FROM schema_migrations")}
            for path in sorted(MIGRATIONS.glob("*.sql")):
                if path.name in done:
                    continue
                await conn.execute(path.read_text(encoding="utf-8"))
                await conn.execute("INSERT INTO schema_migrations (name) VALUES ($1)", path.name)
                applied_now.append(path.name)
        return applied_now

    # -- agents and configuration -------------------------------------------------------------------

    async def ensure_agents(self, agents: Iterable[tuple[str, str | None]]) -> None:
        """Register agents on first sight, with a default configuration row."""
        rows = list(dict(agents).items())
        if not rows:
            return
        async with self.pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                "INSERT INTO agents (id, name) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE "
                "SET name = COALESCE(agents.name, EXCLUDED.name)",
                rows,
            )
            await conn.executemany(
                "INSERT INTO agent_evaluation_config (agent_id) VALUES ($1) ON CONFLICT (agent_id) DO NOTHING",
                [(agent_id,) for agent_id, _ in rows],
            )

    async def get_config(self, agent_id: str) -> AgentConfig | None:
        row = await self.pool.fetchrow(
            f"SELECT {_CONFIG_COLUMNS} FROM agent_evaluation_config WHERE agent_id = $1",  # noqa: S608
            agent_id,
        )
        return None if row is None else AgentConfig.model_validate(dict(row))

    async def set_config(self, agent_id: str, changes: dict[str, Any]) -> AgentConfig:
        """Validate the agent id and ``changes`` against the current configuration, then store the result.

        Nothing is written (not even the agent) when the id or a value is rejected."""
        check_agent_id(agent_id)
        new = validated_change(agent_id, await self.get_config(agent_id) or AgentConfig(), changes)
        await self.ensure_agents([(agent_id, None)])
        values = new.model_dump()
        assignments = ", ".join(f"{name} = ${i + 2}" for i, name in enumerate(CONFIG_FIELDS))
        await self.pool.execute(
            f"UPDATE agent_evaluation_config SET {assignments}, updated_at = now() WHERE agent_id = $1",  # noqa: S608
            agent_id,
            *(values[name] for name in CONFIG_FIELDS),
        )
        return new

    async def configs_changed_since(
        self, since: datetime | None
    ) -> tuple[list[tuple[str, AgentConfig]], datetime | None]:
        """Configurations updated after ``since`` (all when None) and the newest ``updated_at`` seen."""
        rows = await self.pool.fetch(
            f"SELECT agent_id, updated_at, {_CONFIG_COLUMNS} FROM agent_evaluation_config "  # noqa: S608
            "WHERE $1::timestamptz IS NULL OR updated_at > $1 ORDER BY updated_at",
            since,
        )
        newest = rows[-1]["updated_at"] if rows else since
        configs = [(r["agent_id"], AgentConfig.model_validate({k: r[k] for k in CONFIG_FIELDS})) for r in rows]
        return configs, newest

    # -- sinks ----------------------------------------------------------------------------------------

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
