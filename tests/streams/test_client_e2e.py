"""End-to-end: the client SDK against a real `drift worker` (one worker shared by the module)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.errors import ConfigurationError, ReplyTimeout
from streams.client import GateClient
from streams.client.admin import publish_config
from streams.runtime import faust_private as private
from streams.store import Store
from streams.wire.kafka import create_topics
from tests.stack import REPO, Scenario, Stack, eventually

pytestmark = pytest.mark.e2e

RULES = """
default: 9
rules:
  - proposition: "adherence-[gb]*"      # inverted claims (generic assistant, betrays beliefs, breaks the wall)
    value: 0
  - proposition: "adherence-[mv]*"
    message_contains: "monotone"
    value: 1
    reasoning: "a flat corporate tone with none of the persona's voice"
"""


@pytest.fixture(scope="module")
def shared(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    scenario = Scenario(stack, f"c{uuid.uuid4().hex[:8]}.", tmp_path_factory.mktemp("client"))
    asyncio.run(scenario.create_topics())
    scenario.worker(judge=scenario.rules(RULES)).start()
    yield scenario
    scenario.close()


async def gate_checks(scenario: Scenario, agent: str, **changes: Any) -> None:
    """Turn gate checks on for ``agent`` and wait until the worker has seen the change."""
    async with await Store.connect(scenario.settings.database()) as store:
        config = await store.set_config(agent, changes)
    assert await publish_config(scenario.settings, agent, config.model_dump())
    await scenario.until_configured(agent, **changes)


async def test_check_returns_the_verdict_of_its_own_draft(shared: Scenario) -> None:
    agent = shared.agent(f"erin{uuid.uuid4().hex[:4]}")
    await gate_checks(shared, agent, gate_adherence_enabled=True)
    async with GateClient(settings=shared.settings, timeout_s=20) as gate:
        passed = await gate.check(agent_id=agent, text="Ooh, a party! I love parties.", run_id="r1", channel="office")
        failed = await gate.check(agent_id=agent, text="A monotone summary of the quarterly numbers.")
    assert (passed.agent_id, passed.run_id, passed.attempt) == (agent, "r1", 1)
    assert (passed.decision, passed.outcome, passed.scores["adherence"].score) == ("commit", "passed", 9.0)
    assert passed.text == "Ooh, a party! I love parties."
    assert (failed.decision, failed.outcome) == ("retry", "corrected")
    assert failed.scores["adherence"].passed is False and failed.draft_id != passed.draft_id


async def test_converse_regenerates_with_the_feedback_until_commit(shared: Scenario) -> None:
    agent = shared.agent(f"andy{uuid.uuid4().hex[:4]}")
    await gate_checks(shared, agent, gate_adherence_enabled=True)
    feedback_seen: list[str] = []

    def regenerate(feedback: str) -> str:
        feedback_seen.append(feedback)
        return "Rit dit dit di doo! Nard Dog is on it, buddy."

    async with GateClient(settings=shared.settings, timeout_s=20) as gate:
        final = await gate.converse(agent_id=agent, text="A monotone reply about the budget.", regenerate=regenerate)
    assert len(feedback_seen) == 1
    assert "adherence" in feedback_seen[0] and "flat corporate tone" in feedback_seen[0]
    assert (final.decision, final.outcome, final.attempt, final.committed_attempt) == (
        "commit",
        "passed_after_retry",
        2,
        2,
    )
    assert final.text == "Rit dit dit di doo! Nard Dog is on it, buddy."


async def test_converse_accepts_an_async_regenerate_and_ends_forced_through(shared: Scenario) -> None:
    agent = shared.agent(f"toby{uuid.uuid4().hex[:4]}")
    await gate_checks(shared, agent, gate_adherence_enabled=True, max_correction_attempts=1)
    calls = 0

    async def regenerate(feedback: str) -> str:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0)
        return "Still a monotone reply, sorry."

    async with GateClient(settings=shared.settings, timeout_s=20) as gate:
        final = await gate.converse(agent_id=agent, text="A monotone remark.", regenerate=regenerate)
    assert calls == 1  # one regeneration allowed, then the gate commits the best attempt
    assert (final.decision, final.outcome, final.attempt) == ("commit", "forced_through", 2)
    assert (final.text, final.committed_attempt) == ("A monotone remark.", 1)  # equal totals: the earliest wins


async def test_converse_ends_in_silence_when_regenerate_returns_none(shared: Scenario) -> None:
    agent = shared.agent(f"gabe{uuid.uuid4().hex[:4]}")
    await gate_checks(shared, agent, gate_adherence_enabled=True)
    feedback_seen: list[str] = []

    def regenerate(feedback: str) -> str | None:
        feedback_seen.append(feedback)  # the feedback names the option of silence
        return None if feedback else "unreachable"

    async with GateClient(settings=shared.settings, timeout_s=20) as gate:
        final = await gate.converse(agent_id=agent, text="A monotone aside.", regenerate=regenerate)
        direct = await gate.skip(agent_id=agent, draft_id="quiet-1")
    assert "skip: true" in feedback_seen[0]
    assert (final.decision, final.outcome, final.attempt, final.text, final.committed_attempt) == (
        "skip", "skipped", 2, "", None,
    )  # fmt: skip
    assert (direct.decision, direct.outcome, direct.attempt) == ("skip", "skipped", 1)


async def test_fifty_concurrent_checks_each_get_their_own_verdict(shared: Scenario) -> None:
    agents = [shared.agent(f"crowd{i}{uuid.uuid4().hex[:3]}") for i in range(5)]
    for agent in agents:
        await gate_checks(shared, agent, gate_adherence_enabled=True)
    texts = [
        (agents[i % 5], f"note {i}: " + ("a monotone update" if i % 3 == 0 else "that's what she said"))
        for i in range(50)
    ]
    async with GateClient(settings=shared.settings, timeout_s=30) as gate:
        verdicts = await asyncio.gather(
            *(gate.check(agent_id=a, text=t, draft_id=f"d{i}") for i, (a, t) in enumerate(texts))
        )
    for i, ((agent, text), verdict) in enumerate(zip(texts, verdicts, strict=True)):
        assert (verdict.draft_id, verdict.agent_id) == (f"d{i}", agent)
        expected = "retry" if "monotone" in text else "commit"
        assert verdict.decision == expected, (i, text, verdict.decision)
        if expected == "commit":
            assert verdict.text == text


async def test_check_times_out_when_no_worker_runs(shared: Scenario) -> None:
    lonely = shared.settings.with_(topic_prefix=f"idle{uuid.uuid4().hex[:6]}.")
    await create_topics(lonely)
    async with GateClient(settings=lonely, timeout_s=0.5) as gate:
        started = asyncio.get_running_loop().time()
        waiting = asyncio.ensure_future(gate.check(agent_id="nobody", text="anyone there?"))
        # while a reply is awaited the client fetches at its brisk wait (streams.runtime.fetchwait)
        assert await eventually(
            lambda: _fetch_wait_is(gate, lonely.fetch_brisk_wait_ms), timeout_s=0.4, interval_s=0.01
        )
        with pytest.raises(ReplyTimeout, match=r"no reply for verdict .* within 0.5s"):
            await waiting
        assert asyncio.get_running_loop().time() - started < 3.0
        with pytest.raises(ReplyTimeout):
            await gate.check(agent_id="nobody", text="and now?", timeout_s=0.2)
        assert await eventually(lambda: _fetch_wait_is(gate, lonely.fetch_max_wait_ms), timeout_s=2.0, interval_s=0.01)


async def _fetch_wait_is(gate: GateClient, wait_ms: int) -> bool:
    return bool(private.fetch_max_wait(private.kafka_fetcher(gate._consumer)) == wait_ms)


async def test_client_refuses_a_prefix_without_topics(shared: Scenario) -> None:
    missing = shared.settings.with_(topic_prefix=f"missing{uuid.uuid4().hex[:6]}.")
    gate = GateClient(settings=missing)
    try:
        with pytest.raises(ConfigurationError, match="does not exist"):
            await gate.start()
    finally:
        await gate.close()


def test_the_sdk_example_runs_against_the_worker(shared: Scenario) -> None:
    agent = shared.agent("kelly")
    asyncio.run(gate_checks(shared, agent, gate_adherence_enabled=True))
    done = subprocess.run(
        [sys.executable, str(REPO / "ops" / "examples" / "gate_client.py"), "--broker", shared.settings.broker,
         "--prefix", shared.prefix, "--agent", agent, "--timeout", "20",
         "--text", "A monotone status update on the quarterly numbers."],
        capture_output=True, text=True, timeout=60, check=False, cwd=Path(REPO),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "check: retry/corrected" in done.stdout
    assert "converse: commit/passed_after_retry after 2 attempt(s)" in done.stdout
