"""Reads of the shadow tables (migration ``012_shadows.sql``) for a shadow's report: the shadow, its verdicts
reduced to what the statistics need, the attempts that would flip in full, and a summary per shadow.

Read-only, parameterised. The report reads the compact rows of every verdict in the window (decisions, the
scores each judge answered, tokens: the judges' reasoning stays in the database) and the full rows only of the
attempts that would flip, at most ``flip_limit`` of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import asyncpg

from engine.pricing import PriceTable
from engine.shadow_report.agreement import Confusion
from engine.shadow_report.report import (
    ComparedRow,
    Flip,
    Method,
    ShadowInfo,
    ShadowReport,
    build_report,
    flip_keys,
    usage_of,
)
from streams.store import Store

#: Attempts that would flip listed in full by default (the table counts them all).
FLIP_LIMIT = 500

_SHADOW_COLUMNS = (
    "name, agents, status, sample, judge, propositions, settings, budget_usd, max_tokens, spent_tokens, spent_usd, "
    "skipped, created_at, stopped_at, promoted_at"
)


_SCORED = (
    "(SELECT coalesce(jsonb_object_agg(d.key, d.value->'score'), '{}'::jsonb) "
    "FROM jsonb_each(CASE WHEN jsonb_typeof(COLUMN) = 'object' THEN COLUMN ELSE '{}'::jsonb END) d "
    "WHERE jsonb_typeof(d.value) = 'object' AND jsonb_typeof(d.value->'score') = 'number' "
    "AND coalesce(d.value->>'error', '') = '' AND coalesce(d.value->>'timed_out', 'false') <> 'true')"
)


def _scores(column: str) -> str:
    """SQL: ``column``'s dimensions that have a numeric score, no error and no timeout, as {dimension: score}
    (``column`` is one of two constant column names, never input)."""
    return _SCORED.replace("COLUMN", column)


_COMPARED = f"""
SELECT draft_id, attempt_number, decision, live_decision, token_usage, live_token_usage,
       {_scores("dimension_scores")} AS scores, {_scores("live_dimension_scores")} AS live_scores
FROM shadow_verdicts WHERE shadow = $1 AND ($2::timestamptz IS NULL OR created_at >= $2)
ORDER BY created_at, draft_id, attempt_number"""  # noqa: S608 (constant fragments, no input)

_FLIPS = """
SELECT v.draft_id, v.attempt_number, v.agent_id, v.run_id, v.original_text, v.decision, v.live_decision,
       v.total_score, v.live_total_score, v.dimension_scores, v.live_dimension_scores, v.created_at
FROM shadow_verdicts v JOIN unnest($2::text[], $3::int[]) AS k(draft_id, attempt_number)
  ON v.draft_id = k.draft_id AND v.attempt_number = k.attempt_number
WHERE v.shadow = $1 ORDER BY v.created_at, v.draft_id, v.attempt_number"""

_SENT_BACK = "IN ('retry', 'reject')"
_SUMMARIES = f"""
SELECT {", ".join(f"s.{c}" for c in _SHADOW_COLUMNS.split(", "))}, count(v.shadow) AS stored,
       count(*) FILTER (WHERE v.live_decision = 'commit' AND v.decision = 'commit') AS commit_commit,
       count(*) FILTER (WHERE v.live_decision = 'commit' AND v.decision {_SENT_BACK}) AS commit_retry,
       count(*) FILTER (WHERE v.live_decision {_SENT_BACK} AND v.decision = 'commit') AS retry_commit,
       count(*) FILTER (WHERE v.live_decision {_SENT_BACK} AND v.decision {_SENT_BACK}) AS retry_retry,
       max(v.created_at) AS last_verdict
FROM shadows s LEFT JOIN shadow_verdicts v ON v.shadow = s.name
GROUP BY s.name ORDER BY s.created_at DESC, s.name LIMIT $1"""  # noqa: S608 (constant fragments, no input)


def _dimensions(stored: object) -> dict[str, dict[str, Any]]:
    if not isinstance(stored, dict):
        return {}
    return {str(k): dict(v) for k, v in stored.items() if isinstance(v, dict)}


def _numbers(stored: object) -> dict[str, float]:
    return {str(k): float(v) for k, v in (stored or {}).items()} if isinstance(stored, dict) else {}


def shadow_info(row: asyncpg.Record | dict[str, Any]) -> ShadowInfo:
    return ShadowInfo(**{c: row[c] for c in _SHADOW_COLUMNS.split(", ")})


def table_of(row: asyncpg.Record | dict[str, Any]) -> Confusion:
    return Confusion(row["commit_commit"], row["commit_retry"], row["retry_commit"], row["retry_retry"])


class ShadowReports:
    """The queries of shadow reports, on a connected :class:`Store`."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def shadow(self, name: str) -> ShadowInfo | None:
        row = await self.store.pool.fetchrow(f"SELECT {_SHADOW_COLUMNS} FROM shadows WHERE name = $1", name)  # noqa: S608
        return None if row is None else shadow_info(row)

    async def compared(self, name: str, since: datetime | None) -> list[ComparedRow]:
        """Every stored verdict of shadow ``name`` since ``since``, oldest first, reduced for the statistics."""
        rows = await self.store.pool.fetch(_COMPARED, name, since)
        return [
            ComparedRow(
                draft_id=r["draft_id"], attempt=r["attempt_number"], live_decision=r["live_decision"],
                decision=r["decision"], live_scores=_numbers(r["live_scores"]), scores=_numbers(r["scores"]),
                live_usage=usage_of(r["live_token_usage"]), usage=usage_of(r["token_usage"]),
            )
            for r in rows
        ]  # fmt: skip

    async def flips(self, name: str, keys: Sequence[tuple[str, int]]) -> list[Flip]:
        """The full stored verdicts of the attempts ``keys`` of shadow ``name``, oldest first."""
        rows = await self.store.pool.fetch(_FLIPS, name, [k[0] for k in keys], [k[1] for k in keys])
        return [
            Flip(
                draft_id=r["draft_id"], attempt=r["attempt_number"], agent_id=r["agent_id"], run_id=r["run_id"],
                text=r["original_text"], live_decision=r["live_decision"], decision=r["decision"],
                live_total=r["live_total_score"], total=r["total_score"],
                live_dimensions=_dimensions(r["live_dimension_scores"]), dimensions=_dimensions(r["dimension_scores"]),
                created_at=r["created_at"],
            )
            for r in rows
        ]  # fmt: skip

    async def inputs(
        self, name: str, since: datetime | None, flip_limit: int = FLIP_LIMIT
    ) -> tuple[ShadowInfo, list[ComparedRow], list[Flip]] | None:
        """What a report of shadow ``name`` since ``since`` is built from; ``None`` for an unknown shadow."""
        info = await self.shadow(name)
        if info is None:
            return None
        rows = await self.compared(name, since)
        return info, rows, await self.flips(name, flip_keys(rows)[:flip_limit])

    async def report(
        self, name: str, since: datetime | None, *, live_judge: str | None, prices: PriceTable,
        method: Method = Method(), flip_limit: int = FLIP_LIMIT,  # noqa: B008 (frozen)
    ) -> ShadowReport | None:  # fmt: skip
        """The report of shadow ``name`` over its verdicts since ``since``; ``None`` for an unknown shadow."""
        found = await self.inputs(name, since, flip_limit)
        if found is None:
            return None
        info, rows, flips = found
        return build_report(info, rows, flips, live_judge=live_judge, prices=prices, since=since, method=method)

    async def summaries(self, limit: int = 200) -> list[tuple[ShadowInfo, Confusion, int, datetime | None]]:
        """Per shadow, newest first: the shadow, its decision table, its stored verdicts and the newest one's time."""
        rows = await self.store.pool.fetch(_SUMMARIES, limit)
        return [(shadow_info(r), table_of(r), r["stored"], r["last_verdict"]) for r in rows]
