"""The Anthropic judge: the Messages API through the official ``anthropic`` SDK, with prompt caching.

Request layout: the system text is one text block marked ``cache_control: ephemeral``; the first user turn
holds the per-target prefix (also marked, so system + prefix form the cached prefix) followed by the
per-call evidence block. Temperature is 0; it is sent as an extra body field because the installed SDK has
no ``temperature`` parameter any more (``temperature=None`` omits it). The SDK's own retries are switched off
(``max_retries=0``): the retry, deadline, repair and double-check policy is
:class:`engine.judges.llm.LlmJudge`'s.

The API key is only taken from the ``api_key`` argument (the factory reads ``ANTHROPIC_API_KEY``). It is
never part of the name, the repr, an error message or a log record.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import anthropic
from anthropic.types import (
    AssistantMessageParam,
    CacheControlEphemeralParam,
    MessageParam,
    TextBlock,
    TextBlockParam,
    UserMessageParam,
)

from engine.errors import ConfigurationError, JudgeError
from engine.judges.llm import CallPolicy, LlmJudge, Reply, TransientCallError, Turn, parse_retry_after
from engine.models import TokenUsage
from engine.prompts import Prompt
from engine.settings import DEFAULT_ANTHROPIC_MODEL

_RETRYABLE_TYPES = {"overloaded_error", "rate_limit_error", "api_error"}
_CACHED = CacheControlEphemeralParam(type="ephemeral")


class AnthropicJudge(LlmJudge):
    """Answers judge requests with a Claude model; ``base_url`` points it at a compatible server."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = DEFAULT_ANTHROPIC_MODEL,
        base_url: str | None = None,
        policy: CallPolicy | None = None,
        max_tokens: int = 2048,
        temperature: float | None = 0.0,
        rng: random.Random | None = None,
    ) -> None:
        if not api_key:
            raise ConfigurationError("the Anthropic judge needs an API key (ANTHROPIC_API_KEY is not set)")
        policy = policy or CallPolicy()
        super().__init__(f"anthropic:{model}", policy, rng=rng)
        self._model = model
        self._max_tokens = max_tokens
        # The installed SDK no longer has a ``temperature`` parameter; the API field is sent as an extra.
        self._extra_body = {"temperature": temperature} if temperature is not None else None
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=policy.deadline_s
        )

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._client.close()

    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        try:
            message = await self._client.messages.create(
                model=self._model,
                max_tokens=self._max_tokens,
                system=[TextBlockParam(type="text", text=prompt.system, cache_control=_CACHED)],
                messages=_messages(prompt, followups),
                extra_body=self._extra_body,
            )
        except anthropic.APIStatusError as error:
            raise self._status_error(error) from None
        except anthropic.APIConnectionError as error:
            raise TransientCallError(f"connection failed ({type(error).__name__})") from None
        except anthropic.AnthropicError as error:
            raise JudgeError(f"{self.name}: the API call failed ({type(error).__name__})") from None
        except ValueError as error:  # a truncated or non-JSON body: the SDK's json decode error; worth a retry
            raise TransientCallError(f"unreadable response body ({type(error).__name__})") from None
        text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
        usage = message.usage
        return Reply(
            text=text,
            usage=TokenUsage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_input_tokens=usage.cache_read_input_tokens or 0,
                cache_creation_input_tokens=usage.cache_creation_input_tokens or 0,
            ),
        )

    def _status_error(self, error: anthropic.APIStatusError) -> JudgeError:
        status = error.status_code
        kind = _error_type(error.body)
        reason = f"HTTP {status}" + (f" {kind}" if kind else "")
        if status == 429 or status >= 500 or kind in _RETRYABLE_TYPES:
            return TransientCallError(reason, parse_retry_after(error.response.headers.get("retry-after")))
        return JudgeError(f"{self.name}: the API refused the request ({reason})")


def _messages(prompt: Prompt, followups: Sequence[Turn]) -> list[MessageParam]:
    messages: list[MessageParam] = [
        UserMessageParam(
            role="user",
            content=[
                TextBlockParam(type="text", text=prompt.prefix, cache_control=_CACHED),
                TextBlockParam(type="text", text=prompt.variable),
            ],
        )
    ]
    for role, text in followups:
        if role == "assistant":
            messages.append(AssistantMessageParam(role="assistant", content=text))
        else:
            messages.append(UserMessageParam(role="user", content=text))
    return messages


def _error_type(body: object) -> str | None:
    """The ``error.type`` of an Anthropic error body, if it has one."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return str(error["type"])
    return None
