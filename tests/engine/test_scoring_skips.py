"""score_dimension: propositions skipped without a judge call (preconditions, consistency without a prior action)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pytest

from engine import preconditions
from engine.errors import ConfigurationError
from engine.models import Dimension, Event, EventKind
from engine.propositions import Proposition
from tests.engine.conftest import PropFactory, SetFactory, TargetFactory, judge_with, score

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
