"""Scoring: inversion, hard penalty, weights (properties) and score_dimension against a scripted judge."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import preconditions
from engine.errors import ConfigurationError
from engine.judges.base import Claim, JudgeMode
from engine.judges.scripted import ScriptedJudge
from engine.models import Dimension, Event, EventKind, Persona
from engine.propositions import ACTION_LEVEL_WINDOW_DEFAULTS, Proposition, PropositionSet, Window
from engine.scoring import (
    JudgeStrategy,
    ScoringTarget,
    adjust,
    check_claim,
    score_dimension,
    weighted_mean,
)

relaxed = settings(deadline=None, max_examples=60)

PropFactory = Callable[..., Proposition]
SetFactory = Callable[..., PropositionSet]
TargetFactory = Callable[..., ScoringTarget]

raws = st.integers(0, 9)
score_values = st.floats(0, 9, allow_nan=False)
weights = st.floats(0, 10, allow_nan=False)


# --- factories ------------------------------------------------------------------------------------------


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


# --- adjust ---------------------------------------------------------------------------------------------


@given(raws)
def test_inversion_alone_is_nine_minus_raw(raw: int) -> None:
    assert adjust(raw, inverted=True, hard=False) == 9 - raw
    assert adjust(raw, inverted=False, hard=False) == raw


@given(raws, st.booleans())
def test_hard_penalty_applies_after_inversion_to_scores_below_nine_only(raw: int, inverted: bool) -> None:
    before_penalty = 9 - raw if inverted else raw
    penalised = adjust(raw, inverted=inverted, hard=True)
    if before_penalty == 9:
        assert penalised == 9
    else:
        assert penalised == pytest.approx(before_penalty * 0.8)
        assert penalised < 9


@given(raws, st.booleans(), st.booleans())
def test_adjusted_scores_stay_in_range_and_penalty_never_helps(raw: int, inverted: bool, hard: bool) -> None:
    value = adjust(raw, inverted=inverted, hard=hard)
    assert 0 <= value <= 9
    assert value <= adjust(raw, inverted=inverted, hard=False)


def test_penalty_order_matters_for_inverted_extremes() -> None:
    # invert, then penalise: raw 2 -> 7 -> 5.6 (penalising first would give 9 - 1.6 = 7.4);
    # raw 0 inverted is a perfect 9, which the penalty leaves alone
    assert adjust(0, inverted=True, hard=True) == 9
    assert adjust(9, inverted=True, hard=True) == 0
    assert adjust(2, inverted=True, hard=True) == pytest.approx(5.6)


# --- weighted_mean --------------------------------------------------------------------------------------

pairs_with_weight = st.lists(st.tuples(score_values, weights), min_size=1, max_size=20).filter(
    lambda ps: sum(w for _, w in ps) > 1e-6
)


@relaxed
@given(pairs_with_weight)
def test_weighted_mean_lies_between_the_weighted_scores(pairs: list[tuple[float, float]]) -> None:
    counted = [s for s, w in pairs if w > 0]
    mean = weighted_mean(pairs)
    assert min(counted) - 1e-9 <= mean <= max(counted) + 1e-9


@relaxed
@given(pairs_with_weight, st.floats(1e-3, 1e3))
def test_weighted_mean_ignores_the_scale_of_weights(pairs: list[tuple[float, float]], factor: float) -> None:
    scaled = [(s, w * factor) for s, w in pairs]
    assert weighted_mean(scaled) == pytest.approx(weighted_mean(pairs), abs=1e-9)


@relaxed
@given(pairs_with_weight, st.lists(score_values, min_size=1, max_size=5))
def test_zero_weight_propositions_do_not_move_the_mean(pairs: list[tuple[float, float]], extra: list[float]) -> None:
    assert weighted_mean([*pairs, *((s, 0.0) for s in extra)]) == pytest.approx(weighted_mean(pairs), abs=1e-12)


@given(st.lists(score_values, min_size=1, max_size=10))
def test_equal_weights_give_the_arithmetic_mean(values: list[float]) -> None:
    assert weighted_mean([(v, 0.5) for v in values]) == pytest.approx(sum(values) / len(values))


def test_weight_pulls_the_mean_towards_the_heavier_score() -> None:
    assert weighted_mean([(9.0, 3.0), (1.0, 1.0)]) == pytest.approx(7.0)


@given(st.lists(score_values, min_size=1, max_size=10))
def test_all_zero_weights_are_a_configuration_error(values: list[float]) -> None:
    with pytest.raises(ConfigurationError, match="weight"):
        weighted_mean([(v, 0.0) for v in values])


# --- score_dimension: skipping without a judge call -----------------------------------------------------


async def test_false_precondition_scores_nine_without_a_judge_call(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with(default=0)
    pset = make_set(make_prop("dm-only", precondition="is_direct_message"))
    result = await score(judge, pset, make_target())  # no recipient_name: not a DM
    assert judge.log.count() == 0
    assert result.score == 9
    (prop,) = result.propositions
    assert prop.skipped and prop.raw is None and prop.score == 9
    assert "is_direct_message" in prop.reasoning


async def test_true_precondition_is_judged(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with(default=2)
    pset = make_set(make_prop("dm-only", precondition="is_direct_message"))
    result = await score(judge, pset, make_target(variables={"recipient_name": "Pam"}))
    assert judge.log.count() == 1
    assert result.score == 2 and not result.propositions[0].skipped


async def test_only_applicable_propositions_reach_the_judge(
    make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with(default=3)
    pset = make_set(make_prop("dm-only", precondition="is_direct_message"), make_prop("plain"))
    result = await score(judge, pset, make_target())
    assert [c.id for r in judge.log.calls for c in r.claims] == ["plain"]
    assert result.score == pytest.approx((9 + 3) / 2)


@pytest.fixture
def context_precondition(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A registered precondition, true when the target's context says ``mode: debate`` (removed afterwards)."""
    monkeypatch.setattr(preconditions, "_REGISTRY", dict(preconditions._REGISTRY))

    @preconditions.register_precondition("test_debate_only")
    def debate_only(events: Sequence[Event], context: Mapping[str, str], variables: Mapping[str, str]) -> bool:
        return context.get("mode") == "debate"

    yield "test_debate_only"


async def test_precondition_sees_the_target_context(
    context_precondition: str, make_prop: PropFactory, make_set: SetFactory, make_target: TargetFactory
) -> None:
    pset = make_set(make_prop("debate", precondition=context_precondition))
    judge = judge_with(default=4)
    off = await score(judge, pset, make_target(context={"mode": "chat"}))
    on = await score(judge, pset, make_target(context={"mode": "debate"}))
    assert (off.score, on.score) == (9, 4)
    assert judge.log.count() == 1


async def test_unknown_precondition_is_a_configuration_error(make_set: SetFactory, make_target: TargetFactory) -> None:
    # the model validator rejects unknown names; a set built around it must still fail with a typed error
    sneaky = Proposition.model_construct(
        id="x", claim="c", weight=1.0, inverted=False, double_check=False, precondition="no_such_precondition"
    )
    with pytest.raises(ConfigurationError, match="no_such_precondition"):
        await score(judge_with(), make_set(sneaky), make_target())


async def test_consistency_without_a_prior_action_scores_nine_without_a_call(
    make_set: SetFactory, make_target: TargetFactory
) -> None:
    judge = judge_with(default=0)
    pset = make_set(dimension=Dimension.CONSISTENCY)
    history = (
        Event("michael", "Michael Scott", "Meeting at noon", kind=EventKind.STIMULUS, source="Dwight"),
        Event("dwight", "Dwight Schrute", "I already said that"),  # someone else's action does not count
    )
    result = await score(judge, pset, make_target(events=history))
    assert judge.log.count() == 0
    assert result.score == 9
    assert all(p.skipped and p.score == 9 for p in result.propositions)
    assert len(result.propositions) == 3


async def test_consistency_with_a_prior_action_is_judged(make_set: SetFactory, make_target: TargetFactory) -> None:
    judge = judge_with(default=5)
    result = await score(judge, make_set(dimension=Dimension.CONSISTENCY), make_target())
    assert judge.log.count() == 1
    assert result.score == 5


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
