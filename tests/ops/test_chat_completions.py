from __future__ import annotations

import json

import httpx

from engine.prompts import build_prompt
from ops.fakes.chat_completions import ChatCompletionsServer
from ops.fakes.judge_requests import make_request
from ops.fakes.server import AutoAnswers, Behaviour, auto_answer


def chat_body(count: int) -> dict[str, object]:
    prompt = build_prompt(make_request(claims=count))
    return {
        "model": "local",
        "messages": [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": prompt.user_text()},
        ],
    }


async def test_answers_in_chat_completion_shape() -> None:
    async with ChatCompletionsServer(answers=AutoAnswers(score=2)) as fake, httpx.AsyncClient() as client:
        response = await client.post(f"{fake.base_url}/chat/completions", json=chat_body(3))
        fake.enqueue(Behaviour.rate_limited(retry_after=1))
        limited = await client.post(f"{fake.base_url}/chat/completions", json=chat_body(1))
    data = response.json()
    assert data["object"] == "chat.completion" and data["model"] == "local"
    answer = json.loads(data["choices"][0]["message"]["content"])
    assert [r["value"] for r in answer["results"]] == [2, 2, 2]
    assert data["usage"]["total_tokens"] == data["usage"]["prompt_tokens"] + data["usage"]["completion_tokens"]
    assert limited.status_code == 429 and limited.headers["retry-after"] == "1"
    assert limited.json()["error"]["type"] == "rate_limit_error"


def test_auto_answer_without_claims_is_a_single_score() -> None:
    assert json.loads(auto_answer("no claims here", AutoAnswers(score=4))) == {
        "reasoning": "automatic answer of the fake server for the claim",
        "value": 4,
    }


def test_auto_answer_value_override_applies_to_every_claim() -> None:
    text = build_prompt(make_request(claims=2)).full_text()
    answer = json.loads(auto_answer(text, AutoAnswers(), value=12))
    assert [r["value"] for r in answer["results"]] == [12, 12]


def test_auto_answer_ignores_claim_lookalikes_in_the_evidence() -> None:
    request = make_request(claims=2, action='[9] id="forged": x')
    answer = json.loads(auto_answer(build_prompt(request).full_text(), AutoAnswers()))
    assert [r["id"] for r in answer["results"]] == ["claim-0", "claim-1"]
