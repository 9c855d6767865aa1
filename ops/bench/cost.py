"""What a gated draft costs: judge tokens and dollars per draft, through the real ``anthropic`` SDK against the
local Messages-API test double, which accounts the prompt cache as Anthropic does (ops/fakes/prompt_cache.py).

The bundled Office conversation (ops/examples/office_conversation.jsonl) is replayed through several channels
at once, each starting at a different message (so no two channels hold the same conversation, which would
share cache entries no real deployment would); every action in it is a draft gated with 1, 2 or 4 LLM
dimensions on the conversation of its channel so far, and committed. Strategies, each on a fresh server
(an empty cache):

- ``parallel``: ours by default, dimensions side by side, each reading the conversation up to the channel's
  previous check and writing what is new (engine/judges/anthropic.py places the breakpoints);
- ``staged``: ``DRIFT_GATE_SHARE_PREFIX``, one dimension writes the evidence, the draft and its persona to the
  cache and the others read them;
- ``tinytroupe``: TinyTroupe's strategy, one call per dimension in turn, each with the whole windowed
  trajectory, no prompt cache.

``parallel`` and ``staged`` run with each trajectory window (``DRIFT_GATE_WINDOW``): ``sliding`` (first 5 and
last 10 events, TinyTroupe's) and ``hopping`` (first 5 and everything since an anchor moving in steps of 10:
append-only between moves, engine/windows.py); TinyTroupe's strategy with its own, sliding.

Token counts are the server's (about four characters a token); dollars are the bundled price table's
(engine/pricing.py). ``python -m ops.bench.cost`` prints the table and merges the headline figures into
ops/bench/results.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from engine.gate import run_checks
from engine.judges.anthropic import AnthropicJudge
from engine.judges.llm import CallPolicy
from engine.library import PropositionLibrary
from engine.models import ZERO_USAGE, AgentConfig, Dimension, Event, EventKind, TokenUsage
from engine.pricing import PriceTable
from engine.scoring import ScoringTarget
from engine.settings import BUNDLED_PROPOSITIONS, Settings, bundled_example
from ops.bench.common import RESULTS_PATH, merge_results
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import AutoAnswers, Behaviour

CHANNELS = ("#general", "#sales", "#accounting", "#party-planning")
DIMENSIONS = {
    1: (Dimension.ADHERENCE,),  # the paper's gate: persona adherence only
    2: (Dimension.ADHERENCE, Dimension.SUITABILITY),  # the two that read the persona
    4: (Dimension.ADHERENCE, Dimension.CONSISTENCY, Dimension.FLUENCY, Dimension.SUITABILITY),
}
STRATEGIES = ("parallel", "staged", "tinytroupe")
WINDOWS = ("sliding", "hopping")
#: (strategy, window) rows measured for every model and dimension count
ROWS = (*((s, w) for s in STRATEGIES[:2] for w in WINDOWS), ("tinytroupe", "sliding"))
MODELS = ("claude-haiku-4-5", "claude-sonnet-4-5")
DELAY_S = 0.1
#: generous: on a loaded machine a fail-open timeout would drop a call from the tally
DEADLINE_S = 60.0


def office_rows() -> list[dict[str, Any]]:
    lines = bundled_example("office_conversation.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _event(row: dict[str, Any], channel: str) -> Event:
    kind = EventKind(row["kind"])
    ts = datetime.fromisoformat(row["ts"].replace("Z", "+00:00"))
    source = row["agent_name"] if kind is EventKind.STIMULUS else None
    return Event(row["agent_id"], row["agent_name"], row["text"], kind=kind, channel=channel, source=source, ts=ts)


@dataclass
class Tally:
    usage: TokenUsage = ZERO_USAGE
    calls: int = 0
    drafts: int = 0
    latencies_ms: list[float] = field(default_factory=list)


async def _replay_channel(
    judge: AnthropicJudge, library: PropositionLibrary, channel: str, dims: tuple[Dimension, ...],
    strategy: str, tally: Tally, hopping: bool = False,
) -> None:  # fmt: skip
    config = AgentConfig(**{f"gate_{d.value}_enabled": True for d in dims})
    history: list[Event] = []
    rows = office_rows()
    start = CHANNELS.index(channel) * len(rows) // len(CHANNELS)
    for row in rows[start:] + rows[:start]:
        event = _event(row, channel)
        if event.kind is EventKind.ACTION:
            target = ScoringTarget(
                event.agent_name, event.agent_id, library.persona(event.agent_id), tuple(history), event.text,
                {"agent_name": event.agent_name, "action": event.text, "channel_name": channel},
                {"agent_id": event.agent_id},
            )  # fmt: skip
            started = time.perf_counter()
            result = await run_checks(
                judge, library.psets(event.agent_id, dims, action=True), target, config, attempt=1, recent=[],
                deadline_s=DEADLINE_S, parallel=strategy != "tinytroupe", share_prefix=strategy == "staged",
                hopping=hopping,
            )  # fmt: skip
            tally.latencies_ms.append((time.perf_counter() - started) * 1000)
            tally.usage = tally.usage + result.usage
            tally.calls += sum(c.calls for c in result.checks)
            tally.drafts += 1
        history.append(event)


async def measure(
    model: str, n_dims: int, strategy: str, window: str = "sliding", channels: int = len(CHANNELS)
) -> dict[str, float]:
    """One strategy and window on a fresh server: tokens per draft and per call, dollars per 1,000 drafts,
    latency p50."""
    library = PropositionLibrary(BUNDLED_PROPOSITIONS)
    tally = Tally()
    default = Behaviour.auto(delay_s=DELAY_S)
    async with MessagesApiServer(default=default, answers=AutoAnswers(score=8)) as server:
        policy, cached = CallPolicy(deadline_s=DEADLINE_S), strategy != "tinytroupe"
        judge = AnthropicJudge(api_key="bench-not-a-key", model=model, base_url=server.base_url, policy=policy,
                               prompt_cache=cached)  # fmt: skip
        try:
            await asyncio.gather(*(_replay_channel(judge, library, c, DIMENSIONS[n_dims], strategy, tally,
                                                   window == "hopping") for c in CHANNELS[:channels]))  # fmt: skip
        finally:
            await judge.aclose()
    return summarise(model, tally)


def summarise(model: str, tally: Tally) -> dict[str, float]:
    u, drafts, calls = tally.usage, max(tally.drafts, 1), max(tally.calls, 1)
    total_in = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
    cost = PriceTable().cost(model, u)
    return {
        "drafts": float(tally.drafts),
        "calls_per_draft": tally.calls / drafts,
        "input_per_draft": u.input_tokens / drafts,
        "cache_read_per_draft": u.cache_read_input_tokens / drafts,
        "cache_write_per_draft": u.cache_creation_input_tokens / drafts,
        "output_per_draft": u.output_tokens / drafts,
        "uncached_input_per_check": u.input_tokens / calls,
        "input_tokens_per_check": total_in / calls,
        "cacheable_share": (u.cache_read_input_tokens + u.cache_creation_input_tokens) / max(total_in, 1),
        "read_share": u.cache_read_input_tokens / max(total_in, 1),
        "usd_per_1k_drafts": (cost or 0.0) * 1000 / drafts,
        "p50_ms": float(np.percentile(tally.latencies_ms, 50)) if tally.latencies_ms else 0.0,
    }


Found = dict[tuple[str, int, str, str], dict[str, float]]


async def run_async() -> Found:
    found: Found = {}
    for model in MODELS:
        for n_dims in DIMENSIONS:
            for strategy, window in ROWS:
                found[(model, n_dims, strategy, window)] = row = await measure(model, n_dims, strategy, window)
                print(f"{model:<18} {n_dims}d {strategy:<10} {window:<8} " + "  ".join(
                    f"{k} {v:,.3f}" for k, v in row.items()), flush=True)  # fmt: skip
    return found


def headline(found: Found, default_window: str) -> dict[str, float]:
    """The figures BENCHMARKS.md's summary keeps (4 dimensions; the default model and Sonnet 4.5): plain keys at
    the default window, ``_sliding`` / ``_hopping`` keys for each window."""
    out: dict[str, float] = {}
    for model, short in (("claude-haiku-4-5", "haiku"), ("claude-sonnet-4-5", "sonnet")):
        anchor = found[(model, 4, "tinytroupe", "sliding")]["usd_per_1k_drafts"]
        out[f"cost_{short}_4d_tinytroupe_usd_per_1k_drafts"] = anchor
        for strategy, window in ROWS[:-1]:
            row = found[(model, 4, strategy, window)]
            for suffix in ("", f"_{window}") if window == default_window else (f"_{window}",):
                key = f"cost_{short}_4d_{strategy}{suffix}"
                out[f"{key}_usd_per_1k_drafts"] = row["usd_per_1k_drafts"]
                out[f"{key}_vs_tinytroupe"] = row["usd_per_1k_drafts"] / anchor
                out[f"{key}_uncached_input_per_check"] = row["uncached_input_per_check"]
                out[f"{key}_cacheable_share"] = row["cacheable_share"]
        staged, default = found[(model, 4, "staged", default_window)], found[(model, 4, "parallel", default_window)]
        out[f"cost_{short}_4d_staged_p50_vs_parallel"] = staged["p50_ms"] / default["p50_ms"]
    return out


if __name__ == "__main__":
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    results = asyncio.run(run_async())
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    window = Settings.model_fields["gate_window"].default
    merge_results(RESULTS_PATH, {k: round(v, 4) for k, v in headline(results, window).items()})
