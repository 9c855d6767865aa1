"""End-to-end: the gate on the embedded broker and embedded PostgreSQL, with real `drift worker` processes."""

from __future__ import annotations

import asyncio
import functools
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from streams.client import GateClient
from streams.client.admin import publish_config
from streams.store import Store
from streams.wire.payloads import Message
from streams.wire.topics import app_id
from tests.stack import DRIFT, Scenario, Stack, eventually, read_topic, read_topic_until

pytestmark = pytest.mark.e2e

RULES = """
default: 9
rules:
  - message_contains: "slow"
    value: 8
    delay_s: 4
  - proposition: "adherence-[mv]*"      # the two positive adherence claims
    message_contains: "boring"
    value: 2
    reasoning: "dry and impersonal, nothing like the persona"
  - proposition: "adherence-[mv]*"
    message_contains: "dull"
    value: 3
  - proposition: "adherence-[gb]*"      # the inverted claims: not observed
    value: 0
"""


async def configure(scenario: Scenario, agent: str, **changes: Any) -> None:
    async with await Store.connect(scenario.settings.database()) as store:
        config = await store.set_config(agent, changes)
    await publish_config(scenario.settings, agent, config.model_dump())
    await scenario.until_configured(agent, **changes)


@pytest.fixture(scope="module")
def shared(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    """One worker judged by :data:`RULES` for the file's tests but the SIGKILL one (which kills its own): each
    test names its agents afresh (:func:`fresh`), so no test sees another's configuration, history or rows."""
    scenario = Scenario(stack, f"g{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("gate"))
    asyncio.run(scenario.create_topics())
    scenario.worker(judge=scenario.rules(RULES)).start()
    yield scenario
    scenario.close()


def fresh(scenario: Scenario, *names: str) -> list[str]:
    """Agent ids of this test alone on the shared worker."""
    tag = uuid.uuid4().hex[:4]
    return [scenario.agent(f"{name}{tag}") for name in names]


async def started(scenario: Scenario) -> GateClient:
    return await GateClient(settings=scenario.settings, timeout_s=20).__aenter__()


async def rows(scenario: Scenario, sql: str, *args: Any) -> list[Any]:
    async with await Store.connect(scenario.settings.database()) as store:
        return list(await store.pool.fetch(sql, *args))


async def test_outcomes_pass_retry_forced_reject(shared: Scenario) -> None:
    scenario = shared
    michael, dwight, jim = fresh(scenario, "michael", "dwight", "jim")
    gate = await started(scenario)
    try:
        await configure(scenario, michael, gate_adherence_enabled=True)
        await configure(scenario, dwight, gate_adherence_enabled=True, max_correction_attempts=1)
        await configure(
            scenario, jim, gate_adherence_enabled=True, max_correction_attempts=1, continue_on_failure=False
        )

        passed = await gate.check(agent_id=michael, text="That's what she said!")
        assert (passed.decision, passed.outcome, passed.scores["adherence"].score) == ("commit", "passed", 9.0)

        first = await gate.check(agent_id=michael, text="A boring status update.", draft_id="m-1")
        assert (first.decision, first.outcome) == ("retry", "corrected")
        assert first.feedback and "adherence" in first.feedback and "dry and impersonal" in first.feedback
        second = await gate.check(agent_id=michael, text="I am the world's best boss!", draft_id="m-1", attempt=2)
        assert (second.decision, second.outcome, second.committed_attempt) == ("commit", "passed_after_retry", 2)

        await gate.check(agent_id=dwight, text="A dull remark.", draft_id="d-1")
        forced = await gate.check(agent_id=dwight, text="A boring remark.", draft_id="d-1", attempt=2)
        assert (forced.decision, forced.outcome) == ("commit", "forced_through")
        assert (forced.text, forced.committed_attempt) == ("A dull remark.", 1)  # best total score wins

        await gate.check(agent_id=jim, text="boring", draft_id="j-1")
        rejected = await gate.check(agent_id=jim, text="still boring", draft_id="j-1", attempt=2)
        assert (rejected.decision, rejected.outcome) == ("reject", "rejected")
    finally:
        await gate.close()

    assert await eventually(lambda: _count(scenario, [michael, dwight, jim], 7))
    logged = await rows(
        scenario, "SELECT outcome FROM correction_logs WHERE agent_id = $1 ORDER BY attempt_number", michael
    )
    assert [r["outcome"] for r in logged if r["outcome"] != "passed"] == ["corrected", "passed_after_retry"]


async def _count(scenario: Scenario, agents: list[str], expected: int) -> bool:
    found = await rows(scenario, "SELECT 1 FROM correction_logs WHERE agent_id = ANY($1)", agents)
    return len(found) == expected


async def test_timeout_similarity_and_disabled_gate(shared: Scenario) -> None:
    scenario = shared
    pam, angela, kevin = fresh(scenario, "pam", "angela", "kevin")
    gate = await started(scenario)
    try:
        await configure(scenario, pam, gate_adherence_enabled=True, gate_fluency_enabled=True)
        await configure(scenario, angela, gate_similarity_enabled=True)
        await configure(scenario, kevin, gate_enabled=False, gate_adherence_enabled=True)

        timed = await gate.check(agent_id=pam, text="a slow answer about art")
        assert (timed.decision, timed.outcome) == ("commit", "timeout_pass_through")
        assert all(s.timed_out and s.passed for s in timed.scores.values())
        assert timed.latency_ms < 3500  # the 1.5 s deadline, not the 4 s judge

        first = await gate.check(agent_id=angela, text="The party planning committee meets at noon sharp.")
        assert first.outcome == "passed" and first.similarity is not None and first.similarity.passed
        again = await gate.check(agent_id=angela, text="The party planning committee meets at noon, sharp!")
        assert again.decision == "retry" and again.similarity is not None and not again.similarity.passed
        assert again.similarity.most_similar == "The party planning committee meets at noon sharp."
        assert again.feedback and "similarity" in again.feedback

        started_at = time.monotonic()
        free = await gate.check(agent_id=kevin, text="a slow and boring message")
        assert (free.decision, free.outcome, free.scores, free.judge) == ("commit", "passed", {}, None)
        assert time.monotonic() - started_at < 3.0  # no judge call (the rule would delay 4 s)
    finally:
        await gate.close()


async def test_an_action_that_bypassed_the_gate_counts_for_similarity(shared: Scenario) -> None:
    scenario = shared
    """External actions on ``messages`` enter the agent's recent messages; stimuli do not. Every check here
    also fails adherence ("boring"), so none commits and only the published messages make up the history."""
    (dwight,) = fresh(scenario, "dwight")
    gate = await started(scenario)
    try:
        await configure(scenario, dwight, gate_similarity_enabled=True, gate_adherence_enabled=True)
        stimulus = "A boring memo: the fire drill is moved to Friday afternoon."
        action = "Bears eat beets, a boring fact, and I grow the finest beets in Scranton."
        await gate.publish_message(Message(message_id="s1", agent_id=dwight, text=stimulus, kind="stimulus"))
        await gate.publish_message(Message(message_id="x1", agent_id=dwight, text=action))  # same partition, later

        async def similarity_of(text: str) -> Any:
            verdict = await gate.check(agent_id=dwight, text=text)
            assert verdict.decision == "retry" and verdict.similarity is not None
            return verdict.similarity

        flagged = await eventually(lambda: _failed(similarity_of(action)), timeout_s=10)
        assert flagged.most_similar == action
        assert (await similarity_of(stimulus)).passed  # the stimulus, absorbed before the action, is not history
    finally:
        await gate.close()


async def _failed(similarity: Any) -> Any:
    result = await similarity
    return None if result.passed else result


async def test_config_change_is_picked_up_live_via_cli(shared: Scenario) -> None:
    scenario = shared
    (oscar,) = fresh(scenario, "oscar")
    gate = await started(scenario)
    try:
        before = await gate.check(agent_id=oscar, text="boring facts about accounting")
        assert before.outcome == "passed" and before.scores == {}  # every correction is off by default
        env = scenario.workers[0].env
        done = subprocess.run(
            [DRIFT, "config", "set", oscar, "gate_adherence_enabled=true", "--prefix", scenario.prefix],
            env=env, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        await scenario.until_configured(oscar, gate_adherence_enabled=True)  # the worker polls its database
        after = await gate.check(agent_id=oscar, text="boring facts about accounting")
        assert after.decision == "retry"

        bad = subprocess.run(
            [DRIFT, "config", "set", oscar, "gate_adherense_enabled=true"],
            env=env, capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
        assert bad.returncode == 2 and "did you mean 'gate_adherence_enabled'" in bad.stderr
        assert "Traceback" not in bad.stderr
    finally:
        await gate.close()


async def test_bad_payloads_go_to_the_dlq_and_processing_goes_on(shared: Scenario) -> None:
    scenario = shared
    (stanley,) = fresh(scenario, "stanley")
    gate = await started(scenario)
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        topic = scenario.settings.topic("drafts")
        bad = [
            (b"not json at all", stanley.encode()),
            (orjson.dumps([1, 2, 3]), stanley.encode()),
            (orjson.dumps({"draft_id": "x", "agent_id": stanley}), stanley.encode()),  # no text
            (orjson.dumps({"draft_id": "y" * 200, "agent_id": stanley, "text": "hi"}), stanley.encode()),
            (orjson.dumps({"draft_id": "z", "agent_id": stanley, "text": "hi"}), b"someone-else"),
        ]
        for value, key in bad:
            await producer.send_and_wait(topic, value, key=key)
        verdict = await gate.check(agent_id=stanley, text="Did I stutter?")
        assert verdict.outcome == "passed"
    finally:
        await producer.stop()
        await gate.close()
    letters = await read_topic(scenario.settings, scenario.settings.topic("dlq"), 5)
    assert len(letters) == 5
    reasons = " | ".join(letter["error"] for letter in letters)
    for expected in ("not valid JSON", "must be a JSON object", "text: Field required", "draft_id", "must equal"):
        assert expected in reasons
    assert all(letter["source_topic"] == scenario.settings.topic("drafts") for letter in letters)


async def test_verdicts_are_readable_by_confluent_kafka(shared: Scenario) -> None:
    scenario = shared
    from confluent_kafka import Consumer

    (meredith,) = fresh(scenario, "meredith")
    gate = await started(scenario)
    try:
        sent = await gate.check(agent_id=meredith, text="Is it Friday yet?")
    finally:
        await gate.close()
    consumer = Consumer({"bootstrap.servers": scenario.settings.broker, "group.id": f"cf-{uuid.uuid4().hex[:6]}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    from confluent_kafka import TopicPartition as ConfluentPartition

    # explicit assignment: no group join, so the test does not wait for a rebalance
    consumer.assign([ConfluentPartition(scenario.settings.topic("verdicts"), p, 0) for p in range(3)])
    try:
        found: dict[str, Any] | None = None
        deadline = time.monotonic() + 30
        while found is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:  # the shared topic holds other tests' verdicts too
                value = orjson.loads(message.value() or b"{}")
                if value.get("draft_id") == sent.draft_id:
                    assert message.key() == meredith.encode()
                    found = value
        assert found is not None and found["outcome"] == "passed"
    finally:
        consumer.close()


async def test_sigkill_mid_stream_every_draft_gets_a_verdict_without_duplicate_rows(scenario: Scenario) -> None:
    agents = [scenario.agent(f"a{i}") for i in range(4)]
    await scenario.create_topics()
    worker = scenario.worker(judge=scenario.rules("default: 9\n")).start()
    members = functools.partial(rows, scenario, "SELECT token FROM group_members WHERE group_id = $1",
                                app_id(scenario.settings))  # fmt: skip
    killed = await eventually(members)  # the worker registered its group member (streams/worker/peers.py)
    assert len(killed) == 1
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker, linger_ms=5)
    await producer.start()
    drafts = [(f"k{i}", agents[i % 4]) for i in range(400)]
    try:
        for n, (draft_id, agent) in enumerate(drafts):
            value = orjson.dumps({"draft_id": draft_id, "agent_id": agent, "text": f"message number {n} from {agent}"})
            await producer.send(scenario.settings.topic("drafts"), value, key=agent.encode())
            if n == 200:
                await producer.flush()
                await asyncio.sleep(0.05)
                worker.kill()
        await producer.flush()
    finally:
        await producer.stop()
    worker.start()
    sent = {d for d, _ in drafts}
    verdicts = await read_topic_until(
        scenario.settings, scenario.settings.topic("verdicts"), lambda vs: {v["draft_id"] for v in vs} >= sent, 60
    )
    assert {v["draft_id"] for v in verdicts} == sent

    async def all_rows() -> bool:
        found = await rows(scenario, "SELECT count(*) AS n FROM correction_logs WHERE agent_id = ANY($1)", agents)
        return bool(found[0]["n"] == len(drafts))

    assert await eventually(all_rows, timeout_s=20)
    duplicates = await rows(
        scenario,
        "SELECT draft_id FROM correction_logs WHERE agent_id = ANY($1) GROUP BY draft_id, attempt_number "
        "HAVING count(*) > 1",
        agents,
    )
    assert duplicates == []
    messages = await rows(scenario, "SELECT count(*) AS n FROM run_messages WHERE agent_id = ANY($1)", agents)
    assert messages[0]["n"] == len(drafts)

    async def swept() -> bool:  # the killed worker's lock went with its process: the new one ended its member
        now = [r["token"] for r in await members()]
        return len(now) == 1 and now != [r["token"] for r in killed]

    assert await eventually(swept) and "gone without leaving" in worker.log_path.read_text()
    url = f"http://127.0.0.1:{worker.env['DRIFT_WEB_PORT']}/stats"
    stats = orjson.loads(await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read()))
    assert stats["state"]["group_members_ended"] == 1
