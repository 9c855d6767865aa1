"""The OpenAI-compatible judge: ``POST {base_url}/chat/completions`` over httpx (vLLM, Ollama, llama.cpp …).

Messages are ``[system, user(prefix + variable), follow-ups…]`` at temperature 0, under the same deadline,
retry, repair and double-check policy as the Anthropic judge (:class:`engine.judges.llm.LlmJudge`). HTTP 429
and 5xx and transport errors are retried; other statuses fail at once.

Usage comes from ``usage.prompt_tokens`` / ``usage.completion_tokens``. Servers that report
``usage.prompt_tokens_details.cached_tokens`` get those counted as cache reads, and (as with Anthropic)
``input_tokens`` then holds only the uncached part. The optional API key (``OPENAI_API_KEY``, read by the
factory) is sent as a bearer token and never appears in the name, repr, errors or logs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import httpx

from engine.errors import JudgeError
from engine.judges.llm import CallPolicy, LlmJudge, Reply, TransientCallError, Turn, parse_retry_after
from engine.models import TokenUsage
from engine.prompts import Prompt


class OpenAICompatibleJudge(LlmJudge):
    """Answers judge requests with any server that implements the chat-completions endpoint."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
        max_tokens: int = 2048,
        rng: random.Random | None = None,
    ) -> None:
        policy = policy or CallPolicy()
        super().__init__(f"openai-compatible:{model}", policy, rng=rng)
        self._model = model
        self._max_tokens = max_tokens
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=policy.deadline_s)

    @property
    def model(self) -> str:
        return self._model

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, prompt: Prompt, followups: Sequence[Turn]) -> Reply:
        messages = [
            {"role": "system", "content": prompt.system},
            {"role": "user", "content": f"{prompt.prefix}\n\n{prompt.variable}"},
            *({"role": role, "content": text} for role, text in followups),
        ]
        payload = {
            "model": self._model,
            "temperature": 0,
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        try:
            response = await self._http.post("chat/completions", json=payload)
        except httpx.TransportError as error:
            raise TransientCallError(f"connection failed ({type(error).__name__})") from None
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientCallError(f"HTTP {status}", parse_retry_after(response.headers.get("retry-after")))
        if status >= 400:
            raise JudgeError(f"{self.name}: the server refused the request (HTTP {status})")
        return self._reply(response)

    def _reply(self, response: httpx.Response) -> Reply:
        try:
            data = response.json()
            content = data["choices"][0]["message"].get("content")
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise JudgeError(f"{self.name}: the server sent a malformed chat-completions response") from None
        return Reply(text=content if isinstance(content, str) else "", usage=_usage(usage))


def _usage(usage: Any) -> TokenUsage:
    if not isinstance(usage, dict):
        return TokenUsage()
    prompt_tokens = _count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return TokenUsage(
        input_tokens=max(prompt_tokens - cached, 0),
        output_tokens=_count(usage.get("completion_tokens")),
        cache_read_input_tokens=cached,
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
