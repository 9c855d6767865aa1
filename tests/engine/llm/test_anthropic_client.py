"""The Anthropic judge and actor talk through aiohttp's connection pool, not httpcore's (whose per-request scan
of every pooled connection made the LLM gate fall behind under parallel calls: BENCHMARKS.md, issue 28)."""

from __future__ import annotations

from types import SimpleNamespace

import anthropic
import pytest

from engine.judges.anthropic import AnthropicJudge
from engine.judges.llm import CallPolicy, TransientCallError
from engine.llm.anthropic import AnthropicTextModel, async_client, create_message


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


class _RawBody:
    """Stands in for the SDK's client: ``messages.with_raw_response.create`` answers with ``body``."""

    def __init__(self, body: bytes) -> None:
        response = SimpleNamespace(aread=self._read)
        self._body = body
        raw = SimpleNamespace(create=self._create)
        self.messages = SimpleNamespace(with_raw_response=raw)
        self._response = SimpleNamespace(http_response=response)

    async def _read(self) -> bytes:
        return self._body

    async def _create(self, **params: object) -> object:
        return self._response


async def test_a_reply_body_is_read_for_its_text_blocks_and_usage() -> None:
    body = (b'{"content": [{"type": "text", "text": "{\\"a\\": "}, {"type": "thinking", "thinking": "x"},'
            b' {"type": "text", "text": "1}"}], "usage": {"input_tokens": 12, "output_tokens": 3,'
            b' "cache_read_input_tokens": null, "cache_creation_input_tokens": 5}}')  # fmt: skip
    text, usage = await create_message(_RawBody(body), "anthropic:m", model="m")  # type: ignore[arg-type]
    assert text == '{"a": 1}'
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_input_tokens,
            usage.cache_creation_input_tokens) == (12, 3, 0, 5)  # fmt: skip


@pytest.mark.parametrize("body", [b'{"content": []}', b'{"content": 3, "usage": {}}', b"[]", b'{"content": [{"ty'])
async def test_a_reply_body_without_its_fields_is_an_unreadable_body_worth_a_retry(body: bytes) -> None:
    with pytest.raises(TransientCallError, match="unreadable response body"):
        await create_message(_RawBody(body), "anthropic:m", model="m")  # type: ignore[arg-type]
