"""The OpenAI-compatible judge: ``POST {base_url}/chat/completions`` over httpx (vLLM, Ollama, llama.cpp …).

Messages are ``[system, user(about + history + new), follow-ups…]`` at temperature 0, in the cache order of
:mod:`engine.prompts` (stable parts first: servers with automatic prefix caching, such as vLLM's, reuse
them), under the same deadline, retry, repair and double-check policy as the Anthropic judge
(:class:`engine.judges.llm.LlmJudge`). HTTP 429 and 5xx and transport errors are retried; other statuses fail at once.

Usage comes from ``usage.prompt_tokens`` / ``usage.completion_tokens``. Servers that report
``usage.prompt_tokens_details.cached_tokens`` get those counted as cache reads, and (as with Anthropic)
``input_tokens`` then holds only the uncached part. The optional API key (``OPENAI_API_KEY``, read by the
factory) is sent as a bearer token and never appears in the name, repr, errors or logs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import httpx

from engine.judges.llm import CallPolicy, LlmJudge, Reply, Turn
from engine.llm.openai_compat import chat_completion
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
            {"role": "user", "content": prompt.user_text()},
            *({"role": role, "content": text} for role, text in followups),
        ]
        payload = {
            "model": self._model,
            "temperature": 0,
            "max_tokens": self._max_tokens,
            "messages": messages,
        }
        text, usage = await chat_completion(self._http, self.name, payload, retry_malformed=False)
        return Reply(text=text, usage=usage)
