"""End-to-end: brainstorming sessions through a real `drift worker` on the embedded stack, scripted actor."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from engine.actors.scripted import ScriptedActor, ScriptedListModel, ScriptedRules
from engine.models import Persona
from engine.personas import load_population
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from streams.client import GateClient
from streams.client.simulate import SessionResult, Simulation
from streams.client.transcripts import export_session
from streams.store import Store
from streams.wire.payloads import Directives
from tests.stack import REPO, Scenario, eventually, read_topic

pytestmark = pytest.mark.e2e

# Drifted drafts ("synergy") fail adherence; the variety check says the agents are circling.
RULES = """
default: 9
default_check: false
rules:
  - proposition: "variety:textual"
    value: true
  - proposition: "adherence-matches-persona*"  # the evaluation claim and the gate's action claim
    message_contains: "synergy"
    value: 0
  - proposition: "adherence-generic-assistant*"  # inverted claims: a high value means the flaw is there
    message_contains: "synergy"
    value: 9
  - proposition: "adherence-generic-assistant*"
    value: 0
  - proposition: "adherence-betrays-beliefs"
    value: 0
  - proposition: "adherence-breaks-the-fourth-wall"
    value: 0
"""


async def test_brainstorming_sessions_through_the_service(scenario: Scenario, tmp_path: Path) -> None:
    await scenario.create_topics()
    scenario.worker(judge=scenario.rules(RULES)).start()
    chosen = load_scenario("brainstorming-difficult-full")
    personas = load_population(BUNDLED_TINY, chosen.population.fragments)
    plans = plan_sessions(chosen, list(personas), limit=2)
    async with GateClient(settings=scenario.settings, timeout_s=30) as gate:
        sim = Simulation(chosen, personas, ScriptedActor(ScriptedRules(drift_after=3)), ScriptedListModel(), gate,
                         scenario.prefix.strip("."))  # fmt: skip
        results = await sim.run_sessions(plans, "treatment", concurrency=2)
    assert [r.error for r in results] == [None, None]
    # the gate retried drifted drafts and the retries passed; the variety intervention fired
    agents = [a for r in results for a in r.agents.values()]
    assert sum(a.retries for a in agents) > 0 and sum(a.outcomes["passed_after_retry"] for a in agents) > 0
    assert all(r.directives["variety"] > 0 for r in results) and all("scripted" in j for r in results for j in r.judges)
    await _check_topics_and_tables(scenario, results)
    await _check_export(scenario, results[0], personas, tmp_path)


async def _check_topics_and_tables(scenario: Scenario, results: list[SessionResult]) -> None:
    """One directives record per step; every transcript message in `messages` and in `run_messages`."""
    runs = {r.run_id for r in results}
    steps = sum(r.steps for r in results)
    assert steps == 2 * (1 + 10 + 1)
    found = await read_topic(scenario.settings, scenario.settings.topic("directives"), steps)
    records = [Directives.model_validate(d) for d in found]
    assert Counter((d.run_id, d.step) for d in records) == Counter({(r, s): 1 for r in runs for s in range(12)})
    expected = sum(len(r.events) for r in results)
    published = await read_topic(scenario.settings, scenario.settings.topic("messages"), expected)
    assert len([m for m in published if m.get("run_id") in runs]) == expected
    assert Counter(m["origin"] for m in published) == Counter({"gate": expected - 6, "external": 6})

    async def stored() -> bool:
        async with await Store.connect(scenario.settings.database()) as store:
            sql = "SELECT count(*) FROM run_messages WHERE run_id = ANY($1)"
            return int(await store.pool.fetchval(sql, list(runs))) == expected

    assert await eventually(stored, timeout_s=20)


async def _check_export(scenario: Scenario, result: SessionResult, personas: dict[str, Persona], tmp: Path) -> None:
    """The exported transcript is read back and scored by `drift eval run`, personas included."""
    path = export_session(result, personas, tmp / "export", scenario.settings.propositions_dir)
    report = tmp / "report.json"
    command = [sys.executable, "-m", "streams.cli", "eval", "run", "--messages", str(path),
               "--propositions", str(tmp / "export"), "--judge", scenario.rules(RULES),
               "--format", "json", "--output", str(report)]  # fmt: skip
    process = await asyncio.create_subprocess_exec(*command, cwd=REPO, stderr=asyncio.subprocess.PIPE)
    _, stderr = await process.communicate()
    assert process.returncode in {0, 1} and report.is_file(), stderr.decode()[-2000:]  # 1 flags regressions only
    scored = json.loads(report.read_text())
    assert set(result.agents) <= set(scored["agents"])
    assert all(scored["agents"][a]["adherence"]["score"] is not None for a in result.agents)  # personas found


def test_drift_simulate_embedded_with_the_tiny_population(tmp_path: Path) -> None:
    """The demo-sized run: scripted actor, offline judge, a private embedded stack (well under a minute)."""
    env = {"PATH": str(Path(sys.executable).parent), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "streams.cli", "simulate", "--scenario", "brainstorming-average", "--sessions", "2",
         "--embedded", "--judge", "offline", "--actor", "scripted", "--json"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["actor"] == "scripted:actor" and summary["sessions"] == 2 and summary["failed"] == 0
    assert summary["steps"] == 2 * 12 and summary["actions"] == 2 * (5 * 11 + 1)
    assert any("offline" in j for j in summary["judges"]) and all(n for n in summary["extracted"])
