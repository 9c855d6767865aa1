"""End-to-end (issue 22 points 1, 2, 5): with a 2 s idle TTL and pending TTL on the real embedded broker and
PostgreSQL, an idle agent leaves the worker's memory (the gauges fall to 0, polled on /metrics), its
``recent-messages`` entry and an abandoned draft's ``pending-attempts`` entry get tombstones, a restarted worker
does not bring them back, the returning agent gets its stored configuration with an empty similarity window,
and a late attempt of the expired draft is judged and says it no longer knew the earlier one."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import orjson
import pytest

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.store import Store
from streams.wire.topics import app_id
from tests.stack import Scenario, Worker, eventually, read_records

pytestmark = pytest.mark.e2e

TTL = {"DRIFT_AGENT_IDLE_TTL_S": "2", "DRIFT_PENDING_TTL_S": "2"}
SAID = "The Sabre pyramid is the future of tablets."


def gauge(worker: Worker, name: str) -> float | None:
    text = httpx.get(f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/metrics", timeout=5).text
    found = re.search(rf"^drift_{name} ([0-9.e+-]+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def sink_lag(worker: Worker) -> dict[str, int]:
    text = httpx.get(f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/metrics", timeout=5).text
    return {m[0]: int(float(m[1])) for m in re.findall(r'^drift_sink_lag_records\{sink="(\w+)"\} (\S+)$', text, re.M)}


async def until_lag(worker: Worker, expected: dict[str, int]) -> None:
    async def reached() -> bool:
        return sink_lag(worker) == expected

    assert await eventually(reached, 30.0), f"sinks' lag {sink_lag(worker)}, expected {expected}"


async def until_gauge(worker: Worker, name: str, value: float, timeout_s: float = 30.0) -> None:
    async def reached() -> bool:
        return gauge(worker, name) == value

    assert await eventually(reached, timeout_s), f"drift_{name} never reached {value} (last {gauge(worker, name)})"


async def last_values(scenario: Scenario, table: str, count: int) -> dict[str, Any]:
    """The newest value of each key of a table's changelog (None for a tombstone)."""
    topic = f"{app_id(scenario.settings)}-{table}-changelog"
    records = await read_records(scenario.settings.broker, topic, count)
    return {orjson.loads(r.key): None if r.value is None else orjson.loads(r.value) for r in records}


async def test_idle_state_leaves_memory_with_tombstones_and_stays_gone_after_a_restart(scenario: Scenario) -> None:
    await scenario.create_topics()
    # a database of its own: a restart rebuilds the windows of every agent that acted within the TTL, and the shared
    # one holds other tests' agents, some with messages dated in the future (the gauges would count them)
    env = {**TTL, "DRIFT_DATABASE_URL": await scenario.stack.own_database("evict")}
    worker = scenario.worker("--no-sinks", env=env).start()  # the sinks lag until the next worker runs them
    angela, draft = scenario.agent("angela"), f"abandoned-{uuid.uuid4().hex[:6]}"
    async with await Store.connect(env["DRIFT_DATABASE_URL"]) as store:
        config = await store.set_config(angela, {"gate_similarity_enabled": True})  # not the defaults
    await publish_config(scenario.settings, angela, config.model_dump())
    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        first = await gate.check(agent_id=angela, text=SAID)
        retry = await gate.check(agent_id=angela, text=SAID + "!", draft_id=draft)  # similar: a retry, pending
    assert (first.decision, retry.decision) == ("commit", "retry")

    await until_lag(worker, {"correction_logs": 2, "run_messages": 1})  # 2 attempts logged, 1 message committed
    await until_gauge(worker, "agents_in_memory", 0)  # nothing for 2 s: everything evicted
    await until_gauge(worker, "pending_attempts", 0)
    recent = await last_values(scenario, "recent-messages", 2)  # the entry, then its tombstone
    pending = await last_values(scenario, "pending-attempts", 2)
    assert recent[angela] is None and pending[draft] is None

    worker.stop()  # a restart restores the tables from their changelogs: the tombstones win
    worker = scenario.worker(env=env).start()
    assert gauge(worker, "agents_in_memory") == 0

    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        back = await gate.check(agent_id=angela, text=SAID)  # the same words again
        late = await gate.check(agent_id=angela, text="Something else entirely.", draft_id=draft, attempt=2)
    assert back.similarity is not None  # the stored configuration (similarity on), not the defaults
    assert back.decision == "commit" and back.similarity.passed  # an empty window: nothing to repeat
    assert late.decision == "commit" and late.unknown_earlier_attempts == 1  # judged; attempt 1 was forgotten
    await until_gauge(worker, "agents_in_memory", 0)
    restore = gauge(worker, "table_restore_seconds")
    assert restore is not None and 0 < restore < 45
    await until_lag(worker, {"correction_logs": 0, "run_messages": 0})  # this worker runs the sinks
