"""The session runner against an in-process stand-in for the service (the e2e test uses the real one)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from engine.actors.scripted import DRIFT_MARKER, ScriptedActor, ScriptedListModel, ScriptedRules
from engine.errors import ConfigurationError
from engine.evaluation.messages import read_messages
from engine.models import AgentConfig
from engine.personas import load_population
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from streams.client.simulate import SessionResult, Simulation
from streams.client.transcripts import export_jsonl
from streams.wire.payloads import DirectiveOut, Directives, Message, Verdict


class FakeService:
    """Retries drafts that drift (up to the agent's max attempts), nudges agents with enough actions."""

    def __init__(self) -> None:
        self.configs: dict[str, AgentConfig] = {}
        self.steps: list[tuple[str, int, list[str]]] = []
        self.drafts: list[dict[str, Any]] = []
        self.messages: list[Message] = []
        self.actions: Counter[str] = Counter()

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None:
        self.configs[agent_id] = AgentConfig.model_validate(config)

    async def publish_message(self, message: Message) -> None:
        self.messages.append(message)

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None) -> Directives:
        self.steps.append((run_id, step, agent_ids))
        nudged = [a for a in agent_ids if self.configs[a].variety_intervention_enabled
                  and self.actions[a] >= self.configs[a].variety_message_threshold]  # fmt: skip
        nudge = "Propose something entirely new."
        directives = [DirectiveOut(agent_id=a, kind="variety", text=nudge) for a in nudged]
        return Directives(run_id=run_id, step=step, directives=directives)

    async def check(self, *, agent_id: str, text: str, **fields: Any) -> Verdict:
        self.drafts.append({"agent_id": agent_id, "text": text, **fields})
        config, attempt = self.configs[agent_id], fields["attempt"]
        if fields.get("skip"):
            return Verdict(draft_id=fields["draft_id"], attempt=attempt, agent_id=agent_id, decision="skip",
                           outcome="skipped", text="")  # fmt: skip
        drifted = config.needs_judge and DRIFT_MARKER in text
        if drifted and attempt <= config.max_correction_attempts:
            return Verdict(draft_id=fields["draft_id"], attempt=attempt, agent_id=agent_id, decision="retry",
                           outcome="passed", text=text, feedback="Stay in character.")  # fmt: skip
        self.actions[agent_id] += 1
        outcome = "forced_through" if drifted else ("passed_after_retry" if attempt > 1 else "passed")
        return Verdict(draft_id=fields["draft_id"], attempt=attempt, agent_id=agent_id, decision="commit",
                       outcome=outcome, text=text, latency_ms=5.0)  # fmt: skip


def _simulation(service: FakeService, rules: ScriptedRules) -> Simulation:
    scenario = load_scenario("brainstorming-difficult-full")
    personas = load_population(BUNDLED_TINY, scenario.population.fragments)
    return Simulation(scenario, personas, ScriptedActor(rules), ScriptedListModel(), service, "t")


async def test_a_treatment_session_retries_drift_nudges_and_extracts(tmp_path: Path) -> None:
    service = FakeService()
    sim = _simulation(service, ScriptedRules(drift_after=3))
    (plan,) = plan_sessions(sim.scenario, list(sim.personas), limit=1)
    result = await sim.run_session(plan, "treatment")
    assert result.error is None and result.steps == 1 + 10 + 1
    assert [s[1] for s in service.steps] == list(range(12)) and {s[0] for s in service.steps} == {result.run_id}
    assert all(len(s[2]) == 4 for s in service.steps[:-1]) and service.steps[-1][2] == [
        f"{result.run_id}.{plan.rapporteur}"
    ]
    agents = result.agents.values()
    assert sum(a.retries for a in agents) > 0 and all(a.outcomes["forced_through"] == 0 for a in agents)
    assert result.directives["variety"] > 0 and all(a.nudges["variety"] > 0 for a in agents)
    actions = [e for e in result.events if e.kind.value == "action"]
    assert len(actions) == sum(a.actions for a in agents) == 4 * 11 + 1
    assert not any(DRIFT_MARKER in e.text for e in actions)
    assert result.extracted is not None and len(result.extracted) == len({e.text.split("'")[1] for e in actions[:-1]})
    assert [m.kind for m in service.messages] == [
        "stimulus"
    ] * 3  # intro, mission, rapporteur: the gate commits actions
    exported = read_messages(export_jsonl(result, tmp_path / "s.jsonl"))
    assert not exported.issues and len(exported.events) == len(result.events)


async def test_control_passes_drift_through_and_silence_is_a_skip_draft() -> None:
    service = FakeService()
    sim = _simulation(service, ScriptedRules(drift_after=3, silence_every=4))
    (plan,) = plan_sessions(sim.scenario, list(sim.personas), limit=1)
    result = await sim.run_session(plan, "control")
    agents = result.agents.values()
    assert sum(a.retries for a in agents) == 0 and result.directives["variety"] == 0
    silences = sum(a.silences for a in agents)
    assert silences > 0
    skips = [d for d in service.drafts if d.get("skip")]
    assert len(skips) == silences and all(d["text"] == "" for d in skips)  # the gate is told, nothing committed
    assert len(service.drafts) - silences == sum(a.drafts for a in agents) == sum(a.actions for a in agents)
    assert any(DRIFT_MARKER in e.text for e in result.events)


async def test_parallel_agents_see_the_step_start_and_sessions_are_isolated() -> None:
    service = FakeService()
    sim = _simulation(service, ScriptedRules())
    plans = plan_sessions(sim.scenario, list(sim.personas), limit=3)
    results = await sim.run_sessions(plans, "treatment", concurrency=3)
    assert len({r.run_id for r in results}) == 3 and all(r.error is None for r in results)
    for result in results:
        ids = {d["agent_id"] for d in service.drafts if d["run_id"] == result.run_id}
        assert ids == set(result.agents)  # agents are session-scoped
    assert len(service.steps) == 3 * 12


async def test_both_arms_on_identical_schedules_with_a_callback_per_session() -> None:
    service = FakeService()
    sim = _simulation(service, ScriptedRules(drift_after=3))
    done: list[tuple[str, str]] = []

    async def stored(result: SessionResult) -> None:
        done.append((result.arm, result.key))

    sim.on_session = stored
    plans = plan_sessions(sim.scenario, list(sim.personas), limit=2)
    by_arm = await sim.run_arms(plans, concurrency=4)
    assert [r.key for r in by_arm["treatment"]] == [r.key for r in by_arm["control"]] == [p.key for p in plans]
    assert sorted(done) == sorted((arm, p.key) for arm in ("treatment", "control") for p in plans)
    for treated, control in zip(by_arm["treatment"], by_arm["control"], strict=True):
        assert [a.persona_id for a in treated.agents.values()] == [a.persona_id for a in control.agents.values()]
        assert sum(a.retries for a in treated.agents.values()) > 0 == sum(a.retries for a in control.agents.values())
    assert all(service.configs[a].needs_judge for r in by_arm["treatment"] for a in r.agents)
    assert not any(service.configs[a].needs_judge for r in by_arm["control"] for a in r.agents)


async def test_run_ids_that_would_make_bad_agent_ids_are_refused() -> None:
    sim = _simulation(FakeService(), ScriptedRules())
    plans = plan_sessions(sim.scenario, list(sim.personas), limit=1)
    with pytest.raises(ConfigurationError, match="shorter --run-id"):
        await Simulation(sim.scenario, sim.personas, sim.actor, sim.extractor, sim.service, "r" * 120).run_sessions(
            plans, "control"
        )
    with pytest.raises(ConfigurationError, match="not a valid id"):
        Simulation(sim.scenario, sim.personas, sim.actor, sim.extractor, sim.service, "bad run id")
