"""Which agents the database knows: the ``agents`` table with its configuration and message counts."""

from __future__ import annotations

from dataclasses import dataclass

from streams.store import Store

_AGENTS_SQL = """
SELECT a.id, a.name,
       (SELECT count(*) FROM run_messages m WHERE m.agent_id = a.id AND m.kind = 'action') AS actions,
       (SELECT max(m.ts) FROM run_messages m WHERE m.agent_id = a.id) AS last_seen
FROM agents a
ORDER BY a.id LIMIT $1"""


@dataclass(frozen=True, slots=True)
class StoredAgent:
    id: str
    name: str | None
    configured: bool
    actions: int
    last_seen: str | None


async def stored_agents(store: Store, limit: int = 10_000) -> list[StoredAgent]:
    """The agents the database knows; ``configured`` when their stored configuration is not the defaults (the
    gate registers every agent it sees with a default row, which configures nothing)."""
    from engine.models import AgentConfig

    rows = await store.pool.fetch(_AGENTS_SQL, limit)
    configs = await store.configs_of([r["id"] for r in rows])
    defaults = AgentConfig()
    return [
        StoredAgent(
            r["id"],
            r["name"],
            r["id"] in configs and configs[r["id"]] != defaults,
            int(r["actions"]),
            r["last_seen"].isoformat() if r["last_seen"] else None,
        )
        for r in rows
    ]
