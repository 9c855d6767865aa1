"""The placement investigation finds what the fake's prompt cache holds, keyed as the cache keys it."""

from __future__ import annotations

from engine.prompts import Prompt, build_prompt
from engine.windows import window_events
from ops.bench.cost_placement import MODEL, blocks, longest_held
from ops.fakes.judge_requests import make_events, make_request
from ops.fakes.prompt_cache import PromptCache

EVENTS = make_events(60)


def prompt_of(total: int) -> Prompt:
    shown, first_part, omitted = window_events(EVENTS[:total], 5, 10, hopping=True)
    return build_prompt(make_request(events=shown, first_part=first_part, omitted=omitted))


def test_the_longest_held_evidence_prefix_is_the_one_an_earlier_call_marked() -> None:
    cache, earlier, later = PromptCache(clock=lambda: 0.0), prompt_of(40), prompt_of(43)
    assert longest_held(cache, later, 0.0) is None
    marked = len(earlier.evidence) - 1
    usage = cache.account(MODEL, blocks(earlier, {marked}, False))
    assert usage.cache_creation_input_tokens > 0  # long enough to be cached
    assert later.evidence[: marked + 1] == earlier.evidence  # the hopping window only grew
    assert longest_held(cache, later, 0.0) == marked
    assert cache.account(MODEL, blocks(later, {marked}, False)).cache_creation_input_tokens == 0  # read only
