"""The per-dimension scorers on a scripted judge: weights, inversion, hard mode, evidence, channels, counts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.errors import ConfigurationError
from engine.evaluation.scorers import (
    ChannelCache,
    score_adherence,
    score_consistency,
    score_convergence,
    score_fluency,
    score_for_agent,
    score_ideas_quantity,
)
from engine.evaluation.subjects import agent_subject, channel_subjects
from engine.judges.base import JudgeMode
from engine.models import Dimension, Event
from engine.personas import load_persona
from engine.propositions import load_set

from .conftest import EventFactory, JudgeFactory, TreeFactory

Conversation = Callable[..., tuple[Event, ...]]

LINES = [
    ("ann", "I think the budget needs a second look before Friday."),
    ("bob", "Budget? We can fix that with more coffee."),
    ("ann", "I think the budget needs a second look before Friday, honestly."),
    ("bob", "Coffee fixes budgets, trust me."),
]


def _weighted_tree(proposition_tree: TreeFactory, *, hard: bool = False) -> Path:
    adherence = {
        "hard": hard,
        "propositions": [
            {"id": "adh-a", "claim": "{{agent_name}} is careful", "weight": 2.0},
            {"id": "adh-b", "claim": "{{agent_name}} is reckless", "weight": 1.0, "inverted": True},
        ],
    }
    return proposition_tree(extra={"adherence": adherence})


async def test_adherence_is_the_weighted_mean_with_inversion(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = _weighted_tree(proposition_tree)
    judge = scripted(rules=[{"proposition": "adh-a", "value": 6}, {"proposition": "adh-b", "value": 2}])
    events = conversation(LINES)
    subject = agent_subject(events, "ann", load_persona(root, "ann"))
    result = await score_adherence(judge, load_set(root, Dimension.ADHERENCE, "ann"), subject)
    by_id = {p.id: p for p in result.propositions}
    assert (by_id["adh-a"].raw, by_id["adh-a"].score) == (6, 6.0)
    assert (by_id["adh-b"].raw, by_id["adh-b"].score) == (2, 7.0)  # inverted: 9 - 2
    assert result.score == pytest.approx((2 * 6.0 + 1 * 7.0) / 3)
    request = judge.log.calls[0]
    assert request.persona is not None and request.persona.id == "ann"
    assert [e.agent_id for e in request.trajectory] == ["ann", "ann"]  # only the agent's own messages
    assert [c.text for c in request.claims] == ["Ann is careful", "Ann is reckless"]


async def test_hard_mode_penalises_every_score_below_nine(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = _weighted_tree(proposition_tree, hard=True)
    judge = scripted(rules=[{"proposition": "adh-a", "value": 6}, {"proposition": "adh-b", "value": 0}])
    subject = agent_subject(conversation(LINES), "ann", load_persona(root, "ann"))
    result = await score_adherence(judge, load_set(root, Dimension.ADHERENCE, "ann"), subject)
    assert [p.score for p in result.propositions] == [pytest.approx(4.8), 9.0]


async def test_adherence_needs_a_persona(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = proposition_tree(personas=())
    subject = agent_subject(conversation(LINES), "ann", None)
    with pytest.raises(ConfigurationError, match="no persona file"):
        await score_adherence(scripted(), load_set(root, Dimension.ADHERENCE, "ann"), subject)


async def test_consistency_hides_the_persona_and_needs_history(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = proposition_tree(
        extra={
            "consistency": {
                "propositions": [
                    {"id": "con-a", "claim": "{{agent_name}} is the same", "precondition": "has_prior_actions"}
                ]
            }
        }
    )
    pset = load_set(root, Dimension.CONSISTENCY, "ann")
    judge = scripted(default=3)
    persona = load_persona(root, "ann")
    judged = await score_consistency(judge, pset, agent_subject(conversation(LINES), "ann", persona))
    assert judged.score == 3.0 and judge.log.calls[0].persona is None
    lonely = await score_consistency(judge, pset, agent_subject(conversation(LINES[:1]), "ann", persona))
    assert lonely.score == 9.0 and lonely.propositions[0].skipped
    assert judge.log.count() == 1  # no call without an earlier message to compare with


async def test_fluency_hands_ngram_statistics_to_the_judge(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = proposition_tree()
    judge = scripted()
    subject = agent_subject(conversation(LINES), "ann", load_persona(root, "ann"))
    await score_fluency(judge, load_set(root, Dimension.FLUENCY, "ann"), subject)
    evidence = judge.log.calls[0].supplementary
    assert evidence is not None
    assert "n-gram" in evidence and "2 message(s)" in evidence
    assert "the budget needs a second look before friday" in evidence.lower()  # the phrase Ann repeats


async def test_convergence_judges_the_channel_with_vocabulary_statistics(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = proposition_tree()
    judge = scripted(rules=[{"proposition": "cvg-a", "value": 2}])
    (channel,) = channel_subjects(conversation(LINES), "ann")
    result = await score_convergence(judge, load_set(root, Dimension.CONVERGENCE, "ann"), channel)
    request = judge.log.calls[0]
    assert result.score == 2.0
    assert request.agent_id is None and request.persona is None
    assert request.target_name == "the conversation in #general"
    assert {e.agent_id for e in request.trajectory} == {"ann", "bob"}
    assert request.supplementary is not None and "Vocabulary statistics" in request.supplementary
    assert "Ann" in request.supplementary and "Bob" in request.supplementary


async def test_ideas_quantity_is_a_count_from_enumeration(
    proposition_tree: TreeFactory, scripted: JudgeFactory, conversation: Conversation
) -> None:
    root = proposition_tree(extra={"ideas_quantity": {"hard": True}})
    judge = scripted(default_count=4)
    (channel,) = channel_subjects(conversation(LINES), "ann")
    result = await score_ideas_quantity(judge, load_set(root, Dimension.IDEAS_QUANTITY, "ann"), channel)
    assert judge.log.calls[0].mode is JudgeMode.ENUMERATE
    assert result.score == 4.0  # a count: no hard penalty, no 0-9 clamp semantics
    assert len(result.propositions[0].items) == 4


async def test_environment_dimensions_combine_the_agents_channels(
    proposition_tree: TreeFactory, scripted: JudgeFactory, make_event: EventFactory
) -> None:
    root = proposition_tree()
    events = (
        make_event("ann", "general one", minute=0),
        make_event("bob", "general two", minute=1),
        make_event("ann", "general three", minute=2),
        make_event("ann", "dm one", channel="dm:ann-bob", minute=3),
        make_event("bob", "dm two", channel="dm:ann-bob", minute=4),
    )
    judge = scripted(
        rules=[
            {"proposition": "cvg-a", "message_contains": "dm one", "value": 9},
            {"proposition": "cvg-a", "value": 3},
            {"proposition": "ideas", "message_contains": "dm one", "value": 1},
            {"proposition": "ideas", "value": 5},
        ]
    )
    cache = ChannelCache()
    subject = agent_subject(events, "ann", load_persona(root, "ann"))
    channels = channel_subjects(events, "ann")
    cvg = load_set(root, Dimension.CONVERGENCE, "ann")
    convergence, parts = await score_for_agent(judge, cvg, subject, channels, cache=cache)
    assert [(p.channel, p.weight, p.score.score) for p in parts] == [("#general", 2, 3.0), ("dm:ann-bob", 1, 9.0)]
    assert convergence.score == pytest.approx((2 * 3.0 + 1 * 9.0) / 3)  # weighted by Ann's messages
    assert convergence.agent_id == "ann"
    ideas, _ = await score_for_agent(judge, load_set(root, Dimension.IDEAS_QUANTITY, "ann"), subject, channels)
    assert ideas.score == 6.0  # 5 in #general + 1 in the DM
    calls_before = judge.log.count()
    bob = agent_subject(events, "bob", load_persona(root, "bob"))
    await score_for_agent(judge, cvg, bob, channel_subjects(events, "bob"), cache=cache)
    assert judge.log.count() == calls_before  # Bob's channels were already judged for Ann


async def test_evaluation_windows_default_to_ten_and_a_hundred(
    proposition_tree: TreeFactory, scripted: JudgeFactory, make_event: EventFactory
) -> None:
    root = proposition_tree()
    events = tuple(make_event("ann", f"message {i}", minute=i) for i in range(130))
    judge = scripted()
    subject = agent_subject(events, "ann", load_persona(root, "ann"))
    await score_consistency(judge, load_set(root, Dimension.CONSISTENCY, "ann"), subject)
    request = judge.log.calls[0]
    assert (len(request.trajectory), request.first_part, request.omitted) == (110, 10, 20)
    assert request.trajectory[10].text == "message 30"


async def test_a_set_window_overrides_the_defaults(
    proposition_tree: TreeFactory, scripted: JudgeFactory, make_event: EventFactory
) -> None:
    root = proposition_tree(extra={"fluency": {"first_n": 1, "last_n": 2}})
    events = tuple(make_event("ann", f"message {i}", minute=i) for i in range(6))
    judge = scripted()
    subject = agent_subject(events, "ann", load_persona(root, "ann"))
    await score_fluency(judge, load_set(root, Dimension.FLUENCY, "ann"), subject)
    request = judge.log.calls[0]
    assert [e.text for e in request.trajectory] == ["message 0", "message 4", "message 5"]
    assert request.supplementary is not None and "3 message(s)" in request.supplementary
