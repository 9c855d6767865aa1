"""What a gated draft costs in a channel longer than the worker's history view holds (100 events), before and
after the view dropped old events in steps (streams/runtime/history.py, engine/stepped_log.py).

The bundled Office conversation is replayed, looping (each pass dated after the previous one), through two
channels of ``LONG_EVENTS`` events each, starting at different messages; every action is a draft gated with 4
LLM dimensions and committed. Only the drafts judged once their channel holds more than 100 events are
counted (the earlier ones warm the cache as they would in production; below the cap both views are the same).
The conversation a draft is judged on comes from:

- ``before``: the channel's last 100 events, what the view returned before (a deque of 100 per channel): past
  100 the window's "first 5" and every event number move with each message;
- ``after``: the worker's real :class:`~streams.runtime.history.HistoryView` fed every committed event: the
  channel's first 10 events and its recent ones dropped 20 at a time, with the gap carried to the window
  (the judge sees the conversation's first 5, the true omitted count, true event numbers).

Rows: Sonnet 4.5 (Haiku 4.5, the default judge model, caches none of these prompts: see ops/bench/cost.py),
strategies ``parallel`` and ``staged``, windows ``sliding`` and ``hopping``, each view; TinyTroupe's strategy
(sequential, no cache) with the ``after`` view as the anchor. ``python -m ops.bench.cost_long`` (part of
``make bench``) prints the rows and merges the ``cost_long_*`` figures into ops/bench/results.json.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from engine.gate import run_checks
from engine.judges.anthropic import AnthropicJudge
from engine.judges.llm import CallPolicy
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Dimension, Event, EventKind
from engine.scoring import ScoringTarget
from engine.settings import BUNDLED_PROPOSITIONS
from engine.windows import Gap
from ops.bench.common import RESULTS_PATH, merge_results
from ops.bench.cost import DEADLINE_S, DELAY_S, DIMENSIONS, Tally, _event, office_rows, summarise
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import AutoAnswers, Behaviour
from streams.runtime.history import CHANNEL_KEPT, HistoryView

LONG_EVENTS, LONG_CHANNELS, LONG_MODEL, LONG_DIMS = 300, ("#general", "#sales"), "claude-sonnet-4-5", 4
VIEWS = ("before", "after")
#: (strategy, window, view): TinyTroupe's anchor once, with the view that shows the whole conversation's window
LONG_ROWS = (
    *((s, w, v) for s in ("parallel", "staged") for w in ("sliding", "hopping") for v in VIEWS),
    ("tinytroupe", "sliding", "after"),
)
RUN = "bench-long"


def long_events(channel: str, offset: int) -> list[Event]:
    """``LONG_EVENTS`` events of the Office conversation in ``channel``, looping, from row ``offset`` on; each
    pass dated after the previous one (the dates only grow)."""
    base = [_event(row, channel) for row in office_rows()]
    stamps = [e.ts for e in base if e.ts is not None]
    span = max(stamps) - min(stamps) + timedelta(minutes=1)
    out: list[Event] = []
    for j in range(offset, offset + LONG_EVENTS):
        e, shift = base[j % len(base)], span * (j // len(base))
        out.append(Event(e.agent_id, e.agent_name, e.text, e.kind, e.channel, e.source, e.ts and e.ts + shift))
    return out


def held(view: str, history: Sequence[Event], live: HistoryView, channel: str) -> tuple[tuple[Event, ...], Gap | None]:
    if view == "before":
        return tuple(history[-CHANNEL_KEPT:]), None
    conversation = live.conversation(RUN, channel)
    return conversation.items, conversation.gap


async def _replay(
    judge: AnthropicJudge, library: PropositionLibrary, channel: str, dims: tuple[Dimension, ...],
    row: tuple[str, str, str], live: HistoryView, counted: Tally,
) -> None:  # fmt: skip
    strategy, window, view = row
    config = AgentConfig(**{f"gate_{d.value}_enabled": True for d in dims})
    history: list[Event] = []
    offset = LONG_CHANNELS.index(channel) * 20
    for i, event in enumerate(long_events(channel, offset)):
        if event.kind is EventKind.ACTION:
            events, gap = held(view, history, live, channel)
            target = ScoringTarget(
                event.agent_name, event.agent_id, library.persona(event.agent_id), events, event.text,
                {"agent_name": event.agent_name, "action": event.text, "channel_name": channel},
                {"agent_id": event.agent_id}, gap=gap,
            )  # fmt: skip
            started = time.perf_counter()
            result = await run_checks(
                judge, library.psets(event.agent_id, dims, action=True), target, config, attempt=1, recent=[],
                deadline_s=DEADLINE_S, parallel=strategy != "tinytroupe", share_prefix=strategy == "staged",
                hopping=window == "hopping",
            )  # fmt: skip
            if len(history) > CHANNEL_KEPT:
                counted.latencies_ms.append((time.perf_counter() - started) * 1000)
                counted.usage = counted.usage + result.usage
                counted.calls += sum(c.calls for c in result.checks)
                counted.drafts += 1
        history.append(event)
        live.record(f"{channel}-{i}", RUN, event)


async def measure_long(row: tuple[str, str, str]) -> dict[str, float]:
    """One (strategy, window, view) on a fresh server: the drafts judged past the view's cap."""
    library, counted, live = PropositionLibrary(BUNDLED_PROPOSITIONS), Tally(), HistoryView()
    async with MessagesApiServer(default=Behaviour.auto(delay_s=DELAY_S), answers=AutoAnswers(score=8)) as server:
        policy, cached = CallPolicy(deadline_s=DEADLINE_S), row[0] != "tinytroupe"
        judge = AnthropicJudge(api_key="bench-not-a-key", model=LONG_MODEL, base_url=server.base_url, policy=policy,
                               prompt_cache=cached)  # fmt: skip
        try:
            await asyncio.gather(*(_replay(judge, library, c, DIMENSIONS[LONG_DIMS], row, live, counted)
                                   for c in LONG_CHANNELS))  # fmt: skip
        finally:
            await judge.aclose()
    return summarise(LONG_MODEL, counted)


LongFound = dict[tuple[str, str, str], dict[str, float]]


async def run_long() -> LongFound:
    found: LongFound = {}
    for row in LONG_ROWS:
        found[row] = figures = await measure_long(row)
        print(f"long {LONG_MODEL} {LONG_DIMS}d {row[0]:<10} {row[1]:<8} {row[2]:<6} " + "  ".join(
            f"{k} {v:,.3f}" for k, v in figures.items()), flush=True)  # fmt: skip
    return found


def long_headline(found: LongFound) -> dict[str, Any]:
    """Per row: dollars per 1,000 drafts, cache writes per draft, and after ÷ before."""
    anchor = found[("tinytroupe", "sliding", "after")]["usd_per_1k_drafts"]
    out: dict[str, Any] = {"cost_long_sonnet_4d_tinytroupe_usd_per_1k_drafts": anchor}
    for strategy, window, view in LONG_ROWS[:-1]:
        row, key = found[(strategy, window, view)], f"cost_long_sonnet_4d_{strategy}_{window}_{view}"
        out[f"{key}_usd_per_1k_drafts"] = row["usd_per_1k_drafts"]
        out[f"{key}_cache_write_per_draft"] = row["cache_write_per_draft"]
        out[f"{key}_vs_tinytroupe"] = row["usd_per_1k_drafts"] / anchor
    return out


if __name__ == "__main__":
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    long_found = asyncio.run(run_long())
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    merge_results(RESULTS_PATH, {k: round(v, 4) for k, v in long_headline(long_found).items()})
