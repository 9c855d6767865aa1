"""A first user's commands against the embedded stack, through the real entry point (issue 18)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
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

pytestmark = pytest.mark.e2e
FAIL_FAST_S = 10.0


def drift(
    stack: Stack, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_") and k != "ANTHROPIC_API_KEY"}
    base |= {"DRIFT_DATABASE_URL": stack.database.url, "DRIFT_BROKER": stack.broker.bootstrap, **(env or {})}
    started = time.monotonic()
    done = subprocess.run([DRIFT, *args], env=base, capture_output=True, text=True, timeout=120, check=False)
    return done, time.monotonic() - started


def unreachable_broker() -> dict[str, str]:
    return {"DRIFT_BROKER": f"127.0.0.1:{free_port()}", "DRIFT_CONNECT_TIMEOUT_S": "2"}


@pytest.mark.timed
@pytest.mark.parametrize("command", ["worker", "sinks"])
def test_an_unreachable_broker_is_one_line_after_a_short_wait(stack: Stack, command: str) -> None:
    done, elapsed = drift(stack, command, "--prefix", f"t{uuid.uuid4().hex[:8]}.", env=unreachable_broker())
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cannot reach the Kafka broker" in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "ready" not in done.stdout  # never 'ready' before it is
    assert elapsed < FAIL_FAST_S


@pytest.mark.timed
def test_config_set_says_when_the_change_was_not_announced(stack: Stack) -> None:
    agent = f"creed-{uuid.uuid4().hex[:6]}"
    done, elapsed = drift(stack, "config", "set", agent, "max_action_similarity=0.6", env=unreachable_broker())
    assert done.returncode == 3, done.stderr[-2000:]
    assert f"{agent}: max_action_similarity = 0.6" in done.stdout  # stored, shown as entered
    assert len(done.stderr.splitlines()) == 1, done.stderr
    (line,) = done.stderr.splitlines()
    assert "not announced" in line and f"drift config set {agent} max_action_similarity=0.6" in line
    assert elapsed < FAIL_FAST_S
    shown, _ = drift(stack, "config", "show", agent, "--json")
    assert json.loads(shown.stdout)["config"]["max_action_similarity"] == 0.6  # not 0.6000000238418579


def test_thresholds_are_stored_as_entered(stack: Stack) -> None:
    agent = f"toby-{uuid.uuid4().hex[:6]}"
    done, _ = drift(stack, "config", "set", agent, "gate_adherence_threshold=6.3", "repetition_threshold=0.35")
    assert done.returncode == 0, done.stderr
    shown, _ = drift(stack, "config", "show", agent)
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
    shown, _ = drift(stack, "config", "show", "nosuch")
    assert shown.returncode == 0 and "gate_enabled" in shown.stdout
    assert "unknown agent 'nosuch', defaults shown (see 'drift agents list')" in shown.stderr
    stats, _ = drift(stack, "stats", "--agent", "nosuch")
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
    stats, _ = drift(scenario.stack, "stats", "--url", _web(second.ready_line))
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
