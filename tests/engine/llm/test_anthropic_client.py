"""The Anthropic judge and actor talk through aiohttp's connection pool, not httpcore's (whose per-request scan
of every pooled connection made the LLM gate fall behind under parallel calls: BENCHMARKS.md, issue 28)."""

from __future__ import annotations

import anthropic

from engine.judges.anthropic import AnthropicJudge
from engine.judges.llm import CallPolicy
from engine.llm.anthropic import AnthropicTextModel, async_client


def _transport(client: anthropic.AsyncAnthropic) -> object:
    return client._client  # the SDK's HTTP client (an SDK attribute; this test pins what we pass it)


async def test_the_client_uses_the_sdks_aiohttp_transport_with_its_own_retries_off() -> None:
    client = async_client(api_key="k", base_url="http://127.0.0.1:9", deadline_s=7.0)
    try:
        assert isinstance(_transport(client), anthropic.DefaultAioHttpClient)
        assert client.max_retries == 0 and client.timeout == 7.0
    finally:
        await client.close()


async def test_the_judge_and_the_actor_are_built_on_it() -> None:
    judge = AnthropicJudge(api_key="k", base_url="http://127.0.0.1:9", policy=CallPolicy(deadline_s=3.0))
    actor = AnthropicTextModel(api_key="k", base_url="http://127.0.0.1:9")
    try:
        for model in (judge, actor):
            assert isinstance(_transport(model._client), anthropic.DefaultAioHttpClient)
    finally:
        await judge.aclose()
        await actor.aclose()
