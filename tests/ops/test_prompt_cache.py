"""The fake Messages API's prompt cache accounts tokens as Anthropic documents it (ops/fakes/prompt_cache.py)."""

from __future__ import annotations

import pytest

from ops.fakes.prompt_cache import PromptCache, TooManyBreakpoints, Usage

SYSTEM = "s" * 4000  # 1,000 tokens
STABLE = "p" * 400  # 100 tokens: system + stable pass Sonnet's 1,024-token minimum
HISTORY = "h" * 2000  # 500 tokens
SONNET, HAIKU = "claude-sonnet-4-5", "claude-haiku-4-5"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def blocks(new: str, *, history: bool = False) -> list[tuple[str, bool]]:
    return [(SYSTEM, True), (STABLE, True), (HISTORY, history), (new, False)]


def test_first_call_writes_up_to_the_last_breakpoint_and_the_next_reads() -> None:
    cache = PromptCache()
    assert cache.account(SONNET, blocks("n" * 40)) == Usage(510, 0, 1100)
    assert cache.account(SONNET, blocks("m" * 80)) == Usage(520, 1100, 0)


def test_a_longer_shared_prefix_reads_the_old_part_and_writes_the_rest() -> None:
    cache = PromptCache()
    cache.account(SONNET, blocks("n"))
    assert cache.account(SONNET, blocks("n", history=True)) == Usage(1, 1100, 500)
    assert cache.account(SONNET, blocks("other", history=True)) == Usage(2, 1600, 0)


def test_nothing_is_cached_below_the_models_minimum() -> None:
    cache = PromptCache()
    for _ in range(2):  # about 1,100 tokens: under Haiku 4.5's 4,096
        assert cache.account(HAIKU, blocks("n")) == Usage(1601, 0, 0)


def test_an_entry_is_read_only_once_its_response_has_begun() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    cache._schedule = lambda keys, delay_s: setattr(clock, "pending", keys)  # type: ignore[method-assign]
    cache.account(SONNET, blocks("n"), ready_after_s=0.05)
    assert cache.account(SONNET, blocks("n")).cache_creation_input_tokens == 1100  # sent side by side: both write


def test_entries_expire_after_five_minutes_unless_read() -> None:
    clock = Clock()
    cache = PromptCache(clock=clock)
    cache.account(SONNET, blocks("n"))
    clock.now = 290.0
    assert cache.account(SONNET, blocks("n")).cache_read_input_tokens == 1100  # refreshed
    clock.now = 580.0
    assert cache.account(SONNET, blocks("n")).cache_read_input_tokens == 1100
    clock.now = 900.0
    assert cache.account(SONNET, blocks("n")).cache_read_input_tokens == 0


def test_more_than_four_breakpoints_are_refused() -> None:
    with pytest.raises(TooManyBreakpoints):
        PromptCache().account(SONNET, [("x", True)] * 5)
