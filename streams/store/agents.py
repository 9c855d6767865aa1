"""Which agents the database knows: the ``agents`` table with its configuration and message counts."""

from __future__ import annotations

from dataclasses import dataclass

from streams.store import Store

_AGENTS_SQL = """
SELECT a.id, a.name, (c.agent_id IS NOT NULL) AS configured,
       (SELECT count(*) FROM run_messages m WHERE m.agent_id = a.id AND m.kind = 'action') AS actions,
       (SELECT max(m.ts) FROM run_messages m WHERE m.agent_id = a.id) AS last_seen
FROM agents a LEFT JOIN agent_evaluation_config c ON c.agent_id = a.id
ORDER BY a.id LIMIT $1"""


@dataclass(frozen=True, slots=True)
class StoredAgent:
    id: str
    name: str | None
    configured: bool
    actions: int
    last_seen: str | None


async def stored_agents(store: Store, limit: int = 10_000) -> list[StoredAgent]:
    rows = await store.pool.fetch(_AGENTS_SQL, limit)
    return [
        StoredAgent(
            r["id"],
            r["name"],
            bool(r["configured"]),
            int(r["actions"]),
            r["last_seen"].isoformat() if r["last_seen"] else None,
        )
        for r in rows
    ]
