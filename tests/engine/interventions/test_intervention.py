"""Intervention semantics: precondition polarity, AND-ing, short-circuit, concurrency and batch fan-out."""

from __future__ import annotations

import time

import pytest

from engine.interventions import (
    Effect,
    InlineProposition,
    Intervention,
    InterventionBatch,
    PreconditionKind,
    Scope,
    min_messages,
)
from engine.judges.base import JudgeMode
from engine.models import Dimension, TargetType
from engine.propositions import Proposition, PropositionSet

from .conftest import MakeContext, MakeJudge

CLAIM = InlineProposition(id="stays-on-topic", claim="{{agent_name}} stays on topic")


def nudge(target: str = "michael", *, concurrent: bool = False) -> Intervention:
    intervention = Intervention(target, name="nudge", concurrent=concurrent)
    return intervention.set_effect("{{agent_name}}, change course.")


@pytest.mark.parametrize(("score", "fired"), [(3, True), (4, True), (5, False), (8, False)])
async def test_threshold_fires_only_when_score_is_below_it(
    make_judge: MakeJudge, make_context: MakeContext, score: int, fired: bool
) -> None:
    judge = make_judge({"proposition": "stays-on-topic", "value": score})
    intervention = nudge().set_propositional_precondition(CLAIM, threshold=5)

    outcome = await intervention.evaluate(judge, make_context())

    assert outcome.fired is fired
    assert outcome.preconditions[0].score == score
    assert judge.log.count(JudgeMode.SCORE) == 1 and judge.log.count(JudgeMode.CHECK) == 0
    assert (outcome.text == "Michael Scott, change course.") is fired


@pytest.mark.parametrize("check", [True, False])
async def test_without_threshold_the_check_decides(
    make_judge: MakeJudge, make_context: MakeContext, check: bool
) -> None:
    judge = make_judge({"proposition": "stays-on-topic", "value": check}, default=0)
    intervention = nudge().set_propositional_precondition(CLAIM)

    outcome = await intervention.evaluate(judge, make_context())

    assert outcome.fired is check
    assert judge.log.count(JudgeMode.CHECK) == 1 and judge.log.count(JudgeMode.SCORE) == 0


async def test_inverted_claim_is_flipped_before_the_threshold(make_judge: MakeJudge, make_context: MakeContext) -> None:
    anti = InlineProposition(id="rambles", claim="{{agent_name}} rambles", inverted=True)
    judge = make_judge({"proposition": "rambles", "value": 8})  # rambles a lot -> 9 - 8 = 1

    outcome = await nudge().set_propositional_precondition(anti, threshold=5).evaluate(judge, make_context())

    assert outcome.fired
    assert outcome.preconditions[0].score == 1


async def test_unset_preconditions_count_as_true(make_judge: MakeJudge, make_context: MakeContext) -> None:
    judge = make_judge()

    outcome = await nudge().evaluate(judge, make_context())

    assert outcome.fired and outcome.preconditions == ()
    assert judge.log.count() == 0
    assert outcome.directives[0].agent_id == "michael"
    assert outcome.directives[0].kind == "nudge"


@pytest.mark.parametrize(
    "case",
    [
        (5, True, 2, True),
        (1, True, 2, False),  # functional false
        (5, False, 2, False),  # textual false
        (5, True, 7, False),  # propositional false
    ],
)
async def test_preconditions_are_and_ed(
    make_judge: MakeJudge, make_context: MakeContext, case: tuple[int, bool, int, bool]
) -> None:
    messages, check, score, fired = case
    judge = make_judge({"proposition": "nudge:textual", "value": check}, {"proposition": "*", "value": score})
    intervention = (
        nudge()
        .set_functional_precondition(min_messages(3))
        .set_textual_precondition("{{agent_name}} is stuck")
        .set_propositional_precondition(CLAIM, threshold=5)
    )

    outcome = await intervention.evaluate(judge, make_context(messages={"michael": messages}))

    assert outcome.fired is fired
    assert bool(outcome.directives) is fired


async def test_false_functional_precondition_makes_no_judge_call(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge()
    intervention = (
        nudge()
        .set_functional_precondition(min_messages(10))
        .set_textual_precondition("{{agent_name}} is stuck")
        .set_propositional_precondition(CLAIM, threshold=5)
    )

    outcome = await intervention.evaluate(judge, make_context(messages={"michael": 9}))

    assert judge.log.count() == 0
    assert not outcome.fired and outcome.judge_calls == 0
    assert [(r.kind, r.satisfied) for r in outcome.preconditions] == [
        (PreconditionKind.FUNCTIONAL, False),
        (PreconditionKind.TEXTUAL, None),
        (PreconditionKind.PROPOSITIONAL, None),
    ]
    assert "min_messages(10): false" in outcome.evidence


async def test_false_textual_precondition_skips_the_propositional_call(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge({"proposition": "nudge:textual", "value": False}, default=0)
    intervention = nudge().set_textual_precondition("{{agent_name}} is stuck").set_propositional_precondition(CLAIM, 5)

    outcome = await intervention.evaluate(judge, make_context())

    assert judge.log.count() == 1 and judge.log.count(JudgeMode.CHECK) == 1
    assert judge.log.calls[0].claims[0].text == "Michael Scott is stuck"
    assert outcome.preconditions[1].satisfied is None and not outcome.fired


async def test_concurrent_mode_cancels_the_slow_call_after_a_false_answer(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge(
        {"proposition": "nudge:textual", "value": False},
        {"proposition": "stays-on-topic", "value": 1, "delay_s": 5},
    )
    intervention = (
        nudge(concurrent=True)
        .set_textual_precondition("{{agent_name}} is stuck")
        .set_propositional_precondition(CLAIM, 5)
    )

    started = time.perf_counter()
    outcome = await intervention.evaluate(judge, make_context())

    assert time.perf_counter() - started < 2
    assert judge.log.count() == 2  # both calls were started together
    assert not outcome.fired
    assert [r.satisfied for r in outcome.preconditions] == [False, None]


async def test_concurrent_mode_fires_when_both_hold(make_judge: MakeJudge, make_context: MakeContext) -> None:
    judge = make_judge({"proposition": "stays-on-topic", "value": 2, "delay_s": 0.01})
    intervention = nudge(concurrent=True).set_textual_precondition("x").set_propositional_precondition(CLAIM, 5)

    outcome = await intervention.evaluate(judge, make_context())

    assert outcome.fired and outcome.judge_calls == 2


async def test_textual_scope_selects_the_trajectory(make_judge: MakeJudge, make_context: MakeContext) -> None:
    judge = make_judge()
    context = make_context(("michael",), messages={"michael": 2, "jim": 3})

    await nudge().set_textual_precondition("c", scope=Scope.AGENT).evaluate(judge, context)
    await nudge().set_textual_precondition("c", scope=Scope.CHANNEL).evaluate(judge, context)

    agent_request, channel_request = judge.log.calls
    assert {e.agent_id for e in agent_request.trajectory} == {"michael"}
    assert agent_request.persona is None  # TinyTroupe: textual preconditions are judged without the persona
    assert len(channel_request.trajectory) == 5 and channel_request.agent_id is None


async def test_a_textual_precondition_sees_the_persona_only_when_asked(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    judge = make_judge()
    context = make_context(("michael",), messages={"michael": 2})
    await nudge().set_textual_precondition("c", include_persona=True).evaluate(judge, context)
    (request,) = judge.log.calls
    assert request.persona is not None and request.persona.name == "Michael Scott"


async def test_environment_proposition_set_judges_the_channel_with_its_weighted_score(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    pset = PropositionSet(
        dimension=Dimension.CONVERGENCE,
        include_personas=False,
        target_type=TargetType.ENVIRONMENT,
        propositions=(
            Proposition(id="distinct", claim="voices differ", weight=1.0),
            Proposition(id="echo", claim="everyone echoes", weight=1.0, inverted=True),
        ),
    )
    judge = make_judge({"proposition": "distinct", "value": 6}, {"proposition": "echo", "value": 7})
    intervention = nudge().set_propositional_precondition(pset, threshold=5)

    outcome = await intervention.evaluate(judge, make_context(messages={"michael": 2, "jim": 2}))

    assert intervention.propositional is not None and intervention.propositional.scope is Scope.CHANNEL
    assert outcome.preconditions[0].score == pytest.approx((6 + (9 - 7)) / 2)
    assert outcome.fired
    assert judge.log.calls[0].persona is None and len(judge.log.calls[0].trajectory) == 4


async def test_targets_not_acting_are_not_evaluated(make_judge: MakeJudge, make_context: MakeContext) -> None:
    judge = make_judge()

    outcome = await nudge("dwight").set_textual_precondition("x").evaluate(judge, make_context(("jim",)))

    assert not outcome.fired and judge.log.count() == 0


async def test_group_intervention_gives_every_acting_target_its_variant(
    make_judge: MakeJudge, make_context: MakeContext
) -> None:
    effect = Effect("{{agent_name}}: default", {"jim": "{{agent_name}}: a witty observation"})
    intervention = Intervention(["michael", "jim", "dwight"], name="group").set_effect(effect)

    outcome = await intervention.evaluate(make_judge(), make_context(("michael", "jim")))

    assert [(d.agent_id, d.text) for d in outcome.directives] == [
        ("michael", "Michael Scott: default"),
        ("jim", "Jim Halpert: a witty observation"),
    ]


def test_setters_chain_and_return_the_intervention() -> None:
    intervention = Intervention("jim")

    assert intervention.set_textual_precondition("x") is intervention
    assert intervention.set_functional_precondition(min_messages(1)) is intervention
    assert intervention.set_propositional_precondition(CLAIM, 4) is intervention
    assert intervention.set_effect("go") is intervention


def test_batch_setters_fan_out_to_every_member_and_chain() -> None:
    functional = min_messages(2)

    batch = Intervention.create_for_each(["michael", "dwight", "jim"], name="team")
    returned = (
        batch.set_textual_precondition("{{agent_name}} repeats", scope=Scope.CHANNEL)
        .set_functional_precondition(functional)
        .set_propositional_precondition(CLAIM, threshold=4)
        .set_effect("{{agent_name}}, try again")
    )

    assert returned is batch and isinstance(batch, InterventionBatch)
    assert [m.targets for m in batch] == [("michael",), ("dwight",), ("jim",)]
    for member in batch:
        assert member.name == "team"
        assert member.textual is not None and member.textual.scope is Scope.CHANNEL
        assert member.functional is functional
        assert member.propositional is not None and member.propositional.threshold == 4
        assert member.effect is not None and member.effect.default == "{{agent_name}}, try again"
    assert len(batch) == 3 and batch[1].targets == ("dwight",)
