"""The OpenAI-compatible judge against the local chat-completions test double."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Callable

import pytest

from engine.errors import JudgeError, JudgeOutputError, JudgeTimeout
from engine.judges.base import JudgeMode
from engine.judges.llm import CallPolicy
from engine.judges.openai_compat import OpenAICompatibleJudge
from engine.prompts import double_check_turn
from ops.fakes.chat_completions import ChatCompletionsServer
from ops.fakes.judge_requests import make_request
from ops.fakes.server import Behaviour

PLANTED_KEY = "sk-openai-PLANTED-4b2f-do-not-leak"
MakeJudge = Callable[..., OpenAICompatibleJudge]


@pytest.fixture
async def server() -> AsyncIterator[ChatCompletionsServer]:
    async with ChatCompletionsServer() as fake:
        yield fake


@pytest.fixture
async def make_judge(server: ChatCompletionsServer) -> AsyncIterator[MakeJudge]:
    judges: list[OpenAICompatibleJudge] = []

    def make(api_key: str | None = PLANTED_KEY, **policy: float) -> OpenAICompatibleJudge:
        settings = {"deadline_s": 5.0, "backoff_base_s": 0.01, "backoff_max_s": 0.05, **policy}
        judge = OpenAICompatibleJudge(
            base_url=server.base_url,
            model="local-judge",
            api_key=api_key,
            policy=CallPolicy(**settings),  # type: ignore[arg-type]
        )
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        await judge.aclose()


def reply(value: object, reasoning: str = "checked") -> Behaviour:
    return Behaviour.answer(json.dumps({"reasoning": reasoning, "value": value}))


async def test_success_request_shape(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    result = await make_judge().evaluate(make_request())
    assert result.judge == "openai-compatible:local-judge"
    assert result.answers[0].value == 7
    assert result.usage.input_tokens > 0 and result.usage.output_tokens > 0
    (received,) = server.requests
    assert received.path == "/v1/chat/completions"
    assert received.body["temperature"] == 0 and received.body["model"] == "local-judge"
    messages = received.body["messages"]
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "# The scale" in messages[0]["content"]
    assert "<claims" in messages[1]["content"] and "<data-" in messages[1]["content"]
    user = messages[1]["content"]  # the cache order of engine.prompts: evidence, draft, target, then the claims
    assert user.index("# Evidence") < user.index("### judged action") < user.index("# Target") < user.index("<claims")
    assert received.headers["authorization"] == f"Bearer {PLANTED_KEY}"


async def test_no_key_sends_no_authorization(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    await make_judge(api_key=None).evaluate(make_request())
    assert "authorization" not in server.requests[0].headers


async def test_cached_tokens_are_reported_as_cache_reads() -> None:
    async with ChatCompletionsServer(cached_tokens=100) as fake:
        judge = OpenAICompatibleJudge(base_url=fake.base_url, model="m")
        try:
            usage = (await judge.evaluate(make_request())).usage
        finally:
            await judge.aclose()
    assert usage.cache_read_input_tokens == 100
    total_prompt = -(-len("\n".join(str(m["content"]) for m in fake.requests[0].body["messages"])) // 4)
    assert usage.input_tokens == total_prompt - 100


@pytest.mark.parametrize("failure", [Behaviour.rate_limited(), Behaviour.server_error(503)], ids=["429", "503"])
async def test_transient_failure_then_success(
    server: ChatCompletionsServer, make_judge: MakeJudge, failure: Behaviour
) -> None:
    server.enqueue(failure, reply(2))
    result = await make_judge().evaluate(make_request())
    assert result.answers[0].value == 2
    assert len(server.requests) == 2


async def test_client_error_is_not_retried(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour(status=404, error_type="not_found"))
    with pytest.raises(JudgeError, match="HTTP 404"):
        await make_judge().evaluate(make_request())
    assert len(server.requests) == 1


async def test_timeout(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    server.default = Behaviour.slow(2.0)
    started = time.perf_counter()
    with pytest.raises(JudgeTimeout):
        await make_judge(deadline_s=0.3).evaluate(make_request())
    assert time.perf_counter() - started < 1.0


async def test_repair_then_success_and_repair_failure(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    server.enqueue(Behaviour.malformed(), reply(5))
    assert (await make_judge().evaluate(make_request())).answers[0].value == 5
    roles = [m["role"] for m in server.requests[1].body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]
    server.enqueue(Behaviour.auto(value=12), Behaviour.auto(value=12))
    with pytest.raises(JudgeOutputError, match="not 12"):
        await make_judge().evaluate(make_request())


async def test_batch_and_check_modes(make_judge: MakeJudge) -> None:
    judge = make_judge()
    batch = await judge.evaluate(make_request(claims=3))
    assert [a.claim_id for a in batch.answers] == ["claim-0", "claim-1", "claim-2"]
    checks = await judge.evaluate(make_request(JudgeMode.CHECK, claims=2))
    assert [a.value for a in checks.answers] == [True, True]


async def test_double_check(server: ChatCompletionsServer, make_judge: MakeJudge) -> None:
    server.enqueue(reply(9), reply(6))
    answer = (await make_judge().evaluate(make_request(double_check=True))).answers[0]
    assert (answer.value, answer.first_value) == (6, 9)
    assert server.requests[1].body["messages"][-1]["content"] == double_check_turn()


async def test_malformed_response_body_is_a_judge_error(
    server: ChatCompletionsServer, make_judge: MakeJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "_success_body", lambda body, text, state=None: {"choices": []})
    with pytest.raises(JudgeError, match="malformed"):
        await make_judge().evaluate(make_request())


async def test_key_never_leaks(
    server: ChatCompletionsServer, make_judge: MakeJudge, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    judge = make_judge(max_attempts=2)
    server.enqueue(Behaviour.rate_limited(), reply(3), Behaviour(status=401, error_type="auth"))
    await judge.evaluate(make_request())
    with pytest.raises(JudgeError) as caught:
        await judge.evaluate(make_request())
    assert caplog.records
    for text in (repr(judge), str(judge), judge.name, caplog.text, str(caught.value), repr(caught.value)):
        assert PLANTED_KEY not in text
