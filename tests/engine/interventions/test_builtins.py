"""The built-in anti-convergence and variety interventions, enabled per agent by AgentConfig."""

from __future__ import annotations

import pytest

from engine.interventions import (
    DISTINCT_VOICES,
    anti_convergence,
    builtin_interventions,
    convergence_score_threshold,
    variety,
)
from engine.judges.base import JudgeMode
from engine.models import AgentConfig

from .conftest import MakeContext, MakeJudge

VARIETY_ON = AgentConfig(variety_intervention_enabled=True, variety_message_threshold=7)
CONVERGENCE_ON = AgentConfig(anti_convergence_enabled=True)


@pytest.mark.parametrize(("configured", "score_threshold"), [(0.6, 5.4), (1.0, 9.0), (0.0, 0.0), (5.0, 5.0)])
def test_convergence_threshold_is_a_fraction_of_nine_up_to_one(configured: float, score_threshold: float) -> None:
    assert convergence_score_threshold(configured) == pytest.approx(score_threshold)


async def test_variety_makes_no_call_below_the_message_threshold(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge()  # the textual check would say true

    outcome = await variety("michael", VARIETY_ON).evaluate(judge, make_context(messages={"michael": 6}))

    assert not outcome.fired and judge.log.count() == 0


@pytest.mark.parametrize(("check", "fired"), [(True, True), (False, False)])
async def test_variety_at_the_threshold_depends_on_the_textual_check(
    make_judge: MakeJudge, make_context: MakeContext, check: bool, fired: bool
) -> None:
    judge = make_judge({"proposition": "variety:textual", "value": check})

    outcome = await variety("michael", VARIETY_ON).evaluate(judge, make_context(messages={"michael": 7}))

    assert outcome.fired is fired
    assert judge.log.count(JudgeMode.CHECK) == 1
    request = judge.log.calls[0]
    assert request.claims[0].text == "Michael Scott has not proposed an entirely new idea in more than 10 events."
    assert {e.agent_id for e in request.trajectory} == {"michael"}
    if fired:
        assert outcome.directives[0].kind == "variety"
        assert "completely new" in (outcome.text or "") and (outcome.text or "").startswith("Michael Scott")


@pytest.mark.parametrize(("score", "fired"), [(5, True), (6, False)])
async def test_anti_convergence_fires_below_the_scaled_threshold(
    make_judge: MakeJudge, make_context: MakeContext, score: int, fired: bool
) -> None:
    judge = make_judge({"proposition": DISTINCT_VOICES.id, "value": score})
    context = make_context(("jim",), messages={"jim": 2, "pam": 2})

    outcome = await anti_convergence("jim", CONVERGENCE_ON).evaluate(judge, context)  # 0.6 -> 5.4

    assert outcome.fired is fired
    request = judge.log.calls[0]
    assert request.persona is None and len(request.trajectory) == 4  # the channel, not jim's history


async def test_anti_convergence_waits_for_a_few_channel_messages(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge(default=0)

    outcome = await anti_convergence("jim", CONVERGENCE_ON).evaluate(judge, make_context(("jim",), messages={"jim": 3}))

    assert not outcome.fired and judge.log.count() == 0


@pytest.mark.parametrize(
    ("agent_id", "marker"),
    [
        ("michael", "tell a story"),
        ("dwight", "Assert your authority"),
        ("jim", "witty observation"),
        ("pam", "your own opinion"),
    ],
)
async def test_anti_convergence_nudge_is_character_aware(
    make_judge: MakeJudge, make_context: MakeContext, agent_id: str, marker: str
) -> None:
    judge = make_judge(default=1)
    context = make_context((agent_id,), messages={"michael": 2, "jim": 2})

    outcome = await anti_convergence(agent_id, CONVERGENCE_ON).evaluate(judge, context)

    assert outcome.text is not None and marker in outcome.text


def test_builtins_exist_only_for_agents_that_enable_them() -> None:
    configs = {
        "michael": AgentConfig(anti_convergence_enabled=True, variety_intervention_enabled=True),
        "dwight": VARIETY_ON,
        "jim": AgentConfig(),
    }

    built = builtin_interventions(["michael", "dwight", "jim", "pam"], configs)

    assert [(i.name, i.targets) for i in built] == [
        ("anti_convergence", ("michael",)),
        ("variety", ("michael",)),
        ("variety", ("dwight",)),
    ]


@pytest.mark.parametrize("agent_id", ["michael", "dwight", "jim", "pam"])
def test_every_variety_nudge_asks_for_completely_new_ideas(make_context: MakeContext, agent_id: str) -> None:
    effect = variety(agent_id, VARIETY_ON).effect

    assert effect is not None
    text = effect.render(agent_id, make_context((agent_id,)))
    assert "completely new" in text and "{{" not in text
