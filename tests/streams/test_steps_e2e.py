"""End-to-end: orchestrator steps and their directives on the embedded broker, with real `drift worker` processes."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.runtime.history import HistoryFeed, HistoryView
from streams.store import Store
from streams.wire.payloads import Directives, Message
from tests.stack import Scenario, eventually, read_topic

pytestmark = pytest.mark.e2e

RULES = """
default: 9
rules:
  - proposition: "variety:textual"
    message_contains: "slowly"
    delay_s: 5
    value: true
  - proposition: "variety:textual"
    message_contains: "circling"
    value: true
  - proposition: "variety:textual"
    value: false
"""

CATCHPHRASE = "that's what she said"


async def configure(scenario: Scenario, agent: str, **changes: Any) -> None:
    async with await Store.connect(scenario.settings.database()) as store:
        config = await store.set_config(agent, changes)
    await publish_config(scenario.settings, agent, config.model_dump())
    await scenario.until_configured(agent, **changes)


async def started(scenario: Scenario, **env: str) -> GateClient:
    await scenario.create_topics()
    scenario.worker(judge=scenario.rules(RULES), env=env).start()
    return await GateClient(settings=scenario.settings, timeout_s=20).__aenter__()


async def say(gate: GateClient, agent: str, text: str, run_id: str, channel: str = "sales") -> None:
    message = Message(message_id=uuid.uuid4().hex, agent_id=agent, text=text, run_id=run_id, channel=channel)
    await gate.publish_message(message)


def kinds(directives: Directives) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for d in directives.directives:
        found.setdefault(d.agent_id, []).append(d.kind)
    return found


async def test_repetition_variety_and_one_record_per_step(scenario: Scenario) -> None:
    michael, pam, jim, kevin = (scenario.agent(n) for n in ("michael", "pam", "jim", "kevin"))
    run = f"run-{scenario.prefix.strip('.')}"
    gate = await started(scenario)
    try:
        await configure(scenario, michael, repetition_suppression_enabled=True)
        await configure(scenario, pam, variety_intervention_enabled=True, variety_message_threshold=3)
        await configure(scenario, jim, variety_intervention_enabled=True, variety_message_threshold=3)

        empty = await gate.step(run_id=run, step=0, agent_ids=[kevin], channel="sales")
        assert (empty.step, empty.directives) == (0, [])

        for text in ("Well, that's what she said, people.", "Sales are up and that's what she said.",
                     f"Jan called again. {CATCHPHRASE.capitalize()}!"):  # fmt: skip
            await say(gate, michael, text, run)
        for text in ("We keep circling the same pitch.", "Circling back to the same pitch again."):
            await say(gate, pam, text, run)
        for text in ("Beets.", "Bears.", "Battlestar Galactica."):
            await say(gate, jim, text, run)

        first = await gate.step(run_id=run, step=1, agent_ids=[michael, pam, jim], channel="sales")
        assert kinds(first) == {michael: ["repetition"]}  # pam is below the threshold, jim's check is false
        repetition = first.directives[0]
        assert CATCHPHRASE in repetition.text and CATCHPHRASE in str(repetition.evidence)
        assert not repetition.timed_out

        await say(gate, pam, "Still circling the same pitch, honestly.", run)
        second = await gate.step(run_id=run, step=2, agent_ids=[pam, jim], channel="sales")
        assert kinds(second) == {pam: ["variety"]}
        assert "completely new" in second.directives[0].text
    finally:
        await gate.close()

    records = await read_topic(scenario.settings, scenario.settings.topic("directives"), 3)
    assert Counter(r["step"] for r in records if r["run_id"] == run) == {0: 1, 1: 1, 2: 1}
    messages = await read_topic(scenario.settings, scenario.settings.topic("messages"), 9, timeout_s=3)
    assert len(messages) == 9  # exactly what was published: no directive became a message
    assert not any("keep reusing" in m["text"] or "completely new" in m["text"] for m in messages)


async def raw_step(scenario: Scenario, key: bytes, value: bytes) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        await producer.send_and_wait(scenario.settings.topic("steps"), value, key=key)
    finally:
        await producer.stop()


async def test_malformed_steps_go_to_the_dlq_and_slow_checks_time_out(scenario: Scenario) -> None:
    dwight = scenario.agent("dwight")
    run = f"run-{scenario.prefix.strip('.')}"
    gate = await started(scenario, DRIFT_STEP_DEADLINE_S="1.5")
    try:
        await configure(scenario, dwight, variety_intervention_enabled=True, variety_message_threshold=1)
        await raw_step(scenario, run.encode(), b"{not json")
        await raw_step(scenario, run.encode(), orjson.dumps({"run_id": run, "agent_ids": [dwight]}))  # no step
        await raw_step(scenario, b"another-run", orjson.dumps({"run_id": run, "step": 7, "agent_ids": [dwight]}))

        await say(gate, dwight, "I will slowly explain beet farming.", run, channel="warehouse")
        slow = await gate.step(run_id=run, step=8, agent_ids=[dwight], channel="warehouse")
        assert [(d.agent_id, d.kind, d.timed_out) for d in slow.directives] == [(dwight, "variety", True)]
        assert "did not finish" in slow.directives[0].text
        assert 1400 <= slow.latency_ms < 3000  # the 1.5 s step deadline, not the 5 s judge
    finally:
        await gate.close()

    letters = await read_topic(scenario.settings, scenario.settings.topic("dlq"), 3)
    errors = sorted(letter["error"] for letter in letters)
    assert len(errors) == 3
    assert any("not valid JSON" in e for e in errors)
    assert any("step" in e and "Field required" in e for e in errors)
    assert any("must equal run_id" in e for e in errors)
    records = await eventually(
        lambda: read_topic(scenario.settings, scenario.settings.topic("directives"), 1, timeout_s=2)
    )
    assert [r["step"] for r in records] == [8]


class CountingView(HistoryView):
    applied = 0

    def apply(self, message: Message) -> bool:
        self.applied += 1
        return super().apply(message)


async def test_the_history_feed_catches_up_and_resumes_where_it_stopped(scenario: Scenario) -> None:
    await scenario.create_topics()
    view = CountingView()
    feed = HistoryFeed(scenario.settings, view)
    gate = await GateClient(settings=scenario.settings, timeout_s=20).__aenter__()
    try:
        await say(gate, "oscar", "Actually, that's not how it works.", "r")
        task = asyncio.create_task(feed.run())
        await say(gate, "oscar", "Actually, let me explain.", "r")
        assert await feed.caught_up(10.0)  # both: the one sent before the feed started and the one after
        assert [e.text for e in feed.view.history("oscar", "r")] == [
            "Actually, that's not how it works.",
            "Actually, let me explain.",
        ]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert not await feed.caught_up(0.2)  # stopped: no view to wait for

        await say(gate, "oscar", "Actually, one more thing.", "r")
        task = asyncio.create_task(feed.run())
        assert await feed.caught_up(10.0)
        assert len(feed.view.history("oscar", "r")) == 3
        assert view.applied == 3  # the second run read only the new record
        assert feed.view.history("oscar", "r")[-1].text == "Actually, one more thing."
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    finally:
        await gate.close()
