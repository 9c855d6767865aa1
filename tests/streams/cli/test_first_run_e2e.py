"""A first user's commands against the embedded stack, through the real entry point (issue 18). The timed ones (an
unreachable broker) are in test_first_run_timed_e2e.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from typing import Any

import httpx
import pytest
from aiokafka.admin import AIOKafkaAdminClient

from engine.models import AgentConfig
from streams.embedded import free_port
from streams.store import Store
from streams.wire.topics import all_topics
from tests.stack import DRIFT, Scenario, Stack
from tests.streams.cli.first_run_support import drift_on

pytestmark = pytest.mark.e2e


def test_thresholds_are_stored_as_entered(stack: Stack) -> None:
    agent = f"toby-{uuid.uuid4().hex[:6]}"
    done, _ = drift_on(stack, "config", "set", agent, "gate_adherence_threshold=6.3", "repetition_threshold=0.35")
    assert done.returncode == 0, done.stderr
    shown, _ = drift_on(stack, "config", "show", agent)
    assert "6.3\n" in shown.stdout and "0.35\n" in shown.stdout

    floats = [name for name, field in AgentConfig.model_fields.items() if field.annotation is float]

    async def types() -> dict[str, str]:
        async with await Store.connect(stack.database.url) as store:
            rows = await store.pool.fetch(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'agent_evaluation_config' AND column_name = ANY($1::text[])",
                floats,
            )
            return {r["column_name"]: r["data_type"] for r in rows}

    assert asyncio.run(types()) == dict.fromkeys(floats, "double precision")


def test_unknown_agents_are_named_with_a_pointer_to_agents_list(stack: Stack) -> None:
    shown, _ = drift_on(stack, "config", "show", "nosuch")
    assert shown.returncode == 0 and "gate_enabled" in shown.stdout
    assert "unknown agent 'nosuch', defaults shown (see 'drift agents list')" in shown.stderr
    stats, _ = drift_on(stack, "stats", "--agent", "nosuch")
    assert stats.returncode == 0, stats.stderr
    assert "unknown agent 'nosuch'" in stats.stderr and "drift agents list" in stats.stderr


async def _topics(broker: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=broker)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


def _web(ready_line: str) -> str:
    return next(part for part in ready_line.split() if part.startswith("web=")).removeprefix("web=")


def test_two_workers_on_one_host_with_a_new_prefix(scenario: Scenario) -> None:
    """The README's scale-out line: the prefix's topics are created, the second worker gets its own web port."""
    port = str(free_port())
    first = scenario.worker(judge="offline", env={"DRIFT_WEB_PORT": port}).start()
    second = scenario.worker(judge="offline", env={"DRIFT_WEB_PORT": port}).start()
    assert set(all_topics(scenario.settings)) <= asyncio.run(_topics(scenario.stack.broker.bootstrap))
    assert f"prefix={scenario.prefix}" in first.ready_line
    webs = {_web(first.ready_line), _web(second.ready_line)}
    assert len(webs) == 2 and f"http://127.0.0.1:{port}" in webs
    for web in webs:
        snapshot: dict[str, Any] = httpx.get(f"{web}/stats", timeout=5).json()
        assert snapshot["judge"] == "offline-heuristic (no LLM)"
    stats, _ = drift_on(scenario.stack, "stats", "--url", _web(second.ready_line))
    assert stats.returncode == 0, stats.stderr
    assert "judge cost" in stats.stdout and "$0.0000" in stats.stdout


def test_sinks_say_ready_once_they_consume(scenario: Scenario) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_")}
    env |= {"DRIFT_DATABASE_URL": scenario.stack.database.url, "DRIFT_BROKER": scenario.stack.broker.bootstrap}
    process = subprocess.Popen([DRIFT, "sinks", "--prefix", scenario.prefix], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("ready sinks") and f"prefix={scenario.prefix}" in line
        assert set(all_topics(scenario.settings)) <= asyncio.run(_topics(scenario.stack.broker.bootstrap))
    finally:
        process.terminate()
        process.wait(timeout=30)
