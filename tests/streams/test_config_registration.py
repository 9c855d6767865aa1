"""A configuration that arrives on the ``agent-config`` topic survives the worker's own registration of the agent.

Found by the experiment e2e: the default rows the store gains for a new agent (the step that saw it before its
configuration registers it; the sinks insert one with its first message) came back from the next poll as
"changed" and replaced the treatment arm's configuration (gate on) by the defaults a second or two into every
session: most of a treatment session ran ungated.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from engine.models import AgentConfig
from streams.services.configs import ConfigCache

GATED = AgentConfig(gate_adherence_enabled=True, gate_adherence_threshold=5)


class RegisteringStore:
    """Registration inserts a default row, which the next poll reports as changed (as the real store does)."""

    def __init__(self) -> None:
        self.rows: dict[str, AgentConfig] = {}
        self.fresh: list[str] = []

    async def configs_newest(self) -> datetime | None:
        return None

    async def configs_of(self, agent_ids: Iterable[str]) -> dict[str, AgentConfig]:
        return {a: self.rows[a] for a in agent_ids if a in self.rows}

    async def ensure_agents(self, agents: Iterable[tuple[str, str | None]]) -> None:
        for agent_id, _ in agents:
            if agent_id not in self.rows:
                self.rows[agent_id] = AgentConfig()
                self.fresh.append(agent_id)

    async def configs_changed_since(self, since: datetime | None) -> tuple[list[tuple[str, AgentConfig]], datetime]:
        changed = [(a, self.rows[a]) for a in (self.rows if since is None else self.fresh)]
        self.fresh = []
        return changed, datetime.now(UTC)


async def _loaded(store: RegisteringStore) -> ConfigCache:
    async def port() -> Any:
        return store

    cache = ConfigCache(port, wait_for_store=True)
    await cache.load(store)  # type: ignore[arg-type]
    return cache


async def test_a_topic_configuration_is_not_replaced_by_the_registration_defaults() -> None:
    store = RegisteringStore()
    cache = await _loaded(store)
    assert cache.get("s1.treatment.p01") == AgentConfig()  # seen first (a step), registered on the next refresh
    cache.apply("s1.treatment.p01", GATED)  # then its configuration arrives on the topic
    await cache.refresh(store)  # type: ignore[arg-type]
    assert "s1.treatment.p01" in store.rows  # still registered
    assert cache.get("s1.treatment.p01") == GATED


async def test_a_stored_change_still_reaches_an_agent_seen_with_the_defaults() -> None:
    store = RegisteringStore()
    cache = await _loaded(store)
    cache.get("p02")
    await cache.refresh(store)  # type: ignore[arg-type]
    store.rows["p02"], store.fresh = GATED, ["p02"]  # `drift config set` wrote the store
    await cache.refresh(store)  # type: ignore[arg-type]
    assert cache.get("p02") == GATED


async def test_a_sinks_placeholder_row_does_not_reset_a_topic_configuration() -> None:
    store = RegisteringStore()
    cache = await _loaded(store)
    cache.apply("s1.treatment.p03", GATED)
    store.rows["s1.treatment.p03"], store.fresh = AgentConfig(), ["s1.treatment.p03"]  # the sink stored a message
    await cache.refresh(store)  # type: ignore[arg-type]
    assert cache.get("s1.treatment.p03") == GATED
    store.rows["s1.treatment.p03"] = changed = AgentConfig(gate_fluency_enabled=True)
    store.fresh = ["s1.treatment.p03"]  # a real change in the store still wins
    await cache.refresh(store)  # type: ignore[arg-type]
    assert cache.get("s1.treatment.p03") == changed
    cache.drop("s1.treatment.p03")  # evicted: nothing of it stays
    assert "s1.treatment.p03" not in cache._announced
