"""The offline judge scores a whole conversation as it scores its messages (issue 18, point 3).

It used to score Michael's whole conversation 0.93 on adherence while his messages scored 1.2-6.7 one by one:
the trajectory summed every flaw signal of every message. Now a conversation is the mean of its messages.
"""

from __future__ import annotations

from statistics import mean

from engine.evaluation.harness import HarnessOptions, evaluate_cast
from engine.evaluation.messages import read_messages
from engine.judges.base import Claim, JudgeMode
from engine.judges.offline import OfflineJudge
from engine.models import Dimension, Event
from engine.settings import REPO_ROOT, bundled_propositions
from ops.fakes.judge_requests import make_event, make_persona, make_request

SAMPLE = REPO_ROOT / "ops" / "examples" / "office_conversation.jsonl"


async def test_a_conversation_scores_within_its_messages_and_near_their_mean() -> None:
    events = read_messages(SAMPLE).events
    options = HarnessOptions(
        dimensions=(Dimension.ADHERENCE, Dimension.FLUENCY), propositions_dir=bundled_propositions()
    )
    results = await evaluate_cast(OfflineJudge(), events, ("michael", "dwight", "pam", "kevin"), options)
    checked = 0
    for agent in results:
        for dimension in agent.dimensions:
            units = dimension.units
            assert len(units) >= 3, (agent.agent_id, dimension.dimension)
            # each claim's mean is rounded to the rubric's integers: at most half a point per claim apart
            assert min(units) - 0.5 <= dimension.score <= max(units) + 0.5, (agent.agent_id, dimension, units)
            assert abs(dimension.score - mean(units)) <= 1.0, (agent.agent_id, dimension.dimension, units)
            checked += 1
    assert checked == 8


async def test_a_conversation_is_the_mean_of_its_messages_each_judged_with_what_came_before() -> None:
    claim = [Claim("c", "Michael tells a funny story")]
    persona = make_persona()
    first, second = make_event("We could try karaoke."), make_event("Let's circle back and leverage synergy.")
    judge = OfflineJudge()

    async def score(events: tuple[Event, ...], action: str | None) -> tuple[int, str]:
        request = make_request(JudgeMode.SCORE, claims=claim, events=events, persona=persona, action=action)
        answer = (await judge.evaluate(request)).answers[0]
        return int(answer.value), answer.reasoning

    alone, _ = await score((), first.text)
    after, _ = await score((first,), second.text)
    whole, reasoning = await score((first, second), None)
    assert alone != after  # the stock phrases of the second message cost it
    assert whole == round((alone + after) / 2)
    assert f"mean of the scores of its 2 messages ({alone}, {after})" in reasoning
