"""A local stand-in for the Anthropic Messages API (``POST /v1/messages``) — a test double, not a model.

It speaks enough of the API for the real ``anthropic`` SDK: success bodies with ``content``, ``stop_reason``
and ``usage`` (including simulated prompt-cache counters), and error bodies for 429 / 5xx / 529
``overloaded_error``. Behaviours are scripted per test (see :class:`ops.fakes.server.Behaviour`); by default
it answers every claim of the judge prompt with valid JSON.

Prompt caching is accounted as the API does it (:mod:`ops.fakes.prompt_cache`): reads of the longest cached
prefix, writes up to the last ``cache_control`` breakpoint, the model's minimum cacheable length, entries
readable only once the writing response has begun, at most four breakpoints (tokens ≈ characters / 4).

Usage in tests::

    async with MessagesApiServer([Behaviour.rate_limited()]) as server:
        judge = AnthropicJudge(api_key="test", base_url=server.base_url)

Standalone (for the benchmark)::

    python -m ops.fakes.messages_api --port 8765 --delay-ms 200
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
from typing import Any

from aiohttp import web

from ops.fakes.prompt_cache import PREFILL_SHARE, PromptCache, TooManyBreakpoints, Usage
from ops.fakes.server import AutoAnswers, Behaviour, FakeLlmServer, estimate_tokens

_ids = itertools.count(1)


class MessagesApiServer(FakeLlmServer):
    """Fake Anthropic Messages API; ``base_url`` is what ``anthropic.AsyncAnthropic(base_url=...)`` takes."""

    route = "/v1/messages"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cache = PromptCache()

    @property
    def base_url(self) -> str:
        return self.root_url

    def prompt_text(self, body: dict[str, Any]) -> str:
        return "\n".join(text for text, _ in _blocks(body))

    def _error_body(self, behaviour: Behaviour) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": behaviour.error_type, "message": f"fake server: {behaviour.error_type}"},
        }

    def _arrived(self, body: dict[str, Any], behaviour: Behaviour) -> Usage | web.Response:
        model = str(body.get("model", ""))
        try:
            return self.cache.account(model, _blocks(body), ready_after_s=behaviour.delay_s * PREFILL_SHARE)
        except TooManyBreakpoints as error:
            refusal = {"type": "error", "error": {"type": "invalid_request_error", "message": str(error)}}
            return web.json_response(refusal, status=400)

    def _success_body(self, body: dict[str, Any], text: str, state: Any = None) -> dict[str, Any]:
        usage = state if isinstance(state, Usage) else self.cache.account(str(body.get("model", "")), _blocks(body))
        return {
            "id": f"msg_fake_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "unknown"),
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {**usage.as_dict(), "output_tokens": estimate_tokens(len(text))},
        }


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(text, has cache_control) for the system blocks and every message's text blocks, in order."""
    out: list[tuple[str, bool]] = []
    system = body.get("system")
    if isinstance(system, str):
        out.append((system, False))
    elif isinstance(system, list):
        out.extend(_text_blocks(system))
    for message in body.get("messages", []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            out.append((content, False))
        elif isinstance(content, list):
            out.extend(_text_blocks(content))
    return out


def _text_blocks(blocks: list[Any]) -> list[tuple[str, bool]]:
    return [
        (str(block.get("text", "")), "cache_control" in block)
        for block in blocks
        if isinstance(block, dict) and block.get("type") == "text"
    ]


async def _serve(port: int, delay_ms: int, score: int) -> None:
    default = Behaviour.auto(delay_s=delay_ms / 1000.0)
    async with MessagesApiServer(default=default, answers=AutoAnswers(score=score), port=port) as server:
        print(f"fake Messages API listening on {server.base_url} (delay {delay_ms} ms)", flush=True)
        await asyncio.Event().wait()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the fake Anthropic Messages API (a test double).")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: pick a free one)")
    parser.add_argument("--delay-ms", type=int, default=0, help="wait this long before every answer")
    parser.add_argument("--score", type=int, default=7, help="value of automatic score answers")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args.port, args.delay_ms, args.score))


if __name__ == "__main__":
    main()
