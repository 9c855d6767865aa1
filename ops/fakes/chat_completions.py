"""A local stand-in for an OpenAI-compatible ``POST /v1/chat/completions`` endpoint — a test double.

Same behaviour script and automatic answers as :mod:`ops.fakes.messages_api`; ``base_url`` ends in ``/v1``
as vLLM, Ollama and llama.cpp expose it. Usage is estimated at one token per four characters.
"""

from __future__ import annotations

import itertools
from typing import Any

from ops.fakes.server import Behaviour, FakeLlmServer, estimate_tokens

_ids = itertools.count(1)


class ChatCompletionsServer(FakeLlmServer):
    """Fake chat-completions server; ``base_url`` is what the openai-compatible judge takes."""

    route = "/v1/chat/completions"

    def __init__(self, *args: Any, cached_tokens: int = 0, **kwargs: Any) -> None:
        """``cached_tokens`` > 0 adds ``usage.prompt_tokens_details.cached_tokens`` (as vLLM reports it)."""
        super().__init__(*args, **kwargs)
        self.cached_tokens = cached_tokens

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def prompt_text(self, body: dict[str, Any]) -> str:
        messages = body.get("messages", [])
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))

    def _error_body(self, behaviour: Behaviour) -> dict[str, Any]:
        return {"error": {"type": behaviour.error_type, "message": f"fake server: {behaviour.error_type}"}}

    def _success_body(self, body: dict[str, Any], text: str, state: Any = None) -> dict[str, Any]:
        prompt_tokens = estimate_tokens(len(self.prompt_text(body)))
        completion_tokens = estimate_tokens(len(text))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cached_tokens, prompt_tokens)}
        return {
            "id": f"chatcmpl-fake-{next(_ids)}",
            "object": "chat.completion",
            "model": body.get("model", "unknown"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": usage,
        }
