"""The prompt cache of the fake Messages API, accounted as Anthropic documents it (read 2026-11).

- A request's prompt is its system blocks, then every message's content blocks, in order. A block marked with
  ``cache_control`` is a breakpoint; more than :data:`MAX_BREAKPOINTS` is an error (HTTP 400).
- The longest prefix ending at a block boundary at or before the last breakpoint that is in the cache (written
  by an earlier request at one of its breakpoints, and not expired) is **read**: ``cache_read_input_tokens``.
  The API looks back about 20 blocks from each breakpoint for such a hit; these prompts have a few blocks, so
  every boundary is looked at.
- From there up to the last breakpoint the prompt is **written** (``cache_creation_input_tokens``) and each
  breakpoint's prefix becomes an entry — only if that prefix reaches the model's minimum cacheable length
  (:data:`MIN_CACHEABLE`; below it nothing is cached and the tokens count as plain input, silently).
- An entry can be read only once the response that wrote it has begun (after the prompt is processed): two
  requests sent side by side both write. Here that is :data:`PREFILL_SHARE` of the answer's delay after arrival.
- Entries live :data:`TTL_S` (five minutes), refreshed by every read.
- Everything after the last breakpoint (and a prefix too short to cache) is ``input_tokens``.

Tokens are estimated at one per four characters, cumulatively over the prompt (the fakes' estimate).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from dataclasses import dataclass
from typing import Any

from ops.fakes.server import estimate_tokens

MAX_BREAKPOINTS = 4
TTL_S = 300.0
#: the share of an answer's delay spent before the response begins (prompt processing)
PREFILL_SHARE = 0.25
#: minimum cacheable prompt length in tokens by model-name prefix (Anthropic's prompt-caching page); others 1024
MIN_CACHEABLE = {
    "claude-haiku-4-5": 4096,
    "claude-opus-4-5": 4096,
    "claude-opus-4-6": 4096,
    "claude-sonnet-4-6": 1024,
    "claude-sonnet-4-5": 1024,
    "claude-opus-4-1": 1024,
    "claude-3-5-haiku": 2048,
    "claude-3-haiku": 2048,
}
DEFAULT_MIN_CACHEABLE = 1024


class TooManyBreakpoints(ValueError):
    """More than :data:`MAX_BREAKPOINTS` blocks carry ``cache_control``."""


def min_cacheable(model: str) -> int:
    matches = [key for key in MIN_CACHEABLE if model.startswith(key)]
    return MIN_CACHEABLE[max(matches, key=len)] if matches else DEFAULT_MIN_CACHEABLE


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "cache_read_input_tokens": self.cache_read_input_tokens,
                "cache_creation_input_tokens": self.cache_creation_input_tokens}  # fmt: skip


class PromptCache:
    """Entries by the hash of a prompt prefix (model included), with their expiry time."""

    def __init__(self, *, clock: Any = time.monotonic) -> None:
        self._entries: dict[str, float] = {}
        self._clock = clock

    def account(self, model: str, blocks: list[tuple[str, bool]], ready_after_s: float = 0.0) -> Usage:
        """Read what is cached, schedule the writes (readable after ``ready_after_s``) and return the usage."""
        marked = [i for i, (_, mark) in enumerate(blocks) if mark]
        if len(marked) > MAX_BREAKPOINTS:
            raise TooManyBreakpoints(f"A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided")
        keys, ends, digest, chars = [], [], hashlib.sha256(model.encode()), 0
        for text, _ in blocks:
            digest.update(b"\0" + text.encode())
            chars += len(text)
            keys.append(digest.hexdigest())
            ends.append(estimate_tokens(chars))
        total = ends[-1] if ends else 0
        if not marked:
            return Usage(total, 0, 0)
        now, last = self._clock(), marked[-1]
        hit = next((i for i in range(last, -1, -1) if self._entries.get(keys[i], 0.0) > now), None)
        read = ends[hit] if hit is not None else 0
        if hit is not None:
            self._entries[keys[hit]] = now + TTL_S
        floor = min_cacheable(model)
        written = [keys[i] for i in marked if (hit is None or i > hit) and ends[i] >= floor]
        creation = ends[last] - read if written else 0
        if written:
            self._schedule(written, ready_after_s)
        return Usage(total - read - creation, read, creation)

    def _schedule(self, keys: list[str], delay_s: float) -> None:
        def add() -> None:
            expiry = self._clock() + TTL_S
            for key in keys:
                self._entries[key] = max(self._entries.get(key, 0.0), expiry)

        if delay_s <= 0:
            add()
        else:
            asyncio.get_running_loop().call_later(delay_s, add)
