"""A :class:`~engine.llm.base.TextModel` over the Anthropic Messages API, through the official SDK.

The SDK's own retries are off (``max_retries=0``): :class:`engine.llm.policed.PolicedTextModel` applies the
judges' call policy. The system text is one block marked ``cache_control: ephemeral`` (a persona's actor
prompt repeats on every turn). The API key comes only from the ``api_key`` argument and never appears in the
name, repr, errors or logs.
"""

from __future__ import annotations

import random
from typing import Any

import anthropic
import orjson
from anthropic.types import (
    AssistantMessageParam,
    CacheControlEphemeralParam,
    MessageParam,
    TextBlockParam,
    UserMessageParam,
)

from engine.errors import ConfigurationError, JudgeError
from engine.judges.llm import CallPolicy, TransientCallError, parse_retry_after
from engine.llm.base import CompletionRequest
from engine.llm.policed import PolicedTextModel
from engine.models import TokenUsage
from engine.settings import DEFAULT_ANTHROPIC_MODEL

_RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error"}
CACHED = CacheControlEphemeralParam(type="ephemeral")


def async_client(*, api_key: str, base_url: str | None, deadline_s: float | None) -> anthropic.AsyncAnthropic:
    """The SDK's client on aiohttp's connection pool (the SDK's ``DefaultAioHttpClient``), its own retries off.

    The SDK's default transport (httpx with httpcore's pool) checks every pooled connection on every request it
    assigns and every response it closes, probing each idle socket with a system call: the cost of a call
    grows with the pool, and under a burst of parallel judge calls the pool grew, each call got slower, more
    calls overlapped and the pool grew again (``python -m ops.bench.gate llm``: the gate fell to about 30
    drafts/s with 150-220 open sockets, p50 20x one judge call; BENCHMARKS.md). aiohttp's connector hands
    out an idle connection without scanning the pool."""
    return anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=deadline_s,
                                    http_client=anthropic.DefaultAioHttpClient())  # fmt: skip


class AnthropicTextModel(PolicedTextModel):
    """Claude through ``anthropic.AsyncAnthropic``; ``base_url`` points it at a compatible server."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_ANTHROPIC_MODEL,
        base_url: str | None = None,
        policy: CallPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the Anthropic text model needs an API key (ANTHROPIC_API_KEY is not set)")
        policy = policy or CallPolicy(deadline_s=60.0)
        super().__init__(f"anthropic:{model}", policy, rng=rng)
        self._model = model
        self._client = async_client(api_key=api_key, base_url=base_url, deadline_s=policy.deadline_s)

    async def aclose(self) -> None:
        await self._client.close()

    async def _send(self, request: CompletionRequest) -> tuple[str, TokenUsage]:
        system = [TextBlockParam(type="text", text=request.system, cache_control=CACHED)] if request.system else []
        messages: list[MessageParam] = [
            UserMessageParam(role="user", content=m.content)
            if m.role == "user"
            else AssistantMessageParam(role="assistant", content=m.content)
            for m in request.messages
        ]
        return await create_message(
            self._client,
            self.name,
            model=self._model,
            max_tokens=request.max_tokens,
            system=system,
            messages=messages,
            extra_body={"temperature": request.temperature},
        )


async def create_message(client: anthropic.AsyncAnthropic, name: str, **params: Any) -> tuple[str, TokenUsage]:
    """One Messages API call (the judge's and the text model's): the reply text and its usage. Rate limits,
    overload, 5xx, connection failures and unreadable bodies raise :class:`TransientCallError`; any other
    failure :class:`JudgeError` naming ``name`` (never the key).

    The SDK builds, sends and checks the request (status errors included); the body is read with orjson rather
    than into the SDK's response models, which cost about a quarter of a call's CPU in the worker for two fields
    (``python -m ops.bench.gate llm``, BENCHMARKS.md)."""
    try:
        raw = await client.messages.with_raw_response.create(**params)
        body = await raw.http_response.aread()
    except anthropic.APIStatusError as error:
        raise _status_error(name, error) from None
    except anthropic.APIConnectionError as error:
        raise TransientCallError(f"connection failed ({type(error).__name__})") from None
    except anthropic.AnthropicError as error:
        raise JudgeError(f"{name}: the API call failed ({type(error).__name__})") from None
    try:
        return _reply(orjson.loads(body))
    except (ValueError, KeyError, TypeError) as error:  # a truncated, non-JSON or malformed body: worth a retry
        raise TransientCallError(f"unreadable response body ({type(error).__name__})") from None


def _reply(body: dict[str, Any]) -> tuple[str, TokenUsage]:
    """The text blocks and the usage of a Messages API response body."""
    text = "".join(block["text"] for block in body["content"] if block.get("type") == "text")
    usage = body["usage"]
    return text, TokenUsage(
        input_tokens=usage["input_tokens"],
        output_tokens=usage["output_tokens"],
        cache_read_input_tokens=usage.get("cache_read_input_tokens") or 0,
        cache_creation_input_tokens=usage.get("cache_creation_input_tokens") or 0,
    )


def _status_error(name: str, error: anthropic.APIStatusError) -> JudgeError:
    status = error.status_code
    kind = _error_type(error.body)
    reason = f"HTTP {status}" + (f" {kind}" if kind else "")
    if status == 429 or status >= 500 or kind in _RETRYABLE_TYPES:
        return TransientCallError(reason, parse_retry_after(error.response.headers.get("retry-after")))
    return JudgeError(f"{name}: the API refused the request ({reason})")


def _error_type(body: object) -> str | None:
    """The ``error.type`` of an Anthropic error body, if it has one."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None
