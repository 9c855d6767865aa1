"""The one persistence module: PostgreSQL through asyncpg. Parameterised SQL only.

Migrations are the plain ``.sql`` files in ``streams/migrations/``, applied in name order and recorded in
``schema_migrations`` (``drift db migrate`` is idempotent). Sink writes are batched and idempotent: a
redelivered record never makes a duplicate row.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from engine.errors import ConfigurationError, ServiceError
from engine.models import AgentConfig
from streams.payloads import CorrectionLog, Message

MIGRATIONS = Path(__file__).parent / "migrations"
CONFIG_FIELDS: tuple[str, ...] = tuple(AgentConfig.model_fields)
_CONFIG_COLUMNS = ", ".join(CONFIG_FIELDS)


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec("jsonb", encoder=_json, decoder=orjson.loads, schema="pg_catalog")


class Store:
    """An asyncpg pool plus every query persona-drift runs."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    @classmethod
    async def connect(cls, url: str, *, min_size: int = 1, max_size: int = 8) -> Store:
        if not url:
            raise ConfigurationError("no database URL: pass --database or set DRIFT_DATABASE_URL")
        try:
            pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, init=_init_connection)
        except (OSError, asyncpg.PostgresError) as exc:
            raise ServiceError(f"cannot connect to the database: {exc}") from None
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
        """Validate ``changes`` against the current configuration and store the result."""
        check_config_keys(changes)
        await self.ensure_agents([(agent_id, None)])
        current = await self.get_config(agent_id) or AgentConfig()
        try:
            new = current.with_changes(changes)
        except ValueError as exc:
            raise ConfigurationError(f"invalid configuration for {agent_id}: {_first_error(exc)}") from None
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


def check_config_keys(changes: dict[str, Any]) -> None:
    """Unknown configuration keys are errors, with a suggestion."""
    for key in changes:
        if key not in CONFIG_FIELDS:
            close = difflib.get_close_matches(key, CONFIG_FIELDS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigurationError(f"unknown configuration key {key!r}{hint}")


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)
