"""End-to-end: two workers in one consumer group share the partitions; stopping one hands its partitions and
table state to the other with no lost draft."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.runtime.stopping import PREFIX as STOPPED
from streams.store import Store
from streams.wire.topics import app_id
from tests.stack import Scenario, Worker, eventually, read_topic_until

pytestmark = pytest.mark.e2e

#: Faust's commit interval in the worker (streams.runtime.faust_app: broker_commit_interval)
COMMIT_INTERVAL_S = 0.5


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
        retried = await asyncio.gather(  # each a repeat: asked to retry, its attempt pending on its owner
            *(gate.check(agent_id=a, text=t, draft_id=f"{a}-r") for a, t in zip(agents, originals, strict=True))
        )
        assert {v.decision for v in retried} == {"retry"}

        first.stop()  # graceful: its partitions and their table state move to the second worker
        during = [gate.check(agent_id=a, text=f"{a} asks about the break room schedule") for a in agents]
        again = [gate.check(agent_id=a, text=t) for a, t in zip(agents, originals, strict=True)]
        results = await asyncio.gather(*during)
        repeats = await asyncio.gather(*again)
        later = await asyncio.gather(  # the second attempts, all judged by the second worker
            *(gate.check(agent_id=a, text=f"{a} orders toner for the printer", draft_id=f"{a}-r", attempt=2)
              for a in agents)
        )  # fmt: skip

    assert len(results) == len(agents) and all(r.decision == "commit" for r in results)
    # the recent-messages table moved: every repeat is caught, including agents the first worker owned
    assert all(r.decision == "retry" and r.similarity is not None for r in repeats), [
        (r.agent_id, r.decision, r.similarity) for r in repeats
    ]
    assert {r.similarity.most_similar for r in repeats if r.similarity} == set(originals)
    assert stats_of(second)["attempts"] >= 2 * len(agents)
    # pending-attempts moved too (read behind the second worker's recovery): every second attempt knew its first
    assert [(r.decision, r.committed_attempt, r.unknown_earlier_attempts) for r in later] == [("commit", 2, 0)] * 12
    stopped = [line for line in first.log_path.read_text().splitlines() if line.startswith(f"drift: {STOPPED}")]
    assert len(stopped) == 1 and "group leave" in stopped[0], stopped  # where its stop went, in one line


async def test_a_draft_still_judged_when_its_worker_stops_is_answered_by_the_next_owner(scenario: Scenario) -> None:
    """Issue 34's unanswered draft after a graceful hand-over, made deterministic: one partition, a draft whose
    judge call is slow at its head and quick drafts after it. Faust committed past the slow draft once the quick
    ones were acked (docs/known-issues.md); the stop then gave it up and the next owner started after it."""
    slow, quick = scenario.agent("slowclerk"), scenario.agent("quickclerk")
    await scenario.create_topics(partitions=1)
    judge = scenario.rules(f"default: 9\nrules:\n  - {{agent: {slow}, value: 9, delay_s: 6}}\n")
    env = {"DRIFT_JUDGE_DEADLINE_S": "30"}  # the slow call is still running when its worker stops
    first = scenario.worker("--partitions", "1", judge=judge, env=env).start()
    async with await Store.connect(scenario.settings.database()) as store:
        for agent, config in ((slow, {"gate_suitability_enabled": True}), (quick, {"gate_similarity_enabled": True})):
            stored = await store.set_config(agent, config)
            await publish_config(scenario.settings, agent, stored.model_dump())
    await scenario.until_configured(slow, gate_suitability_enabled=True)
    await scenario.until_configured(quick, gate_similarity_enabled=True)
    drafts = scenario.settings.topic("drafts")
    async with GateClient(settings=scenario.settings, timeout_s=40) as gate:
        await gate.check(agent_id=quick, text="a first draft: the partition has a committed offset")
    head = await eventually(lambda: committed(scenario, drafts))  # offset 1: the first draft's commit is in
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        ids = [f"{scenario.prefix}slow", *(f"{scenario.prefix}quick{n}" for n in range(3))]
        for draft_id in ids:
            agent = slow if "slow" in draft_id else quick
            body = {"draft_id": draft_id, "agent_id": agent, "text": f"{agent} writes {draft_id} about paper"}
            await producer.send_and_wait(drafts, orjson.dumps(body), key=agent.encode())
    finally:
        await producer.stop()
    verdicts = scenario.settings.topic("verdicts")
    await read_topic_until(scenario.settings, verdicts, lambda rs: set(ids[1:]) <= {r["draft_id"] for r in rs})
    # the quick drafts are acked while the slow one is judged: give a commit past it (the defect) every chance
    await asyncio.sleep(3 * COMMIT_INTERVAL_S)
    assert await committed(scenario, drafts) == head, "a commit passed the draft still being judged"
    first.stop()  # graceful, while the slow draft is judged: it is given up, unacked
    scenario.worker("--partitions", "1", judge=judge, env=env).start()
    answered = await read_topic_until(scenario.settings, verdicts, lambda rs: ids[0] in {r["draft_id"] for r in rs},
                                      timeout_s=60)  # fmt: skip
    assert ids[0] in {r["draft_id"] for r in answered}, "the draft being judged at the stop was never answered"


async def committed(scenario: Scenario, topic: str) -> int | None:
    """The gate's consumer group's committed offset on ``topic``'s partition 0."""
    consumer = AIOKafkaConsumer(bootstrap_servers=scenario.settings.broker, group_id=app_id(scenario.settings),
                                enable_auto_commit=False)  # fmt: skip
    await consumer.start()
    try:
        offset: int | None = await consumer.committed(TopicPartition(topic, 0))
        return offset
    finally:
        await consumer.stop()
