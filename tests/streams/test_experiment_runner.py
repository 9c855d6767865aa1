"""The experiment runner against the in-process service stand-in and an in-memory store: the dollar cap,
failed sessions (not stored, redone on resume) and metering."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from engine.actors.scripted import ScriptedActor, ScriptedListModel, ScriptedRules
from engine.errors import JudgeError
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
from streams.experiments import ExperimentRun, MeteredActor, MeteredModel, MeteredService, Progress
from streams.simulate import Simulation
from streams.store_experiments import SessionRecord
from tests.streams.test_simulate import FakeService

SCENARIO = "debate-controversial"


class MemoryStore:
    """The part of :class:`streams.store_experiments.ExperimentStore` the runner uses."""

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
