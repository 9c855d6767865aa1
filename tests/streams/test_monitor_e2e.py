"""End-to-end: the drift monitor beside the gate on the embedded stack (issue 27's acceptance).

* an agent whose drafts drift from its persona into the generic-assistant voice gets an ``agent`` alert (an
  anchor set is configured and stays put), at the same observation as the detector computes offline on the
  same scores, though its worker is SIGKILLed and restarted mid-stream;
* 2,000 drift-free drafts of a 20-agent cast raise no alert; then the scripted judge's scores all drop (a
  marker in the drafts switches its rules) and every alert of the cast ends as the ``judge``'s.

Each test has a database of its own: attribution counts a dimension's alerts and monitored agents.
"""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

from engine.monitor.stream import StreamPolicy, StreamState, observe
from engine.settings import Settings
from streams.client import GateClient
from streams.client.admin import publish_config
from streams.store import Store
from tests.stack import DRIFT, Scenario, eventually, read_topic_until

pytestmark = pytest.mark.e2e

# Every adherence claim of the default set answers so that the dimension's score is the tone's number:
# positive claims ("adherence-[mv]*") the tone itself, inverted ones ("adherence-[gb]*") nine minus it.
TONES = {"assistant voice": 2, "tone6": 6, "tone7": 7, "tone8": 8, "tone9": 9}


def rules(shift: int = 0) -> str:
    lines = ["default: 9", "rules:"]
    for marker, value in TONES.items():
        for pattern, answer in (("adherence-[mv]*", value), ("adherence-[gb]*", 9 - value)):
            if shift and value - shift >= 0:
                lines += [f'  - proposition: "{pattern}"', '    message_contains: "shifted ' + marker + '"',
                          f"    value: {answer - shift if pattern.endswith('[mv]*') else answer + shift}"]  # fmt: skip
            lines += [f'  - proposition: "{pattern}"', f'    message_contains: "{marker}"', f"    value: {answer}"]
    return "\n".join(lines) + "\n"


async def configure(settings: Settings, scenario: Scenario, agents: list[str]) -> None:
    changes = {"gate_adherence_enabled": True, "gate_adherence_threshold": 0.0}  # scored, never sent back
    async with await Store.connect(settings.database()) as store:
        for agent in agents:
            config = await store.set_config(agent, changes)
            await publish_config(settings, agent, config.model_dump())
    await asyncio.gather(*(scenario.until_configured(agent, **changes) for agent in agents))


async def alerts(settings: Settings) -> list[dict[str, Any]]:
    async with await Store.connect(settings.database()) as store:
        return await store.alerts(limit=1000)


def expected_alert(scores: list[float], reference_n: int) -> int:
    """The observation (1-based) at which the detector alerts on ``scores``, computed offline."""
    policy, state = StreamPolicy(reference_n=reference_n), StreamState()
    for i, score in enumerate(scores, start=1):
        seen = observe(policy, state, score)
        if seen.fired:
            return i
        state = seen.state
    raise AssertionError("the planted drift is never detected offline")


async def own_settings(scenario: Scenario) -> Settings:
    url = await scenario.stack.own_database("monitor")
    return scenario.settings.with_(database_url=url)


async def test_an_agent_drift_is_the_agents_at_the_same_observation_across_a_worker_kill(
    scenario: Scenario, tmp_path: Path
) -> None:
    settings = await own_settings(scenario)
    drifter = scenario.agent("michael")
    labels = tmp_path / "anchors.jsonl"
    labels.write_text(json.dumps({"agent_id": drifter, "dimension": "adherence", "text": "tone8", "label": 8}) + "\n")
    env = {"DRIFT_DATABASE_URL": settings.database_url, "DRIFT_MONITOR_REFERENCE_N": "10",
           "DRIFT_MONITOR_ANCHORS": str(labels), "DRIFT_MONITOR_ANCHOR_INTERVAL_S": "0.2"}  # fmt: skip
    await scenario.create_topics()
    judge = scenario.rules(rules())
    first = scenario.worker(judge=judge, env=env).start()
    await configure(settings, scenario, [drifter])
    scores: list[float] = []
    async with GateClient(settings=settings, timeout_s=30) as gate:
        for i in range(16):
            await gate.check(agent_id=drifter, text=f"Michael, in persona, tone8, line {i}")
            scores.append(8.0)
        first.kill()  # mid-stream: the monitor's state and offsets are wherever its last transaction left them
        scenario.worker(judge=judge, env=env).start()
        for i in range(40):
            verdict = await gate.check(agent_id=drifter, text=f"As an assistant voice, I am happy to help ({i}).")
            assert verdict.scores["adherence"].score == 2.0
            scores.append(2.0)
            if await alerts(settings):
                break
    found = await eventually(lambda: alerts(settings), 20)
    assert [(a["agent_id"], a["source"], a["cause"], a["direction"]) for a in found] == [
        (drifter, "gate", "agent", "drop")
    ]
    assert found[0]["observation"] == expected_alert(scores, 10)
    on_topic = await read_topic_until(settings, settings.topic("alerts"), bool)
    assert on_topic[0]["alert_id"] == found[0]["id"] and on_topic[0]["cause"] == "agent"
    await _view_marks_the_alert(settings, drifter, found[0])
    _cli_lists_and_acknowledges(settings, found[0]["id"])


async def _view_marks_the_alert(settings: Settings, agent: str, alert: dict[str, Any]) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from streams.view.live import LiveVerdicts
    from streams.view.queries import ViewQueries
    from streams.view.server import build_app

    async with await Store.connect(settings.database()) as store:

        async def stored() -> bool:  # the correction-log sink has written every first attempt
            sql = "SELECT count(*) FROM correction_logs WHERE agent_id = $1 AND attempt_number = 1"
            return int(await store.pool.fetchval(sql, agent)) >= int(alert["observation"])

        assert await eventually(stored, 30)
        client = TestClient(TestServer(build_app(settings, ViewQueries(store), LiveVerdicts(settings))))
        await client.start_server()
        try:
            listed = await (await client.get("/api/alerts", params={"open": "1"})).json()
            chart = await (await client.get(f"/api/agents/{agent}/monitor")).json()
        finally:
            await client.close()
    assert [a["id"] for a in listed["alerts"]] == [alert["id"]]
    adherence = chart["dimensions"]["adherence"]
    assert adherence["reference"] == 8.0 and adherence["alerted_at"] == [alert["observation"] - 1]


def _cli_lists_and_acknowledges(settings: Settings, alert: str) -> None:
    def drift(*args: str) -> subprocess.CompletedProcess[str]:
        command = [DRIFT, *args, "--database", settings.database_url]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)

    listed = drift("alerts", "list", "--open", "--json")
    assert listed.returncode == 0 and [a["id"] for a in json.loads(listed.stdout)] == [alert]
    acked = drift("alerts", "ack", alert)
    assert acked.returncode == 0 and "acknowledged" in acked.stdout
    assert json.loads(drift("alerts", "list", "--open", "--json").stdout) == []
    unknown = drift("alerts", "ack", "no-such-alert")
    assert unknown.returncode == 2 and unknown.stderr.strip().startswith("drift: no alert 'no-such-alert'")
    assert len(unknown.stderr.strip().splitlines()) == 1


async def test_a_steady_cast_raises_nothing_and_a_judge_shift_is_the_judges(scenario: Scenario) -> None:
    settings = await own_settings(scenario)
    cast = [scenario.agent(f"a{i}") for i in range(20)]
    env = {"DRIFT_DATABASE_URL": settings.database_url, "DRIFT_MONITOR_REFERENCE_N": "20"}
    await scenario.create_topics()
    scenario.worker(judge=scenario.rules(rules(shift=3)), env=env).start()
    await configure(settings, scenario, cast)
    rng = random.Random(27)
    async with GateClient(settings=settings, timeout_s=60) as gate:
        limit = asyncio.Semaphore(64)

        async def draft(agent: str, text: str) -> None:
            async with limit:
                await gate.check(agent_id=agent, text=text)

        tones = rng.choices(["tone7", "tone8", "tone9"], weights=[3, 5, 2], k=2000)
        await asyncio.gather(*(draft(cast[i % 20], f"{tone} #{i}") for i, tone in enumerate(tones)))
        await _monitor_caught_up(settings, 2000)
        assert await alerts(settings) == []  # 2,000 drift-free drafts: no alert
        shifted = rng.choices(["tone7", "tone8", "tone9"], weights=[3, 5, 2], k=20 * 30)
        await asyncio.gather(*(draft(cast[i % 20], f"shifted {tone} #{i}") for i, tone in enumerate(shifted)))
    found = await eventually(lambda: _all_alerted(settings, len(cast)), 30)
    assert found, "not every agent of the shifted cast alerted"
    assert {a["cause"] for a in found} == {"judge"} and {a["direction"] for a in found} == {"drop"}


async def _monitor_caught_up(settings: Settings, drafts: int) -> None:
    async def seen() -> bool:
        async with await Store.connect(settings.database()) as store:
            return int(await store.pool.fetchval("SELECT count(*) FROM monitor_seen")) >= drafts

    assert await eventually(seen, 60), "the monitor did not observe every draft"


async def _all_alerted(settings: Settings, agents: int) -> list[dict[str, Any]]:
    found = await alerts(settings)
    return found if len({a["agent_id"] for a in found}) == agents else []
