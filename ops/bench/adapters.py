"""The framework adapters' cost per turn beyond the gate's own round trip (issue 31: ≤ 5 ms).

Two measurements, each side by side in one run, turns alternating between the two arms:

1. **On the embedded stack** (a private Tansu + PostgreSQL and one ``drift worker --judge offline``; the agent
   is configured with no check enabled, so the worker answers at once and the round trip is mostly transport):
   an AutoGen turn through :class:`~streams.adapters.autogen.GatedAgent` against the same turn written by hand —
   the wrapped agent replies (``ReplayChatCompletionClient``), then ``GateClient.step`` and
   ``GateClient.converse``. Same for LangGraph: :func:`~streams.adapters.langgraph.gated_node` against the node
   plus the two calls.
2. **In process**, against a gate that answers at once (no broker): the same pairs, so the adapter's own code
   is timed without the broker's jitter.

Each turn's time beyond the gate is the turn minus the time spent inside ``GateClient.step`` / ``check`` (timed
around the real client's calls): the broker's jitter cancels out. The overhead is the median of the per-pair
differences of that time (adapter turn − hand-written turn), in ms.
Run from the repository root: ``.venv/bin/python -m ops.bench.adapters``; merges ``adapter_*`` keys into
``ops/bench/results.json``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken
from autogen_ext.models.replay import ReplayChatCompletionClient
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from ops.bench.steps import start_worker
from streams.adapters import GateSession
from streams.adapters.autogen import GatedAgent
from streams.adapters.langgraph import gated_node
from streams.client import GateClient
from streams.embedded import start_stack
from streams.store import Store
from streams.wire.kafka import create_topics
from streams.wire.payloads import Directives, Verdict

WARMUP, TURNS = 20, 200
TARGET_MS = 5.0
PREFIX = "bench-adapters."
Turn = Callable[[int], Awaitable[Any]]


class InstantGate(GateClient):
    """A gate that commits every draft and answers every step at once (the in-process arm: no broker)."""

    def __init__(self) -> None:
        super().__init__(settings=Settings())

    async def check(self, *, agent_id: str, text: str, draft_id: str | None = None, attempt: int = 1,
                    **fields: Any) -> Verdict:  # fmt: skip
        return Verdict(draft_id=draft_id or "d", attempt=attempt, agent_id=agent_id, decision="commit",
                       outcome="passed", text=text)  # fmt: skip

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None,
                   timeout_s: float | None = None) -> Directives:  # fmt: skip
        return Directives(run_id=run_id, step=step, channel=channel)


def replies(n: int) -> list[str]:
    return [f"Turn {i}: bears, beets, and a word on the quarterly numbers." for i in range(n)]


def autogen_pair(gate: GateClient, agent_id: str) -> tuple[Turn, Turn]:
    """(by hand, through GatedAgent): one AutoGen turn each; the other speaker is gated, so no stimulus."""
    session = GateSession(gate, run_id=f"bench-{uuid.uuid4().hex[:6]}", channel="bench")
    session.register("pam")
    n = WARMUP + TURNS
    plain = AssistantAgent("dwight", model_client=ReplayChatCompletionClient(replies(n)))
    gated = GatedAgent(AssistantAgent("dwight", model_client=ReplayChatCompletionClient(replies(n))), session,
                       agent_id=agent_id)  # fmt: skip
    token = CancellationToken()
    steps = iter(range(10**9))

    async def by_hand(i: int) -> Any:
        await gate.step(run_id=session.run_id + "h", step=next(steps), agent_ids=[agent_id], channel="bench")
        reply = await plain.on_messages([TextMessage(content=f"pam says {i}", source="pam")], token)
        return await gate.converse(agent_id=agent_id, text=reply.chat_message.to_text(), regenerate=_never,
                                   run_id=session.run_id + "h", channel="bench")  # fmt: skip

    async def adapted(i: int) -> Any:
        return await gated.on_messages([TextMessage(content=f"pam says {i}", source="pam")], token)

    return by_hand, adapted


def langgraph_pair(gate: GateClient, agent_id: str) -> tuple[Turn, Turn]:
    """(by hand, through gated_node): one LangGraph node turn each."""
    session = GateSession(gate, run_id=f"bench-{uuid.uuid4().hex[:6]}", channel="bench")
    n = WARMUP + TURNS
    models = [GenericFakeChatModel(messages=iter(replies(n))) for _ in range(2)]
    steps = iter(range(10**9))

    def node_for(model: GenericFakeChatModel) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
        async def node(state: dict[str, Any]) -> dict[str, Any]:
            return {"messages": [await model.ainvoke(state["messages"])]}

        return node

    plain, gated = node_for(models[0]), gated_node(node_for(models[1]), session, agent_id=agent_id)
    history = [AIMessage("Earlier: a word from Pam.", name="Pam", id="m0")]

    async def by_hand(i: int) -> Any:
        await gate.step(run_id=session.run_id + "h", step=next(steps), agent_ids=[agent_id], channel="bench")
        update = await plain({"messages": history})
        return await gate.converse(agent_id=agent_id, text=update["messages"][-1].text, regenerate=_never,
                                   run_id=session.run_id + "h", channel="bench")  # fmt: skip

    async def adapted(i: int) -> Any:
        return await gated({"messages": history})

    return by_hand, adapted


async def _never(feedback: str) -> str | None:
    raise RuntimeError("the benchmark's agent has no check enabled: no retry expected")


class TimedGate(GateClient):
    """The real client, keeping the time spent inside its gate calls (``spent``, ms): a turn minus that is the
    turn's time beyond the gate's own round trips, free of the broker's jitter."""

    spent = 0.0

    async def check(self, **kwargs: Any) -> Verdict:
        started = time.perf_counter()
        try:
            return await super().check(**kwargs)
        finally:
            self.spent += (time.perf_counter() - started) * 1000.0

    async def step(self, **kwargs: Any) -> Directives:
        started = time.perf_counter()
        try:
            return await super().step(**kwargs)
        finally:
            self.spent += (time.perf_counter() - started) * 1000.0


async def paired(gate: GateClient, by_hand: Turn, adapted: Turn) -> dict[str, float]:
    """Medians (ms) of each arm's turn, of its time beyond the gate calls, and of the paired differences of the
    latter (the adapter's overhead); the arms alternate and the order flips every turn."""
    rows: dict[str, list[float]] = {"hand": [], "adapter": [], "hand_beyond": [], "adapter_beyond": [], "diff": []}
    for i in range(WARMUP + TURNS):
        times, beyond = {}, {}
        for name, turn in (("hand", by_hand), ("adapter", adapted)) if i % 2 else (("adapter", adapted),
                                                                                  ("hand", by_hand)):  # fmt: skip
            spent, started = getattr(gate, "spent", 0.0), time.perf_counter()
            await turn(i)
            times[name] = (time.perf_counter() - started) * 1000.0
            beyond[name] = times[name] - (getattr(gate, "spent", 0.0) - spent)
        if i >= WARMUP:
            for name in ("hand", "adapter"):
                rows[name].append(times[name])
                rows[f"{name}_beyond"].append(beyond[name])
            rows["diff"].append(beyond["adapter"] - beyond["hand"])
    return {key: statistics.median(values) for key, values in rows.items()}


async def measure_stack(settings: Settings, log_path: Path) -> dict[str, float]:
    await create_topics(settings)
    async with await Store.connect(settings.database_url) as store:  # known before the worker starts
        await store.migrate()
        for framework in ("autogen", "langgraph"):
            await store.set_config(f"bench-{framework}", {"gate_enabled": True})
    worker = start_worker(settings, log_path, timeout_s=180)  # a loaded 2-core machine starts it slowly
    try:
        async with TimedGate(settings=settings, timeout_s=10) as gate:
            found: dict[str, float] = {}
            for framework, pair in (("autogen", autogen_pair), ("langgraph", langgraph_pair)):
                m = await paired(gate, *pair(gate, f"bench-{framework}"))
                names = {"hand": "turn_by_hand", "adapter": "turn", "hand_beyond": "beyond_gate_by_hand",
                         "adapter_beyond": "beyond_gate", "diff": "overhead"}  # fmt: skip
                found |= {f"adapter_{framework}_{names[k]}_ms": v for k, v in m.items()}
            return found
    finally:
        worker.stop()


async def measure_in_process() -> dict[str, float]:
    gate = InstantGate()
    found: dict[str, float] = {}
    for framework, pair in (("autogen", autogen_pair), ("langgraph", langgraph_pair)):
        found[f"adapter_{framework}_overhead_inprocess_ms"] = (await paired(gate, *pair(gate, framework)))["diff"]
    return found


def run() -> dict[str, float]:
    stack = start_stack()
    try:
        settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=PREFIX)
        on_stack = asyncio.run(measure_stack(settings, stack.root / "worker.log"))
    finally:
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)
    return {k: round(v, 3) for k, v in {**on_stack, **asyncio.run(measure_in_process())}.items()}


def main() -> None:
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}")
    results = run()
    print("  load average after the run: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    for key, value in results.items():
        print(f"  {key:<44}{value:>9.3f}")
    worst = max(v for k, v in results.items() if k.endswith("_overhead_ms"))
    print(f"  target: overhead per turn ≤ {TARGET_MS:g} ms: {'ok' if worst <= TARGET_MS else 'MISSED'}")
    merge_results(RESULTS_PATH, results)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
