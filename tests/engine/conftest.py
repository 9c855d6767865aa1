"""Factories shared by the engine tests of scoring (propositions, sets, targets) and of the gate (checks, configs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import settings

from engine.gate import AttemptResult, DimensionCheck, SimilarityCheck
from engine.judges.scripted import ScriptedJudge
from engine.models import AgentConfig, Dimension, Event, Persona
from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, Proposition, PropositionSet
from engine.scoring import ScoringTarget, score_dimension

relaxed = settings(deadline=None, max_examples=60)

PropFactory = Callable[..., Proposition]
SetFactory = Callable[..., PropositionSet]
TargetFactory = Callable[..., ScoringTarget]
CheckFactory = Callable[..., DimensionCheck]
ResultFactory = Callable[..., AttemptResult]
ConfigFactory = Callable[..., AgentConfig]


# --- scoring --------------------------------------------------------------------------------------------


@pytest.fixture
def make_prop() -> PropFactory:
    """make_prop(id, claim=..., **fields): one proposition."""

    def make(prop_id: str = "p1", claim: str = "{{agent_name}} stays in character", **fields: Any) -> Proposition:
        return Proposition(id=prop_id, claim=claim, **fields)

    return make


@pytest.fixture
def make_set(make_prop: PropFactory) -> SetFactory:
    """make_set(*propositions, dimension=..., **settings); with no propositions, three plain ones."""

    def make(*props: Proposition, dimension: Dimension = Dimension.ADHERENCE, **fields: Any) -> PropositionSet:
        chosen = props or tuple(make_prop(f"p{i}") for i in range(1, 4))
        return PropositionSet(dimension=dimension, agent_id="michael", propositions=chosen, **fields)

    return make


@pytest.fixture
def make_target() -> TargetFactory:
    """make_target(**fields): Michael with a persona, one prior action and a judged draft."""

    def make(**fields: Any) -> ScoringTarget:
        values: dict[str, Any] = {
            "target_name": "Michael Scott",
            "agent_id": "michael",
            "persona": Persona(id="michael", name="Michael Scott", personality="Needy and loud."),
            "events": (Event("michael", "Michael Scott", "Good morning, family!"),),
            "action": "Who wants a party?",
        }
        values.update(fields)
        return ScoringTarget(**values)

    return make


def judge_with(rules: Sequence[Mapping[str, Any]] = (), **top: Any) -> ScriptedJudge:
    return ScriptedJudge.from_rules({"default": 9, **top, "rules": list(rules)})


async def score(judge: ScriptedJudge, pset: PropositionSet, target: ScoringTarget, **kwargs: Any) -> Any:
    return await score_dimension(judge, pset, target, window_defaults=ACTION_LEVEL_WINDOW_DEFAULTS, **kwargs)


# --- gate -----------------------------------------------------------------------------------------------


def build_check(
    dimension: Dimension = Dimension.ADHERENCE, score: float = 8.0, threshold: float = 7.0, **fields: Any
) -> DimensionCheck:
    """One dimension check; ``passed`` follows score >= threshold unless given."""
    fields.setdefault("passed", score >= threshold)
    return DimensionCheck(dimension=dimension, score=score, threshold=threshold, **fields)


def build_result(attempt: int = 1, *checks: DimensionCheck, similarity: SimilarityCheck | None = None) -> AttemptResult:
    """One attempt's result; the text is ``draft <attempt>``."""
    return AttemptResult(attempt=attempt, text=f"draft {attempt}", checks=checks, similarity=similarity)


@pytest.fixture
def make_check() -> CheckFactory:
    """make_check(dimension, score, threshold=7, **fields); ``passed`` follows score >= threshold."""
    return build_check


@pytest.fixture
def make_result() -> ResultFactory:
    """make_result(attempt, *checks, similarity=None); the text is ``draft <attempt>``."""
    return build_result


@pytest.fixture
def make_config() -> ConfigFactory:
    """make_config(**fields): adherence and fluency on, everything else at its default."""

    def make(**fields: Any) -> AgentConfig:
        return AgentConfig(**{"gate_adherence_enabled": True, "gate_fluency_enabled": True, **fields})

    return make
