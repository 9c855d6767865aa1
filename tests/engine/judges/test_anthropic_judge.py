"""The Anthropic judge through the real ``anthropic`` SDK against the local Messages-API test double."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from engine.errors import ConfigurationError, JudgeError, JudgeOutputError, JudgeTimeout
from engine.judges.anthropic import AnthropicJudge
from engine.judges.base import JudgeMode
from engine.judges.llm import CallPolicy
from engine.prompts import double_check_turn
from ops.fakes.judge_requests import make_events, make_persona, make_request
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour, ReceivedRequest

PLANTED_KEY = "sk-ant-PLANTED-7a1c9e-do-not-leak"
MakeJudge = Callable[..., AnthropicJudge]


@pytest.fixture
async def server() -> AsyncIterator[MessagesApiServer]:
    async with MessagesApiServer() as fake:
        yield fake


@pytest.fixture
async def make_judge(server: MessagesApiServer) -> AsyncIterator[MakeJudge]:
    judges: list[AnthropicJudge] = []

    def make(**policy: float) -> AnthropicJudge:
        settings = {"deadline_s": 5.0, "backoff_base_s": 0.01, "backoff_max_s": 0.05, **policy}
        judge = AnthropicJudge(
            api_key=PLANTED_KEY,
            model="claude-test-model",
            base_url=server.base_url,
            policy=CallPolicy(**settings),  # type: ignore[arg-type]
        )
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        await judge.aclose()


def sent_key(received: ReceivedRequest) -> str:
    """The credential the SDK sent (``x-api-key`` or, in newer SDKs, a bearer token)."""
    if "x-api-key" in received.headers:
        return received.headers["x-api-key"]
    return received.headers.get("authorization", "").removeprefix("Bearer ")


def reply(value: object, reasoning: str = "looked at every message") -> Behaviour:
    return Behaviour.answer(json.dumps({"reasoning": reasoning, "value": value}))


#: a persona long enough to be worth a cache entry of its own
LONG_PERSONA = make_persona().model_copy(update={"background": "Twelve years of paper sales in Scranton. " * 20})
#: a conversation long enough that system text + evidence pass the minimum cacheable length (1,024 tokens)
LONG = make_events(60)
MARK = {"type": "ephemeral"}


def marked(body: dict[str, Any]) -> list[bool]:
    return ["cache_control" in block for block in body["messages"][0]["content"]]


async def test_success_sends_a_cached_temperature_zero_request(
    server: MessagesApiServer, make_judge: MakeJudge
) -> None:
    judge = make_judge()
    result = await judge.evaluate(make_request(events=LONG[:40], persona=LONG_PERSONA))
    assert result.judge == "anthropic:claude-test-model"
    assert result.answers[0].value == 7
    assert result.calls == 1
    assert result.usage.output_tokens > 0 and result.usage.cache_creation_input_tokens > 0
    assert result.prompt_chars > result.cacheable_prefix_chars > 0
    (received,) = server.requests
    body = received.body
    assert body["model"] == "claude-test-model"
    assert body["temperature"] == 0
    assert body["system"][0]["cache_control"] == MARK
    *evidence, draft, about, new = body["messages"][0]["content"]
    assert len(evidence) == 41 and "message number 2" in evidence[3]["text"]  # the opening, then one per event
    assert marked(body) == [False] * 40 + [True, False, False, False]  # the next check reads the evidence
    assert "bowling" in draft["text"] and "<persona>" in about["text"] and "<claims" in new["text"]
    assert sent_key(received) == PLANTED_KEY


async def test_the_next_check_reads_the_conversation_and_writes_only_what_is_new(make_judge: MakeJudge) -> None:
    judge = make_judge()
    first = await judge.evaluate(make_request(events=LONG[:40], action="first draft", persona=LONG_PERSONA))
    other_agent = await judge.evaluate(make_request(events=LONG[:42], target_name="Dwight", agent_id="dwight"))
    assert first.usage.cache_read_input_tokens == 0
    assert other_agent.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens > 0
    assert 0 < other_agent.usage.cache_creation_input_tokens < 40  # two short events


async def test_below_the_minimum_cacheable_length_nothing_is_cached(make_judge: MakeJudge) -> None:
    judge = make_judge()
    for action in ("first draft", "second draft"):
        usage = (await judge.evaluate(make_request(action=action))).usage  # about 1,000 tokens in all
        assert usage.cache_read_input_tokens == usage.cache_creation_input_tokens == 0


async def test_a_staged_draft_shares_its_evidence_draft_and_persona(
    server: MessagesApiServer, make_judge: MakeJudge
) -> None:
    judge = make_judge()
    draft = {"events": LONG[:40], "share_history": True, "action": "same draft"}
    first = await judge.evaluate(make_request(claims=2, persona=LONG_PERSONA, **draft))  # type: ignore[arg-type]
    persona = await judge.evaluate(make_request(claims=3, persona=LONG_PERSONA, **draft))  # type: ignore[arg-type]
    plain = await judge.evaluate(make_request(claims=4, **draft))  # type: ignore[arg-type]
    assert marked(server.requests[0].body)[-4:] == [True, True, True, False]  # evidence, draft, persona
    assert marked(server.requests[2].body)[-4:] == [True, True, False, False]  # no persona: nothing to share
    assert persona.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert persona.usage.cache_creation_input_tokens == 0
    assert plain.usage.cache_read_input_tokens < persona.usage.cache_read_input_tokens  # up to the draft
    assert plain.usage.cache_creation_input_tokens == 0  # its last breakpoint is the draft, already cached
    assert persona.usage.input_tokens < first.usage.cache_creation_input_tokens / 8  # only the claims are new


async def test_a_double_check_reads_its_whole_first_turn(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    judge = make_judge()
    result = await judge.evaluate(make_request(events=LONG[:40], double_check=True))
    first = server.requests[0].body
    assert marked(first)[-4:] == [True, False, False, True]  # evidence, new
    assert result.calls == 2 and result.usage.cache_read_input_tokens > 0


async def test_never_more_than_four_breakpoints(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    """Evidence, new part, draft, persona and the head of a windowed trajectory all want one; the head and the
    system text give way (Anthropic refuses a fifth)."""
    judge = make_judge()
    request = make_request(events=LONG[:15], first_part=5, omitted=30, persona=LONG_PERSONA, share_history=True,
                           double_check=True)  # fmt: skip
    assert (await judge.evaluate(request)).calls == 2
    body = server.requests[0].body
    assert marked(body) == [False] * 16 + [True, True, True, True] and "cache_control" not in body["system"][0]
    windowed = make_request(events=LONG[:15], first_part=5, omitted=30)
    await judge.evaluate(windowed)
    assert [i for i, m in enumerate(marked(server.requests[-1].body)) if m] == [5, 16]  # the head, the evidence
    assert server.requests[-1].body["system"][0]["cache_control"] == MARK


@pytest.mark.parametrize(
    "failure",
    [Behaviour.rate_limited(), Behaviour.overloaded(), Behaviour.server_error(500)],
    ids=["429", "529", "500"],
)
async def test_transient_failure_then_success(
    server: MessagesApiServer, make_judge: MakeJudge, failure: Behaviour
) -> None:
    server.enqueue(failure, reply(6))
    result = await make_judge().evaluate(make_request())
    assert result.answers[0].value == 6
    assert len(server.requests) == 2
    assert result.calls == 1  # the failed attempt returned no answer


async def test_gives_up_after_max_attempts(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.default = Behaviour.overloaded()
    with pytest.raises(JudgeError, match="gave up after 3 attempts: HTTP 529 overloaded_error"):
        await make_judge(max_attempts=3).evaluate(make_request())
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour(status=400, error_type="invalid_request_error"))
    with pytest.raises(JudgeError, match="refused the request"):
        await make_judge().evaluate(make_request())
    assert len(server.requests) == 1


async def test_deadline_covers_the_whole_call(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.default = Behaviour.slow(2.0)
    started = time.perf_counter()
    with pytest.raises(JudgeTimeout, match=r"0\.3 s"):
        await make_judge(deadline_s=0.3).evaluate(make_request())
    assert time.perf_counter() - started < 1.0


async def test_deadline_includes_retries(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.default = Behaviour.rate_limited(retry_after=0.2)
    with pytest.raises(JudgeTimeout):
        await make_judge(deadline_s=0.3, backoff_max_s=0.2, max_attempts=50).evaluate(make_request())
    assert 1 <= len(server.requests) <= 3


async def test_malformed_answer_gets_one_repair_turn(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour.malformed("Looks good, I'd say seven."), reply(7))
    result = await make_judge().evaluate(make_request())
    assert result.answers[0].value == 7
    assert result.calls == 2
    repair = server.requests[1].body["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert repair[1]["content"] == "Looks good, I'd say seven."
    assert "could not be used" in repair[2]["content"]


async def test_malformed_twice_is_an_output_error(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour.malformed(), Behaviour.malformed())
    with pytest.raises(JudgeOutputError, match="after one repair turn"):
        await make_judge().evaluate(make_request())
    assert len(server.requests) == 2


async def test_out_of_range_value_is_repaired_or_rejected(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour.auto(value=12), reply(4))
    assert (await make_judge().evaluate(make_request())).answers[0].value == 4
    assert "not 12" in server.requests[1].body["messages"][2]["content"]
    server.enqueue(Behaviour.auto(value=12), Behaviour.auto(value=12))
    with pytest.raises(JudgeOutputError, match="not 12"):
        await make_judge().evaluate(make_request())


def values_by_id(received: ReceivedRequest) -> Behaviour:
    """A batch reply listing the claims in reverse order with value = claim number % 10."""
    new = received.body["messages"][0]["content"][-1]["text"]  # the claims come last, after the evidence
    ids = [line.split('"')[1] for line in new.splitlines() if line.startswith("[")]
    results = [{"id": i, "reasoning": "r", "value": int(i.rsplit("-", 1)[1]) % 10} for i in reversed(ids)]
    return Behaviour.answer(json.dumps({"results": results}))


@pytest.mark.parametrize("count", [3, 10])
async def test_batch_returns_one_answer_per_claim(make_judge: MakeJudge, count: int) -> None:
    async with MessagesApiServer(values_by_id) as batch_server:
        judge = AnthropicJudge(api_key=PLANTED_KEY, base_url=batch_server.base_url)
        try:
            result = await judge.evaluate(make_request(claims=count))
        finally:
            await judge.aclose()
    assert [a.claim_id for a in result.answers] == [f"claim-{i}" for i in range(count)]
    assert [a.value for a in result.answers] == [i % 10 for i in range(count)]
    assert len(batch_server.requests) == 1


async def test_default_fake_answers_batches_of_every_mode(make_judge: MakeJudge) -> None:
    judge = make_judge()
    scores = await judge.evaluate(make_request(claims=4))
    checks = await judge.evaluate(make_request(JudgeMode.CHECK, claims=2))
    ideas = await judge.evaluate(make_request(JudgeMode.ENUMERATE))
    assert [a.value for a in scores.answers] == [7, 7, 7, 7]
    assert [a.value for a in checks.answers] == [True, True]
    assert ideas.answers[0].value == 2 and ideas.answers[0].items == ("first idea", "second idea")


async def test_double_check_replaces_the_value(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.enqueue(reply(8, "generous first look"), reply(5, "stricter second look"))
    result = await make_judge().evaluate(make_request(double_check=True, persona=LONG_PERSONA))
    answer = result.answers[0]
    assert (answer.value, answer.first_value) == (5, 8)
    assert answer.reasoning == "stricter second look"
    assert result.calls == 2
    second = server.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[2]["content"] == double_check_turn()
    assert result.usage.input_tokens > 0 and result.usage.cache_read_input_tokens > 0


async def test_double_check_after_a_repair_keeps_the_whole_conversation(
    server: MessagesApiServer, make_judge: MakeJudge
) -> None:
    server.enqueue(Behaviour.malformed(), reply(8), reply(6))
    answer = (await make_judge().evaluate(make_request(double_check=True))).answers[0]
    assert (answer.value, answer.first_value) == (6, 8)
    roles = [m["role"] for m in server.requests[2].body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]


async def test_concurrency_cap(server: MessagesApiServer, make_judge: MakeJudge) -> None:
    server.default = Behaviour.slow(0.15)
    judge = make_judge(concurrency=2)
    started = time.perf_counter()
    await asyncio.gather(*(judge.evaluate(make_request()) for _ in range(4)))
    assert time.perf_counter() - started >= 0.29  # two waves of two


async def test_key_never_leaks(
    server: MessagesApiServer, make_judge: MakeJudge, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    judge = make_judge(max_attempts=2)
    server.enqueue(Behaviour.rate_limited(), reply(3), Behaviour.malformed(), Behaviour.malformed())
    server.enqueue(Behaviour(status=401, error_type="authentication_error"))
    errors: list[BaseException] = []
    await judge.evaluate(make_request())
    for _ in range(2):
        try:
            await judge.evaluate(make_request())
        except JudgeError as error:
            errors.append(error)
    assert len(errors) == 2
    assert sent_key(server.requests[0]) == PLANTED_KEY  # the key was really used
    texts = [repr(judge), str(judge), judge.name, caplog.text, *(f"{e!s} {e!r}" for e in errors)]
    texts += [str(e.__cause__) for e in errors] + [str(e.__context__) for e in errors if not e.__suppress_context__]
    assert caplog.records  # logging really was captured
    for text in texts:
        assert PLANTED_KEY not in text


def test_missing_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        AnthropicJudge(api_key="")
