"""A :class:`~engine.llm.base.TextModel` over ``POST {base_url}/chat/completions`` (vLLM, Ollama, llama.cpp…).

The same HTTP path as the OpenAI-compatible judge (httpx; 429, 5xx, transport errors and malformed bodies
are retried under :class:`engine.llm.policed.PolicedTextModel`'s policy; other statuses fail at once). The
optional API key is a bearer token and never appears in the name, repr, errors or logs.
"""

from __future__ import annotations

import random
from typing import Any

import httpx

from engine.errors import JudgeError
from engine.judges.llm import CallPolicy, TransientCallError, parse_retry_after
from engine.llm.base import CompletionRequest
from engine.llm.policed import PolicedTextModel
from engine.models import TokenUsage


class OpenAICompatibleTextModel(PolicedTextModel):
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        policy: CallPolicy | None = None,
        rng: random.Random | None = None,
    ) -> None:
        policy = policy or CallPolicy(deadline_s=60.0)
        super().__init__(f"openai-compatible:{model}", policy, rng=rng)
        self._model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=policy.deadline_s)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, request: CompletionRequest) -> tuple[str, TokenUsage]:
        system = [{"role": "system", "content": request.system}] if request.system else []
        payload = {
            "model": self._model,
            "temperature": request.temperature,
            "max_tokens": request.max_tokens,
            "messages": [*system, *({"role": m.role, "content": m.content} for m in request.messages)],
        }
        return await chat_completion(self._http, self.name, payload, retry_malformed=True)


async def chat_completion(
    http: httpx.AsyncClient, name: str, payload: dict[str, Any], *, retry_malformed: bool
) -> tuple[str, TokenUsage]:
    """One ``chat/completions`` call (the judge's and the text model's): the reply text and its usage. 429,
    5xx and transport errors raise :class:`TransientCallError`, another refusal :class:`JudgeError`; a body
    that is not a chat completion is transient when ``retry_malformed``, else a :class:`JudgeError`."""
    try:
        response = await http.post("chat/completions", json=payload)
    except httpx.TransportError as error:
        raise TransientCallError(f"connection failed ({type(error).__name__})") from None
    status = response.status_code
    if status == 429 or status >= 500:
        raise TransientCallError(f"HTTP {status}", parse_retry_after(response.headers.get("retry-after")))
    if status >= 400:
        raise JudgeError(f"{name}: the server refused the request (HTTP {status})")
    try:
        data = response.json()
        content = data["choices"][0]["message"].get("content")
        usage = data.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        if retry_malformed:
            raise TransientCallError("malformed chat-completions response") from None
        raise JudgeError(f"{name}: the server sent a malformed chat-completions response") from None
    return (content if isinstance(content, str) else ""), _usage(usage)


def _usage(usage: Any) -> TokenUsage:
    if not isinstance(usage, dict):
        return TokenUsage()

    def count(value: object) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

    details = usage.get("prompt_tokens_details")
    cached = count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return TokenUsage(
        input_tokens=max(count(usage.get("prompt_tokens")) - cached, 0),
        output_tokens=count(usage.get("completion_tokens")),
        cache_read_input_tokens=cached,
    )
