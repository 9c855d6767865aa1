"""Agents and their evaluation configuration (``agents``, ``agent_evaluation_config``): queries of :class:`Store`."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import asyncpg

from engine.config_changes import CONFIG_FIELDS, validated_change
from engine.ids import check_agent_id
from engine.models import AgentConfig

_CONFIG_COLUMNS = ", ".join(CONFIG_FIELDS)


class ConfigurationQueries:
    """Mixed into :class:`streams.store.Store`: which agents exist and how each is configured."""

    pool: asyncpg.Pool

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

    async def configs_of(self, agent_ids: Sequence[str]) -> dict[str, AgentConfig]:
        """The stored configurations of ``agent_ids`` (agents the store does not know are left out)."""
        rows = await self.pool.fetch(
            f"SELECT agent_id, {_CONFIG_COLUMNS} FROM agent_evaluation_config "  # noqa: S608
            "WHERE agent_id = ANY($1::text[])",
            list(agent_ids),
        )
        return {r["agent_id"]: AgentConfig.model_validate({k: r[k] for k in CONFIG_FIELDS}) for r in rows}

    async def configs_newest(self) -> datetime | None:
        """The newest ``updated_at`` of any configuration (where a refresh starts from)."""
        newest: datetime | None = await self.pool.fetchval("SELECT max(updated_at) FROM agent_evaluation_config")
        return newest

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
