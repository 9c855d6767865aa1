"""Can a draft's dimensions judged side by side share more of the prompt cache? Breakpoint placements measured
in process, with the rendered content unchanged.

The gate's requests for the Office replay of ops/bench/cost.py (four channels, 4 dimensions, side by side,
sliding or hopping window) are captured from :func:`engine.gate.run_checks` with a scripted judge, rendered by
:func:`engine.prompts.build_prompt` as the Anthropic judge sends them, and accounted by the fake's prompt cache
(ops/fakes/prompt_cache.py, Sonnet 4.5's 1,024-token minimum). Side by side means a draft's calls read only
what earlier drafts wrote: each is accounted against the cache as it was before the draft, and their writes
are merged afterwards. Placements:

- ``current``: :class:`engine.judges.anthropic.AnthropicJudge`'s (every call marks the end of the evidence);
- ``one writer``: the first call marks the end of the evidence, the others the longest evidence prefix the
  cache already holds (what a judge remembering its own writes could do): they read it and write nothing, and
  pay the new events as plain input;
- ``draft marked``: every call also marks the end of the draft (each writes it, none can read it);
- ``warm``: a call of the system text and the evidence alone, marked at its end and answered with one token,
  runs before each draft (the ideal timing of a warm-up sent when a message is committed, off the verdict
  path); the draft's calls then read the whole evidence;
- ``staged``: for reference, the staged strategy (the first call's writes visible to the others);
- TinyTroupe's strategy, the anchor: the same requests, no cache.

Also reported: the tokens after the evidence in each call (the draft block, the target and persona, the
claims), which no earlier draft can have written: the floor of uncached input per call side by side.
``python -m ops.bench.cost_placement`` prints the table (no results.json keys: it is an investigation).
"""

from __future__ import annotations

import asyncio
import hashlib

from engine.gate import run_checks
from engine.judges.anthropic import _marks, _system_marked
from engine.judges.base import JudgeRequest
from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Event, EventKind, TokenUsage
from engine.pricing import PriceTable
from engine.prompts import Prompt, build_prompt
from engine.scoring import ScoringTarget
from engine.settings import BUNDLED_PROPOSITIONS
from ops.bench.cost import CHANNELS, DEADLINE_S, DIMENSIONS, _event, office_rows
from ops.fakes.prompt_cache import PromptCache, Usage
from ops.fakes.server import estimate_tokens

MODEL = "claude-sonnet-4-5"
PLACEMENTS = ("current", "one writer", "draft marked", "warm", "staged")
ANCHOR = "TinyTroupe (no cache)"
Blocks = list[tuple[str, bool]]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def drafts(hopping: bool, share: bool) -> list[list[JudgeRequest]]:
    """Per gated draft of the replay, in order (channels interleaved), the requests the gate sends."""
    library, judge = PropositionLibrary(BUNDLED_PROPOSITIONS), ScriptedJudge.from_rules({"default": 8})
    dims = DIMENSIONS[4]
    config = AgentConfig(**{f"gate_{d.value}_enabled": True for d in dims})
    rows = office_rows()
    replays = []
    for channel in CHANNELS:
        start = CHANNELS.index(channel) * len(rows) // len(CHANNELS)
        replays.append([_event(row, channel) for row in rows[start:] + rows[:start]])
    out: list[list[JudgeRequest]] = []
    histories: list[list[Event]] = [[] for _ in CHANNELS]
    for step in range(len(rows)):
        for replay, history in zip(replays, histories, strict=True):
            event = replay[step]
            if event.kind is EventKind.ACTION:
                target = ScoringTarget(event.agent_name, event.agent_id, library.persona(event.agent_id),
                                       tuple(history), event.text, {"agent_name": event.agent_name,
                                       "action": event.text, "channel_name": event.channel or ""},
                                       {"agent_id": event.agent_id})  # fmt: skip
                before = len(judge.log.calls)
                await run_checks(judge, library.psets(event.agent_id, dims, action=True), target, config, attempt=1,
                                 recent=[], deadline_s=DEADLINE_S, parallel=True, share_prefix=share,
                                 hopping=hopping)  # fmt: skip
                out.append(list(judge.log.calls[before:]))
            history.append(event)
    return out


def blocks(prompt: Prompt, marks: set[int], system_marked: bool) -> Blocks:
    texts = [*prompt.evidence, prompt.draft, prompt.about, prompt.new]
    return [(prompt.system, system_marked), *((t, i in marks) for i, t in enumerate(texts))]


def current(prompt: Prompt) -> Blocks:
    return blocks(prompt, set(_marks(prompt)), _system_marked(prompt, True))


def longest_held(cache: PromptCache, prompt: Prompt, now: float) -> int | None:
    """The index of the last evidence block whose prefix (system text included) the cache holds, keyed as
    :class:`~ops.fakes.prompt_cache.PromptCache` keys it; None when it holds none."""
    digest, found = hashlib.sha256(MODEL.encode()), None
    for i, text in enumerate((prompt.system, *prompt.evidence)):
        digest.update(b"\0" + text.encode())
        if i and cache._entries.get(digest.hexdigest(), 0.0) > now:
            found = i - 1
    return found


class Ledger:
    def __init__(self) -> None:
        self.usage = TokenUsage()
        self.calls = 0

    def add(self, usage: Usage, output: int) -> None:
        self.usage = self.usage + TokenUsage(usage.input_tokens, output, usage.cache_read_input_tokens,
                                             usage.cache_creation_input_tokens)  # fmt: skip
        self.calls += 1


def side_by_side(cache: PromptCache, prompts: list[list[Blocks]], ledger: Ledger, output: int, clock: _Clock) -> None:
    """Each draft's calls see the cache as it was before the draft; their writes are merged after it."""
    for draft in prompts:
        before = dict(cache._entries)
        merged: dict[str, float] = {}
        for call in draft:
            cache._entries = dict(before)
            ledger.add(cache.account(MODEL, call), output)
            merged.update(cache._entries)
        cache._entries = merged
        clock.now += 1.0


def measure(placement: str, requests: list[list[JudgeRequest]], output: int) -> Ledger:
    clock = _Clock()
    cache, ledger = PromptCache(clock=clock), Ledger()
    if placement == ANCHOR:  # the same requests, every token plain input
        for draft in requests:
            for request in draft:
                ledger.add(cache.account(MODEL, blocks(build_prompt(request), set(), False)), output)
        return ledger
    if placement == "staged":
        for draft in requests:
            for request in draft:
                ledger.add(cache.account(MODEL, current(build_prompt(request))), output)
            clock.now += 1.0
        return ledger
    for draft in requests:
        prompts = [build_prompt(r) for r in draft]
        if placement == "warm":
            first = prompts[0]
            warm = [(first.system, False), *((t, i == len(first.evidence) - 1) for i, t in enumerate(first.evidence))]
            ledger.add(cache.account(MODEL, warm), 1)
            ledger.calls -= 1  # not a judge call
        calls = [_placed(placement, p, n, cache, clock.now) for n, p in enumerate(prompts)]
        side_by_side(cache, [calls], ledger, output, clock)
    return ledger


def _placed(placement: str, prompt: Prompt, n: int, cache: PromptCache, now: float) -> Blocks:
    if placement == "draft marked":
        marks = {*_marks(prompt), len(prompt.evidence)}
        return blocks(prompt, set(sorted(marks)[-4:]), False)
    if placement == "one writer" and n > 0:
        held = longest_held(cache, prompt, now)
        return blocks(prompt, {held} if held is not None else set(), False)
    return current(prompt)


def after_evidence(requests: list[list[JudgeRequest]]) -> float:
    """Mean tokens per call after the evidence (draft block, target and persona, claims)."""
    sizes: list[int] = []
    for draft in requests:
        for request in draft:
            p = build_prompt(request)
            before = estimate_tokens(len(p.system) + len(p.conversation()))
            sizes.append(estimate_tokens(len(p.full_text()) - 2) - before)
    return sum(sizes) / len(sizes)


def row(name: str, ledger: Ledger, drafts_n: int, anchor_usd: float) -> tuple[str, float]:
    """A table row, and the dollars per 1,000 drafts."""
    u = ledger.usage
    total = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    usd = (PriceTable().cost(MODEL, u) or 0.0) * 1000 / drafts_n
    text = (f"| {name} | {u.input_tokens / drafts_n:,.0f} | {u.cache_read_input_tokens / drafts_n:,.0f} | "
            f"{u.cache_creation_input_tokens / drafts_n:,.0f} | {u.input_tokens / ledger.calls:,.0f} | "
            f"{(total - u.input_tokens) / max(total, 1):.3f} | {usd:.2f} | {usd / anchor_usd:.3f} |")  # fmt: skip
    return text, usd


async def main() -> None:
    output = 100  # the double's answer, tokens per call (ops.bench.cost: 384 per draft, 3.82 calls)
    # the anchor: TinyTroupe's strategy with its own (sliding) window, as in ops.bench.cost
    sliding = await drafts(False, share=False)
    anchor_usd = (PriceTable().cost(MODEL, measure(ANCHOR, sliding, output).usage) or 0.0) * 1000 / len(sliding)
    for window in ("sliding", "hopping"):
        side = await drafts(window == "hopping", share=False)
        staged = await drafts(window == "hopping", share=True)
        calls = sum(len(d) for d in side)
        print(f"\n{window}: {len(side)} drafts, {calls / len(side):.2f} calls per draft, "
              f"{after_evidence(side):.0f} tokens after the evidence per call (side by side's floor)")  # fmt: skip
        print("| placement | input | cache read | cache write | uncached / call | cacheable share | $ / 1k | "
              "÷ TinyTroupe |\n|---|---:|---:|---:|---:|---:|---:|---:|")  # fmt: skip
        for placement in (*PLACEMENTS, ANCHOR) if window == "sliding" else PLACEMENTS:
            ledger = measure(placement, staged if placement == "staged" else side, output)
            print(row(placement, ledger, len(side), anchor_usd)[0], flush=True)


if __name__ == "__main__":
    asyncio.run(main())
