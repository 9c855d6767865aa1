"""The experiment runner against the in-process service stand-in and an in-memory store: the dollar cap,
failed sessions (not stored, redone on resume) and metering."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

from engine.actors.scripted import ScriptedActor, ScriptedListModel, ScriptedRules
from engine.errors import JudgeError, ReplyTimeout
from engine.experiments.budget import Budget, estimate_session, scale_plans
from engine.experiments.metrics import SessionScores, metric_sets
from engine.judges.base import JudgeRequest, JudgeResult
from engine.judges.scripted import ScriptedJudge
from engine.models import TokenUsage
from engine.personas import load_population
from engine.pricing import PriceTable
from engine.settings import Settings
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario
from streams.client.experiments import ExperimentRun, MeteredActor, MeteredModel, MeteredService, Progress
from streams.client.simulate import Simulation
from streams.store.experiments import SessionRecord
from tests.streams.test_simulate import FakeService

SCENARIO = "debate-controversial"


class MemoryStore:
    """The part of :class:`streams.store.experiments.ExperimentStore` the runner uses."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], tuple[SessionRecord, SessionScores | None]] = {}
        self.status = "running"

    async def finished(self, _experiment_id: str) -> set[tuple[str, str]]:
        return set(self.sessions)

    async def save_session(self, _experiment_id: str, record: SessionRecord, scores: SessionScores | None) -> bool:
        key = (record.arm, record.key)
        if key in self.sessions:
            return False
        self.sessions[key] = (record, scores)
        return True

    async def finish(self, _experiment_id: str, status: str) -> None:
        self.status = status


class PricedJudge:
    """A scripted judge that reports the usage a paid model would; fails on the arms in ``failing``."""

    def __init__(self, failing: set[str] | None = None) -> None:
        self.inner = ScriptedJudge.from_rules({"default": 6})
        self.failing = failing or set()

    @property
    def name(self) -> str:
        return "anthropic:claude-haiku-4-5"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        if any(f".{arm}." in (request.agent_id or request.target_name) for arm in self.failing):
            raise JudgeError("the judge is down")
        result = await self.inner.evaluate(request)
        return replace(result, usage=TokenUsage(1000, 100))


def _runner(store: MemoryStore, judge: Any, budget: Budget, attempt: int = 1) -> tuple[ExperimentRun, list[Any]]:
    scenario = load_scenario(SCENARIO)
    personas = load_population(BUNDLED_TINY, scenario.population.fragments)
    plans = scale_plans(plan_sessions(scenario, list(personas)), 0.1)
    sets = metric_sets(scenario, Settings().propositions_dir)
    estimates = {arm: estimate_session(scenario, arm, sets) for arm in ("treatment", "control")}
    actor, extractor = MeteredActor(ScriptedActor(ScriptedRules())), MeteredModel(ScriptedListModel())
    sim = Simulation(scenario, personas, actor, extractor, MeteredService(FakeService()), f"x.a{attempt}")
    store_any: Any = store
    return ExperimentRun("x", sim, judge, sets, store_any, estimates, budget, PriceTable(), concurrency=2), plans


async def test_a_dollar_cap_stops_launching_and_leaves_a_partial_experiment() -> None:
    store = MemoryStore()
    probe, plans = _runner(store, PricedJudge(), Budget())
    per_session = probe.estimate_cost("treatment")
    assert per_session is not None and per_session > 0
    # the first (treatment) session fits; the control session would pass the cap while it still runs
    runner, _ = _runner(store, PricedJudge(), Budget(max_usd=per_session * 1.2))
    progress = Progress(total=2 * len(plans))
    assert await runner.run(plans, progress) == "partial"
    assert progress.stopped_by_budget and list(store.sessions) == [("treatment", plans[0].key)]
    assert store.status == "partial"
    records = [record for record, _ in store.sessions.values()]
    assert all(r.cost_usd is not None and r.cost_usd > 0 and r.llm_calls > 0 for r in records)  # metered, priced
    assert progress.cost_usd == sum(r.cost_usd or 0 for r in records)


async def test_failed_sessions_are_not_stored_and_a_resume_redoes_only_them() -> None:
    store = MemoryStore()
    runner, plans = _runner(store, PricedJudge(failing={"control"}), Budget())
    progress = Progress(total=2 * len(plans))
    assert await runner.run(plans, progress) == "partial"
    assert progress.failed == len(plans) and {arm for arm, _ in store.sessions} == {"treatment"}
    stored_before = dict(store.sessions)
    resumed, _ = _runner(store, PricedJudge(), Budget(), attempt=2)
    progress = Progress(total=2 * len(plans))
    assert await resumed.run(plans, progress) == "completed"
    assert progress.skipped == len(plans) and progress.failed == 0
    assert len(store.sessions) == 2 * len(plans)
    assert all(store.sessions[key] is value for key, value in stored_before.items())  # finished ones untouched
    assert all(record.run_id.startswith("x.a2.control.") for (arm, _), (record, _) in store.sessions.items()
               if arm == "control")  # fmt: skip


class RecordingService(FakeService):
    """The service stand-in, recording the order of configurations and steps, and the runs as they start."""

    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.runs: list[str] = []
        self.new_run = asyncio.Event()

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None:
        self.order.append(f"config {agent_id}")
        await super().publish_config(agent_id, config)

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None) -> Any:
        self.order.append(f"step {run_id}")
        if run_id not in self.runs:
            self.runs.append(run_id)
            self.new_run.set()
        return await super().step(run_id=run_id, step=step, agent_ids=agent_ids, channel=channel)


class OverlapStore(MemoryStore):
    """Writing a session completes only once the next session has started (a store that waited for its slot
    would never see it: the write times out)."""

    def __init__(self, service: RecordingService, total: int) -> None:
        super().__init__()
        self.service, self.total = service, total

    async def save_session(self, experiment_id: str, record: SessionRecord, scores: SessionScores | None) -> bool:
        saving = len(self.sessions) + 1
        async with asyncio.timeout(5):
            while saving < self.total and len(self.service.runs) <= saving:
                self.service.new_run.clear()
                await self.service.new_run.wait()
        return await super().save_session(experiment_id, record, scores)


async def test_sessions_are_configured_up_front_and_the_next_one_starts_while_one_is_stored() -> None:
    service = RecordingService()
    runner, plans = _runner(MemoryStore(), PricedJudge(), Budget())
    runner.store = OverlapStore(service, 2 * len(plans))  # type: ignore[assignment]
    runner.sim.service = MeteredService(service)
    runner.concurrency = 1
    assert await runner.run(plans, Progress(total=2 * len(plans))) == "completed"
    first_step = next(i for i, e in enumerate(service.order) if e.startswith("step"))
    configured = {e for e in service.order[:first_step] if e.startswith("config")}
    assert len(configured) == sum(len(p.agent_ids) for p in plans) * 2  # every session's agents, before any step
    assert not any(e.startswith("config") for e in service.order[first_step:])
    assert len(service.runs) == 2 * len(plans)


async def test_the_fluency_evidence_is_ready_before_the_session_is_scored() -> None:
    from engine.evaluation import scorers

    store = MemoryStore()
    runner, plans = _runner(store, PricedJudge(), Budget())
    await runner.sim.configure(plans[0], "treatment")
    scorers._fluency_evidence.cache_clear()
    await runner._one(plans[0], "treatment", Progress(total=1))
    info = scorers._fluency_evidence.cache_info()
    agents = len(plans[0].agent_ids)
    # prepared while the rapporteur spoke (one computation per agent), then found at scoring for every agent but
    # the rapporteur, whose own messages gained the consolidation
    assert (info.misses, info.hits) == (agents + 1, agents - 1)
    assert len(store.sessions) == 1


class FlakyConfigService(RecordingService):
    """The first configuration of each agent fails (the broker away for a moment)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused: set[str] = set()

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None:
        if agent_id not in self.refused:
            self.refused.add(agent_id)
            raise ReplyTimeout(f"no ack for {agent_id}")
        await super().publish_config(agent_id, config)


async def test_a_session_whose_configuration_failed_up_front_configures_when_it_starts() -> None:
    service = FlakyConfigService()
    store = MemoryStore()
    runner, plans = _runner(store, PricedJudge(), Budget())
    runner.sim.service = MeteredService(service)
    assert await runner.run(plans, Progress(total=2 * len(plans))) == "completed"
    assert len(store.sessions) == 2 * len(plans)
    assert len(service.configs) == sum(len(p.agent_ids) for p in plans) * 2  # every agent configured, late
