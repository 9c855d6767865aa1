"""Shadow gating's tables (``shadows``, ``shadow_verdicts``, migration 012): queries of :class:`Store`.

The shadow lane applies a batch in **one transaction** (:class:`ShadowBatch`): it locks the offsets its consumer
group stored (in ``monitor_offsets``, under the group ``<app id>-shadow``), keeps only the records at or after
them, inserts the candidate verdicts (``ON CONFLICT DO NOTHING`` on the primary key), adds what the inserted
rows cost to their shadows and stores the offsets after the batch. A worker killed at any point leaves either
the whole batch or none of it, and the next owner of the partitions resumes at the stored offsets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import asyncpg

from engine.errors import ConfigurationError
from engine.shadow import Shadow, ShadowStatus

SHADOW_COLUMNS = (
    "name, agents, propositions, judge, settings, sample, budget_usd, max_tokens, status, spent_tokens, spent_usd, "
    "skipped, created_at, created_by, stopped_at, promoted_at, promoted_by"
)
VERDICT_COLUMNS = (
    "shadow", "draft_id", "attempt_number", "agent_id", "run_id", "original_text", "dimension_scores",
    "similarity_score", "total_score", "decision", "live_decision", "live_dimension_scores", "live_total_score",
    "live_token_usage", "token_usage", "latency_ms",
)  # fmt: skip
LIVE_COLUMNS = "draft_id, attempt_number, dimension_scores, total_score, decision, token_usage, latency_ms, created_at"


def shadow_of(row: Mapping[str, Any]) -> Shadow:
    return Shadow(
        name=row["name"], agents=row["agents"], propositions=row["propositions"], judge=row["judge"],
        settings=dict(row["settings"] or {}),
        sample=row["sample"], budget_usd=row["budget_usd"], max_tokens=row["max_tokens"],
        status=ShadowStatus(row["status"]), created_at=row["created_at"],
    )  # fmt: skip


class ShadowBatch:
    """One transaction of the shadow lane: lock the offsets and shadows, then write verdicts, spends, offsets."""

    def __init__(self, conn: asyncpg.Connection, group: str) -> None:
        self.conn, self.group = conn, group

    async def spends(self, names: Sequence[str]) -> dict[str, asyncpg.Record]:
        """The shadows ``names`` (locked until the transaction ends)."""
        rows = await self.conn.fetch(
            f"SELECT {SHADOW_COLUMNS} FROM shadows WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE",  # noqa: S608
            sorted(set(names)),
        )
        return {r["name"]: r for r in rows}

    async def insert(self, rows: Sequence[Mapping[str, Any]]) -> set[tuple[str, str, int]]:
        """Insert verdict rows; the (shadow, draft, attempt) keys actually inserted (a known key is kept)."""
        inserted: set[tuple[str, str, int]] = set()
        placeholders = ", ".join(f"${i + 1}" for i in range(len(VERDICT_COLUMNS)))
        query = (
            f"INSERT INTO shadow_verdicts ({', '.join(VERDICT_COLUMNS)}) VALUES ({placeholders}) "  # noqa: S608
            "ON CONFLICT (shadow, draft_id, attempt_number) DO NOTHING RETURNING shadow, draft_id, attempt_number"
        )
        for row in rows:
            values = [row[c] for c in VERDICT_COLUMNS]  # jsonb: the pool's codec encodes
            done = await self.conn.fetchrow(query, *values)
            if done is not None:
                inserted.add((done["shadow"], done["draft_id"], done["attempt_number"]))
        return inserted

    async def charge(self, name: str, tokens: int, usd: float, skipped: int, spent: bool) -> None:
        """Add a batch's cost and skips to ``name``; ``spent``: its budget is now spent (a running shadow only)."""
        await self.conn.execute(
            "UPDATE shadows SET spent_tokens = spent_tokens + $2, spent_usd = spent_usd + $3, skipped = skipped + $4, "
            "status = CASE WHEN $5 AND status = 'running' THEN 'budget_spent' ELSE status END WHERE name = $1",
            name,
            tokens,
            usd,
            skipped,
            spent,
        )


class ShadowQueries:
    """Mixed into :class:`streams.store.Store`: shadows as the CLI and the workers read and change them."""

    pool: asyncpg.Pool

    async def create_shadow(self, shadow: Shadow, created_by: str | None) -> Shadow:
        """Store a new running shadow; a name already used is an error (nothing written)."""
        row = await self.pool.fetchrow(
            "INSERT INTO shadows (name, agents, propositions, judge, settings, sample, budget_usd, max_tokens, "  # noqa: S608
            "created_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (name) DO NOTHING "
            f"RETURNING {SHADOW_COLUMNS}",
            shadow.name, shadow.agents, shadow.propositions, shadow.judge, dict(shadow.settings),
            shadow.sample, shadow.budget_usd, shadow.max_tokens, created_by,
        )  # fmt: skip
        if row is None:
            raise ConfigurationError(f"shadow {shadow.name} already exists (choose another name)")
        return shadow_of(row)

    async def shadows(self, *, running_only: bool = False) -> list[dict[str, Any]]:
        """Every shadow (or the running ones) with its compared-attempt count, newest first."""
        rows = await self.pool.fetch(
            f"SELECT {SHADOW_COLUMNS}, (SELECT count(*) FROM shadow_verdicts v WHERE v.shadow = s.name) AS compared "  # noqa: S608
            "FROM shadows s WHERE NOT $1 OR status = 'running' ORDER BY created_at DESC, name",
            running_only,
        )
        return [dict(r) for r in rows]

    async def shadow(self, name: str) -> dict[str, Any] | None:
        row = await self.pool.fetchrow(f"SELECT {SHADOW_COLUMNS} FROM shadows WHERE name = $1", name)  # noqa: S608
        return None if row is None else dict(row)

    async def stop_shadow(self, name: str) -> dict[str, Any]:
        """Stop a running (or budget-spent) shadow; unknown or already ended: a one-line error."""
        row = await self.pool.fetchrow(
            "UPDATE shadows SET status = 'stopped', stopped_at = now() WHERE name = $1 "  # noqa: S608
            f"AND status IN ('running', 'budget_spent') RETURNING {SHADOW_COLUMNS}",
            name,
        )
        if row is None:
            raise ConfigurationError(await self._not_live(name, "stop"))
        return dict(row)

    async def promote_shadow(self, name: str, by: str) -> tuple[dict[str, Any], list[str]]:
        """Mark ``name`` promoted by ``by`` (and stopped) and return it with the known agents it covers; a stopped,
        promoted or unknown shadow is a one-line error (nothing changed)."""
        async with self.pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "UPDATE shadows SET status = 'promoted', promoted_at = now(), promoted_by = $2, "  # noqa: S608
                "stopped_at = coalesce(stopped_at, now()) WHERE name = $1 AND status IN ('running', 'budget_spent') "
                f"RETURNING {SHADOW_COLUMNS}",
                name,
                by,
            )
            if row is None:
                raise ConfigurationError(await self._not_live(name, "promote"))
            agents = [r["id"] for r in await conn.fetch("SELECT id FROM agents ORDER BY id")]
        return dict(row), [a for a in agents if fnmatchcase(a, row["agents"])]

    async def _not_live(self, name: str, verb: str) -> str:
        known = await self.pool.fetchval("SELECT status FROM shadows WHERE name = $1", name)
        if known is None:
            return f"no shadow named {name} (see 'drift shadow list')"
        return f"cannot {verb} shadow {name}: it is {str(known).replace('_', ' ')}"

    async def live_verdicts(self, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], dict[str, Any]]:
        """The live correction logs of (draft id, attempt) ``keys`` that the sinks have stored."""
        wanted = sorted(set(keys))
        rows = await self.pool.fetch(
            f"SELECT {LIVE_COLUMNS} FROM correction_logs WHERE (draft_id, attempt_number) IN "  # noqa: S608
            "(SELECT * FROM unnest($1::text[], $2::int[]))",
            [k[0] for k in wanted],
            [k[1] for k in wanted],
        )
        return {(r["draft_id"], r["attempt_number"]): dict(r) for r in rows}

    async def shadow_attempts(self, name: str, draft_id: str) -> list[dict[str, Any]]:
        """The candidate's stored verdicts on ``draft_id``'s attempts (its earlier attempts, for a retry)."""
        rows = await self.pool.fetch(
            "SELECT attempt_number, original_text, total_score FROM shadow_verdicts WHERE shadow = $1 "
            "AND draft_id = $2 ORDER BY attempt_number",
            name,
            draft_id,
        )
        return [dict(r) for r in rows]

    async def shadow_states(self) -> list[Shadow]:
        """Every shadow as a worker holds it (the table is small: a worker reads it whole each second)."""
        rows = await self.pool.fetch(f"SELECT {SHADOW_COLUMNS} FROM shadows ORDER BY name")  # noqa: S608
        return [shadow_of(r) for r in rows]
