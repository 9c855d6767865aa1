"""End-to-end: two workers in one consumer group share the partitions; stopping one hands its partitions and
table state to the other with no lost draft."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import pytest

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.store import Store
from tests.stack import Scenario, Worker

pytestmark = pytest.mark.e2e


def stats_of(worker: Worker) -> dict[str, Any]:
    url = f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/stats"
    with urllib.request.urlopen(url, timeout=5) as response:
        data: dict[str, Any] = json.load(response)
    return data


async def test_two_workers_share_partitions_and_hand_over_state(scenario: Scenario) -> None:
    agents = [scenario.agent(f"clerk{i}") for i in range(12)]
    await scenario.create_topics(partitions=4)
    judge = scenario.rules("default: 9\n")
    first = scenario.worker("--partitions", "4", "--verbose", judge=judge).start()
    second = scenario.worker("--partitions", "4", "--verbose", judge=judge).start()
    async with await Store.connect(scenario.settings.database()) as store:
        for agent in agents:
            config = await store.set_config(agent, {"gate_similarity_enabled": True})
            await publish_config(scenario.settings, agent, config.model_dump())
    for agent in agents:
        await scenario.until_configured(agent, gate_similarity_enabled=True)  # on both workers

    async with GateClient(settings=scenario.settings, timeout_s=40) as gate:
        originals = [f"{agent} files the quarterly paper supply report on time" for agent in agents]
        verdicts = await asyncio.gather(
            *(gate.check(agent_id=a, text=t) for a, t in zip(agents, originals, strict=True))
        )
        assert {v.outcome for v in verdicts} == {"passed"}
        shares = [stats_of(first)["attempts"], stats_of(second)["attempts"]]
        assert sum(shares) == len(agents) and min(shares) > 0, f"partitions not shared: {shares}"

        first.stop()  # graceful: its partitions and their table state move to the second worker
        during = [gate.check(agent_id=a, text=f"{a} asks about the break room schedule") for a in agents]
        again = [gate.check(agent_id=a, text=t) for a, t in zip(agents, originals, strict=True)]
        results = await asyncio.gather(*during)
        repeats = await asyncio.gather(*again)

    assert len(results) == len(agents) and all(r.decision == "commit" for r in results)
    # the recent-messages table moved: every repeat is caught, including agents the first worker owned
    assert all(r.decision == "retry" and r.similarity is not None for r in repeats), [
        (r.agent_id, r.decision, r.similarity) for r in repeats
    ]
    assert {r.similarity.most_similar for r in repeats if r.similarity} == set(originals)
    assert stats_of(second)["attempts"] >= 2 * len(agents)
