from __future__ import annotations

from typing import Any

from engine.judges.base import Claim, Judge, JudgeMode
from engine.judges.offline import NAME, OfflineJudge, idea_sentences
from ops.fakes.judge_requests import make_event, make_persona, make_request

JUDGE = OfflineJudge()


async def value_of(mode: JudgeMode = JudgeMode.SCORE, claim: str = "Michael tells a funny story", **kw: Any) -> Any:
    result = await JUDGE.evaluate(make_request(mode, claims=[Claim("c", claim)], **kw))
    assert result.judge == NAME
    assert result.answers[0].reasoning.startswith("[offline heuristic]")
    return result.answers[0].value


def test_is_a_labelled_judge() -> None:
    assert isinstance(JUDGE, Judge)
    assert JUDGE.name == "offline-heuristic (no LLM)"


async def test_is_deterministic() -> None:
    request = make_request(claims=3, persona=make_persona(), events=(make_event("We could try karaoke."),))
    first, second = await JUDGE.evaluate(request), await JUDGE.evaluate(request)
    assert first.answers == second.answers


async def test_repetition_lowers_the_score() -> None:
    history = tuple(make_event("I love this office and everyone in it so much") for _ in range(3))
    fresh = await value_of(events=history, action="Let me tell you a funny story about my first sale.")
    repeated = await value_of(events=history, action="I love this office and everyone in it so much")
    assert repeated <= fresh - 3


async def test_stock_phrases_lower_the_score() -> None:
    plain = await value_of(action="Here is a funny story about the copier.")
    corporate = await value_of(action="Going forward, let's circle back and leverage synergy.")
    assert corporate < plain


async def test_claim_and_persona_words_raise_the_score() -> None:
    unrelated = await value_of(action="The weather is grey.")
    related = await value_of(action="Let me tell a funny story.", persona=make_persona())
    assert related > unrelated


async def test_no_text_means_missing_data_scores_nine() -> None:
    assert await value_of(action=None, events=()) == 9


async def test_enumerate_counts_distinct_idea_sentences() -> None:
    events = (
        make_event("We could run a charity bowling night."),
        make_event("What if we ran a charity bowling night?"),
        make_event("How about a paper-airplane contest for clients."),
        make_event("I had lunch."),
    )
    count = await value_of(JudgeMode.ENUMERATE, claim="distinct ideas", action=None, events=events)
    assert count == 2
    assert idea_sentences("Let's paint the walls. I like soup.") == ["Let's paint the walls."]


async def test_check_handles_idea_and_agreement_claims() -> None:
    stale = tuple(make_event(f"Status report {i}.") for i in range(12))
    fresh = (*stale, make_event("What if we sold paper online?"))
    claim = "the agent has not proposed an entirely new idea recently"
    assert await value_of(JudgeMode.CHECK, claim=claim, action=None, events=stale) is True
    assert await value_of(JudgeMode.CHECK, claim=claim, action=None, events=fresh) is False
    agreeing = (make_event("I agree, good point."),)
    assert await value_of(JudgeMode.CHECK, claim="agents agree", action=None, events=agreeing) is True
    other = await value_of(JudgeMode.CHECK, claim="Michael is kind", action="Michael is kind and warm.")
    assert other is True


async def test_flaw_claims_rise_with_evidence_of_the_flaw() -> None:
    claim = "Michael gives a generic, corporate answer with no personality"
    clean = await value_of(
        claim=claim, action="Let me tell you about my first sale, it was pure magic.", persona=make_persona()
    )
    corporate = await value_of(
        claim=claim, action="Going forward, let's circle back and leverage synergy.", persona=make_persona()
    )
    assert clean <= 3
    assert corporate >= clean + 4


async def test_bland_agreement_lowers_a_behaviour_score() -> None:
    own_voice = await value_of(
        action="Let me tell a funny story about the warehouse and my family here.", persona=make_persona()
    )
    echo = await value_of(action="Great idea, I totally agree.", persona=make_persona())
    assert echo < own_voice
