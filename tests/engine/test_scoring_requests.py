"""score_dimension: how judge requests are planned, and what each proposition's result keeps."""

from __future__ import annotations

import asyncio
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.judges.base import Claim, JudgeMode
from engine.judges.scripted import ScriptedJudge
from engine.models import Dimension, Event
from engine.propositions import Proposition, PropositionSet, Window
from engine.scoring import JudgeStrategy, ScoringTarget, check_claim, score_dimension
from tests.engine.conftest import PropFactory, SetFactory, TargetFactory, judge_with, relaxed, score

# --- score_dimension: how requests are planned -----------------------------------------------------------


def _plain_set(count: int) -> PropositionSet:
    props = tuple(Proposition(id=f"c{i}", claim="{{agent_name}} writes clearly") for i in range(count))
    return PropositionSet(dimension=Dimension.FLUENCY, propositions=props)


def _run_with(strategy: JudgeStrategy, count: int) -> ScriptedJudge:
    """Score ``count`` plain claims (fixtures and hypothesis do not mix, hence no factory here)."""
    judge = judge_with(default=6)
    target = ScoringTarget(target_name="Pam", agent_id="pam", events=(Event("pam", "Pam", "Hi"),))
    coro = score_dimension(judge, _plain_set(count), target, window_defaults=Window(5, 10), strategy=strategy)
    result = asyncio.run(coro)
    assert result.calls == judge.log.count()
    assert result.score == 6
    return judge


@relaxed
@given(st.integers(1, 35))
def test_batch_strategy_makes_ceil_n_over_ten_calls(count: int) -> None:
    judge = _run_with(JudgeStrategy.BATCH, count)
    assert judge.log.count() == math.ceil(count / 10)
    sent = [c.id for r in judge.log.calls for c in r.claims]
    assert sorted(sent) == sorted(f"c{i}" for i in range(count))
    assert all(len(r.claims) <= 10 for r in judge.log.calls)


@relaxed
@given(st.integers(1, 25))
def test_individual_strategy_makes_one_call_per_claim(count: int) -> None:
    judge = _run_with(JudgeStrategy.INDIVIDUAL, count)
    assert judge.log.count() == count
    assert all(len(r.claims) == 1 for r in judge.log.calls)


@pytest.mark.parametrize("strategy", list(JudgeStrategy))
async def test_double_check_propositions_go_in_their_own_requests(
    strategy: JudgeStrategy, make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with([{"proposition": "twice-*", "value": 4}], default=8)
    props = [make_prop(f"once-{i}") for i in range(3)] + [make_prop(f"twice-{i}", double_check=True) for i in range(2)]
    result = await score(judge, make_set(*props), make_target(), strategy=strategy)
    for request in judge.log.calls:
        flags = {c.id.startswith("twice-") for c in request.claims}
        assert flags == {request.double_check}
    assert sum(len(r.claims) for r in judge.log.calls if r.double_check) == 2
    if strategy is JudgeStrategy.BATCH:
        assert judge.log.count() == 2
    by_id = {p.id: p for p in result.propositions}
    assert by_id["twice-0"].raw == 4 and by_id["twice-0"].first_raw == 4
    assert by_id["once-0"].raw == 8 and by_id["once-0"].first_raw is None


async def test_raw_and_adjusted_values_are_kept_per_proposition(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with([{"proposition": "bad-*", "value": 2}, {"proposition": "good-*", "value": 6}])
    props = (
        make_prop("good-plain", weight=1.0),
        make_prop("bad-inverted", inverted=True, weight=3.0),
        make_prop("good-perfect-when-inverted", inverted=True, weight=0.0),
    )
    soft = await score(judge, make_set(*props), make_target())
    hard = await score(judge, make_set(*props, hard=True), make_target())
    assert [(p.raw, p.score) for p in soft.propositions] == [(6, 6.0), (2, 7.0), (6, 3.0)]
    assert [p.raw for p in hard.propositions] == [6, 2, 6]
    assert [p.score for p in hard.propositions] == pytest.approx([4.8, 5.6, 2.4])
    # weights come from the propositions; the zero-weight one does not count
    assert soft.score == pytest.approx((6 * 1 + 7 * 3) / 4)
    assert hard.score == pytest.approx((4.8 * 1 + 5.6 * 3) / 4)
    assert [p.weight for p in soft.propositions] == [1.0, 3.0, 0.0]


@pytest.mark.parametrize("include", [True, False])
async def test_persona_is_sent_only_when_the_set_includes_personas(
    include: bool, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with()
    target = make_target()
    await score(judge, make_set(include_personas=include), target)
    (request,) = judge.log.calls
    assert request.persona == (target.persona if include else None)


async def test_ideas_quantity_is_an_enumerated_count_not_a_score(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with(default=0, default_count=12)
    pset = make_set(make_prop("ideas", inverted=True), dimension=Dimension.IDEAS_QUANTITY, hard=True)
    result = await score(judge, pset, make_target())
    (request,) = judge.log.calls
    assert request.mode is JudgeMode.ENUMERATE
    (prop,) = result.propositions
    assert prop.raw == 12 and prop.score == 12  # neither 9 - 12 nor 12 * 0.8
    assert len(prop.items) == 12
    assert result.score == 12


async def test_templates_are_rendered_into_the_claims(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with()
    pset = make_set(make_prop("t", claim="{{agent_name}} would say {{action}} to {{recipient_name}}"))
    result = await score(judge, pset, make_target(action="Party time!"))
    expected = "Michael Scott would say Party time! to {{recipient_name}}"  # unset variables stay as written
    assert judge.log.calls[0].claims == (Claim("t", expected),)
    assert result.propositions[0].claim == expected


async def test_skipped_propositions_keep_their_rendered_claim(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    pset = make_set(make_prop("dm", claim="{{agent_name}} whispers", precondition="is_direct_message"))
    result = await score(judge_with(), pset, make_target(target_name="Pam"))
    assert result.propositions[0].claim == "Pam whispers"


async def test_window_of_the_set_overrides_the_defaults(
    make_set: SetFactory, make_target: TargetFactory, make_prop: PropFactory
) -> None:
    history = tuple(Event("michael", "Michael Scott", f"message {i}") for i in range(40))
    judge = judge_with()
    await score(judge, make_set(make_prop("w"), first_n=2, last_n=3), make_target(events=history))
    await score(judge, make_set(make_prop("w")), make_target(events=history))  # action-level 5 + 10
    narrow, default = judge.log.calls
    assert [e.text for e in narrow.trajectory] == ["message 0", "message 1", "message 37", "message 38", "message 39"]
    assert (narrow.first_part, narrow.omitted) == (2, 35)
    assert (len(default.trajectory), default.omitted) == (15, 25)


async def test_low_scoring_and_reasoning_leave_out_skipped_propositions(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with([{"proposition": "low", "value": 3, "reasoning": "too dry"}], default=8)
    pset = make_set(make_prop("low"), make_prop("high"), make_prop("dm", precondition="is_direct_message"))
    result = await score(judge, pset, make_target())
    assert [p.id for p in result.low_scoring(7)] == ["low"]
    assert "[low] too dry" in result.reasoning()
    assert "[dm]" not in result.reasoning()


async def test_check_claim_answers_true_or_false(make_target: TargetFactory) -> None:
    judge = judge_with([{"proposition": "stale", "value": False}])
    stale, _ = await check_claim(judge, Claim("stale", "no new idea"), make_target(), Window(10, 100))
    fresh, result = await check_claim(judge, Claim("fresh", "new idea"), make_target(), Window(10, 100))
    assert (stale, fresh) == (False, True)
    assert judge.log.count(JudgeMode.CHECK) == 2
    assert result.judge == judge.name


async def test_check_claim_sends_no_persona_unless_asked(make_target: TargetFactory) -> None:
    """TinyTroupe judges textual preconditions without the persona."""
    judge = judge_with()
    target = make_target()
    assert target.persona is not None
    await check_claim(judge, Claim("plain", "no new idea"), target, Window(10, 100))
    await check_claim(judge, Claim("asked", "no new idea"), target, Window(10, 100), include_persona=True)
    plain, asked = judge.log.calls
    assert plain.persona is None and asked.persona == target.persona
