"""Orchestrator step round trip on the embedded broker: repetition suppression for 50 agents.

A private stack (Tansu + PostgreSQL in a temp dir) and one ``drift worker --judge offline`` subprocess. All
50 agents have repetition suppression on and five committed messages each (half of them keep reusing a
catchphrase, so half get a directive). Every step names the 50 agents; one step at a time, the round trip is
timed from ``GateClient.step`` sending the step to its directives record arriving.

Run from the repository root: ``.venv/bin/python -m ops.bench.steps``. Prints and merges
``step_round_trip_p50_ms`` and ``step_round_trip_p99_ms`` into ``ops/bench/results.json`` (target p50 ≤ 50 ms).
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import numpy as np

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from streams.client import GateClient
from streams.embedded import WorkerProcess, free_port, start_stack
from streams.store import Store
from streams.wire.kafka import create_topics
from streams.wire.payloads import Message

AGENTS = 50
HISTORY = 5
WARMUP_STEPS = 20
MEASURED_STEPS = 300
TARGET_P50_MS = 50.0
PREFIX = "bench-steps."
CATCHPHRASES = ("that's what she said", "bears beets battlestar galactica", "the numbers don't lie")
_VOCABULARY = """paper client quarter stapler branch memo coffee party quota printer warehouse pretzel deal report
meeting scranton conference sales jello desk"""
WORDS = tuple(_VOCABULARY.split())


def history_text(agent: int, n: int) -> str:
    """About twenty words; even agents lean on a catchphrase in every message."""
    rng = np.random.default_rng(agent * 100 + n)
    if agent % 2:
        return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 20)).capitalize() + "."
    words = " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 8)).capitalize()
    phrase = CATCHPHRASES[agent // 2 % len(CATCHPHRASES)]
    return f"{words}, and as I always say, {phrase}. Honestly, {phrase}!"


def start_worker(settings: Settings, log_path: Path, timeout_s: float = 45.0) -> WorkerProcess:
    """``drift worker --judge offline`` for ``settings``; returns once it prints its ``ready`` line."""
    env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database_url,
           "DRIFT_WEB_PORT": str(free_port())}  # fmt: skip
    worker = WorkerProcess.for_prefix(env, log_path, "--prefix", settings.topic_prefix, "--judge", "offline")
    return worker.start(timeout_s)


async def prepare(settings: Settings, agents: list[str]) -> None:
    """Topics, configurations (before the worker starts: it loads them at start) and history."""
    await create_topics(settings)
    async with await Store.connect(settings.database_url) as store:
        await store.migrate()
        for agent in agents:
            await store.set_config(agent, {"repetition_suppression_enabled": True})


async def publish_history(gate: GateClient, agents: list[str]) -> None:
    for n in range(HISTORY):
        for i, agent in enumerate(agents):
            message = Message(message_id=f"{agent}-{n}", agent_id=agent, text=history_text(i, n), run_id="bench",
                              channel="bullpen")  # fmt: skip
            await gate.publish_message(message)


async def round_trips(gate: GateClient, agents: list[str]) -> tuple[list[float], list[float]]:
    """Milliseconds per step, one step at a time, after a warm-up: round trips and the worker's own share."""
    timings: list[float] = []
    in_worker: list[float] = []
    directed = 0
    for step in range(WARMUP_STEPS + MEASURED_STEPS):
        started = time.perf_counter()
        record = await gate.step(run_id="bench", step=step, agent_ids=agents, channel="bullpen", timeout_s=10)
        if step >= WARMUP_STEPS:
            timings.append((time.perf_counter() - started) * 1000.0)
            in_worker.append(record.latency_ms)
        directed = len(record.directives)
    if directed != AGENTS // 2:
        raise RuntimeError(f"expected {AGENTS // 2} repetition directives per step, got {directed}")
    return timings, in_worker


async def measure(settings: Settings, log_path: Path) -> tuple[list[float], list[float]]:
    agents = [f"bench-agent-{i}" for i in range(AGENTS)]
    await prepare(settings, agents)
    worker = start_worker(settings, log_path)
    try:
        async with GateClient(settings=settings, timeout_s=10) as gate:
            await publish_history(gate, agents)
            return await round_trips(gate, agents)
    finally:
        worker.stop()


def run() -> dict[str, float]:
    """Start a private stack, measure, tear it down; returns the p50 and p99 round trips in ms."""
    timings, _ = run_measured()
    return {
        "step_round_trip_p50_ms": round(float(np.percentile(timings, 50)), 2),
        "step_round_trip_p99_ms": round(float(np.percentile(timings, 99)), 2),
    }


def run_measured() -> tuple[list[float], list[float]]:
    """Round trips and worker-side latencies (ms) of the measured steps on a private stack."""
    stack = start_stack()
    try:
        settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix=PREFIX)
        return asyncio.run(measure(settings, stack.root / "worker.log"))
    finally:
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)


def main() -> None:
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}, {info['platform']}")
    started = time.monotonic()
    timings, in_worker = run_measured()
    results = {f"step_round_trip_p{q}_ms": round(float(np.percentile(timings, q)), 2) for q in (50, 99)}
    verdict = "ok" if results["step_round_trip_p50_ms"] <= TARGET_P50_MS else "MISSED"
    elapsed = time.monotonic() - started
    print(f"{AGENTS} agents, repetition only, {MEASURED_STEPS} steps one at a time ({elapsed:.0f} s)")
    for key, value in results.items():
        print(f"  {key:<34}{value:>8.2f}")
    for q in (50, 99):
        print(f"  {f'in the worker p{q} (ms, not saved)':<34}{np.percentile(in_worker, q):>8.2f}")
    print(f"  target p50 ≤ {TARGET_P50_MS:.0f} ms: {verdict}")
    merge_results(RESULTS_PATH, results)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
