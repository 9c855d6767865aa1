"""Issue 20 point 1: no draft is decided before the stored agent configurations are loaded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import orjson

from engine.models import AgentConfig
from streams.services.configs import ConfigCache
from tests.streams.fakes import access
from tests.streams.test_lanes import FakeRuntime, Record

CHECKED = AgentConfig(gate_adherence_enabled=True)


class FakeStore:
    """The configuration queries of the store: the stored rows, or an error while ``down``."""

    def __init__(self, rows: dict[str, AgentConfig]) -> None:
        self.rows, self.down = rows, False
        self.registered: list[tuple[str, str | None]] = []
        self.asked: list[str] = []
        self.stamp = datetime(2026, 1, 1, tzinfo=UTC)

    async def configs_changed_since(self, since: datetime | None) -> tuple[list[tuple[str, AgentConfig]], Any]:
        if self.down:
            raise ConnectionResetError("database went away")
        return ([] if since == self.stamp else list(self.rows.items())), self.stamp

    async def ensure_agents(self, agents: Any) -> None:
        if self.down:
            raise ConnectionResetError("database went away")
        self.registered.extend(agents)

    async def configs_of(self, agent_ids: Any) -> dict[str, AgentConfig]:
        if self.down:
            raise ConnectionResetError("database went away")
        self.asked.extend(agent_ids)
        return {a: self.rows[a] for a in agent_ids if a in self.rows}

    async def configs_newest(self) -> Any:
        if self.down:
            raise ConnectionResetError("database went away")
        return self.stamp


async def test_a_waiting_cache_is_not_loaded_until_the_store_is_read() -> None:
    store = FakeStore({"jim": CHECKED})
    cache = ConfigCache(access(store), wait_for_store=True)
    waiter = asyncio.ensure_future(cache.wait_loaded())
    await asyncio.sleep(0)
    assert not cache.loaded and not waiter.done()
    assert await cache.load(store) == 0  # type: ignore[arg-type]  # nobody seen yet: nothing read
    await asyncio.wait_for(waiter, 1)
    await cache.ensure(["jim"])
    assert cache.loaded and cache.get("jim") == CHECKED


async def test_an_agent_seen_before_the_load_gets_its_stored_config_not_the_defaults() -> None:
    cache = ConfigCache(wait_for_store=True)
    cache.note_agent("jim", "Jim")  # a committed message of jim arrived first
    assert cache.get("jim") == AgentConfig()
    await cache.load(FakeStore({"jim": CHECKED}))  # type: ignore[arg-type]
    assert cache.get("jim") == CHECKED
    assert cache.get("stranger") == AgentConfig()  # unknown to the store: the defaults


async def test_a_failed_refresh_keeps_the_last_known_configurations() -> None:
    store = FakeStore({"jim": CHECKED})
    cache = ConfigCache(access(store), wait_for_store=True)
    await cache.load(store)  # type: ignore[arg-type]
    await cache.ensure(["jim", "newcomer"])
    cache.get("newcomer")
    store.down = True
    assert await cache.refresh(store) == 0  # type: ignore[arg-type]
    assert cache.get("jim") == CHECKED
    store.down = False
    await cache.refresh(store)  # type: ignore[arg-type]
    assert [agent for agent, _ in store.registered] == ["newcomer"]  # registration retried after the failure


async def test_the_gate_lane_decides_nothing_before_the_configurations_are_loaded() -> None:
    cache = ConfigCache(wait_for_store=True)
    rt = FakeRuntime(configs=cache)
    lane = rt.lane()
    body = {"draft_id": "d1", "agent_id": "jim", "text": "a perfectly ordinary message"}
    handled = asyncio.ensure_future(lane([Record(b"jim", orjson.dumps(body))]))
    for _ in range(20):
        await asyncio.sleep(0)
    assert not handled.done() and rt.batch.sent == []
    await cache.load(FakeStore({"jim": AgentConfig(gate_enabled=False)}))  # type: ignore[arg-type]
    await asyncio.wait_for(handled, 5)
    assert rt.batch.sent[0][0] == rt.deps.topics.verdicts


async def test_an_unreachable_database_at_start_is_waited_for_and_reported() -> None:
    from streams.embedded import free_port
    from streams.services.context import WorkerStore

    url = f"postgresql://drift@127.0.0.1:{free_port()}/drift"  # nothing listens there
    store = WorkerStore(url)
    cache = ConfigCache(wait_for_store=True)
    task = asyncio.ensure_future(store.open(cache))
    try:
        for _ in range(100):
            if (store.waiting_for or "").startswith("waiting for the database"):
                break
            await asyncio.sleep(0.05)
        assert "cannot connect to the database" in (store.waiting_for or "")
        assert not task.done() and not store.ready.is_set() and not cache.loaded
    finally:
        task.cancel()
