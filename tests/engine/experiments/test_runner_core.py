"""The pure parts of the experiment runner: scale, cost bounds, the budget cap and per-session scoring."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.experiments.budget import Budget, estimate_session, scale_plans
from engine.experiments.metrics import SessionInput, metric_sets, score_session
from engine.judges.base import JudgeMode
from engine.judges.scripted import ScriptedJudge
from engine.models import Event, EventKind
from engine.personas import load_population
from engine.pricing import PriceTable
from engine.scoring import JudgeStrategy
from engine.simulation.plan import plan_sessions
from engine.simulation.population import BUNDLED_TINY
from engine.simulation.scenario import load_scenario

PROPOSITIONS = Path(__file__).resolve().parents[3] / "propositions"


def test_scale_keeps_a_proportional_prefix_with_at_least_two_sessions() -> None:
    scenario = load_scenario("brainstorming-average")
    plans = plan_sessions(scenario, list(load_population(BUNDLED_TINY, ())))
    assert len(plans) == 40
    assert [p.key for p in scale_plans(plans, 0.1)] == [p.key for p in plans[:4]]
    assert len(scale_plans(plans, 0.01)) == 2 and len(scale_plans(plans, 1.0)) == 40
    with pytest.raises(ValueError, match="scale"):
        scale_plans(plans, 0)


def test_estimates_bound_the_gated_arm_above_the_control_arm() -> None:
    scenario = load_scenario("brainstorming-average")
    sets = metric_sets(scenario, PROPOSITIONS)
    treatment, control = (estimate_session(scenario, arm, sets) for arm in ("treatment", "control"))
    turns = 5 * 11 + 1
    assert control.actor_calls == turns + 1  # one try per turn, plus the extraction
    assert treatment.actor_calls == turns * 6 + 1  # up to 5 regenerations at the gate
    batch = estimate_session(scenario, "control", sets, strategy=JudgeStrategy.BATCH)
    assert batch.judge_calls < control.judge_calls
    prices = PriceTable()
    assert treatment.cost(prices, "scripted:actor", "scripted:rules") == 0.0
    paid = treatment.cost(prices, "anthropic:claude-haiku-4-5", "anthropic:claude-haiku-4-5")
    assert paid is not None and paid > 0
    assert control.cost(prices, "anthropic:some-unpriced-model", "offline") is None


def test_budget_admits_while_spent_plus_reserved_stays_under_the_cap() -> None:
    budget = Budget(max_tokens=100)
    assert budget.admits(None, 60)
    budget.reserve("a", None, 60)
    assert not budget.admits(None, 60)  # 60 running + 60 next > 100
    budget.settle("a", None, 10)
    assert budget.admits(None, 60) and budget.spent_tokens == 10
    dollars = Budget(max_usd=1.0)
    assert not dollars.admits(None, 1)  # an unknown cost can never be admitted under a dollar cap
    assert dollars.admits(0.5, 1)


def _session(arm: str) -> SessionInput:
    scenario = load_scenario("debate-controversial")
    personas = load_population(BUNDLED_TINY, scenario.population.fragments)
    chosen = sorted(personas)[:2]
    run_id = f"x.{arm}.g1-p-r1"
    agents = {f"{run_id}.{p}": (p, personas[p]) for p in chosen}
    events = [Event(f"{run_id}.facilitator", "Facilitator", "Debate this.", EventKind.STIMULUS, "room")]
    for n in range(2):
        for agent_id, (_, persona) in agents.items():
            events.append(Event(agent_id, persona.name, f"My view number {n}.", EventKind.ACTION, "room"))
    return SessionInput(run_id, "g1", "room", tuple(events), agents, extracted=3)


async def test_session_scores_follow_the_scenario_settings() -> None:
    scenario = load_scenario("debate-controversial")
    sets = metric_sets(scenario, PROPOSITIONS)
    assert sets.adherence_metric == "hard_persona_adherence" and scenario.evaluation.double_check
    assert sets.metric_names() == ["hard_persona_adherence", "self_consistency", "fluency", "divergence",
                                   "opinions_qty"]  # fmt: skip
    judge = ScriptedJudge.from_rules({"default": 5, "rules": [{"agent": "x.control.*", "value": 9}]})
    treated, control = (
        await score_session(judge, sets, _session("treatment")),
        await score_session(judge, sets, _session("control")),
    )
    value = {(v.metric, v.cluster): v.value for v in treated.values}
    assert value[("opinions_qty", "g1")] == 3.0 and len(treated.evaluations) == 3  # two agents + the environment
    adherence = [v.value for v in treated.values if v.metric == "hard_persona_adherence"]
    assert adherence and all(v < 9 * 0.8 for v in adherence)  # hard: every flaw costs 20 %
    for metric in ("hard_persona_adherence", "self_consistency", "fluency"):  # the judge answered by arm
        assert {v.value for v in control.values if v.metric == metric} != {
            v.value for v in treated.values if v.metric == metric
        }
    requests = judge.log.calls
    assert requests and all(r.double_check for r in requests if r.mode is JudgeMode.SCORE)
    assert all(len(r.claims) == 1 for r in requests)  # individual strategy by default
