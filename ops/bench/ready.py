"""A joining worker's ready time after 0, 100k, 150k and 500k drafts of history, on the embedded broker.

For each history size a private stack (Tansu + PostgreSQL) and a first ``drift worker`` (offline judge,
similarity on for 200 agents, sinks inside) judge that many drafts; once the newest restore checkpoint of every
changelog partition is older than the restore window (the history lies before it), a second worker joins and
its time from process start to its ``ready`` line is measured — bounded restore (the default) and, beside it,
the whole-changelog replay (``DRIFT_RESTORE_WINDOW_S=0``, what Faust did before) for comparison.

The restore window is shortened to 20 s here so the run need not wait the default 15 minutes; the mechanism
is the same (:mod:`streams.runtime.restore`).

Run from the repository root: ``.venv/bin/python -m ops.bench.ready [--history 0,100000,150000,500000]``;
``--synthetic`` writes the history straight into the changelogs instead of judging it (see
:mod:`ops.bench.ready_synthetic`; for machines where the gate cannot judge that much in a run). Merges
``ready_after_<n>_s``, ``ready_full_replay_after_<n>_s`` and ``ready_<n>_vs_fresh`` into ``results.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, machine_info, merge_results
from ops.bench.gate import AGENTS, _configure, _consume_count, _produce, _worker, draft_text
from ops.bench.ready_synthetic import write_history
from streams.embedded import EmbeddedStack, WorkerProcess, start_stack
from streams.store import Store
from streams.wire.kafka import create_topics
from streams.wire.topics import changelog_topics

WINDOW_S = 20.0
CHECKPOINT_S = 1.0
CHUNK = 20_000
JOINS = 3  # joins per mode and history size, alternating (the median is kept): a join's time is mostly the
#            consumer group's rebalance choreography, which varies by a few seconds on a loaded machine


def _env(window_s: float) -> dict[str, str]:
    return {"DRIFT_RESTORE_WINDOW_S": str(window_s), "DRIFT_RESTORE_CHECKPOINT_S": str(CHECKPOINT_S)}


async def make_history(stack: EmbeddedStack, settings: Settings, n: int) -> None:
    """``n`` drafts of 200 agents, judged by the first worker (already running)."""
    agents = [f"agent-{i}" for i in range(AGENTS)]
    for start in range(0, n, CHUNK):
        drafts = [
            (agents[i % AGENTS].encode(),
             orjson.dumps({"draft_id": f"d{i}", "agent_id": agents[i % AGENTS], "text": draft_text(i)}))
            for i in range(start, min(n, start + CHUNK))
        ]  # fmt: skip
        await _produce(settings.broker, settings.topic("drafts"), drafts)
    if n:
        # generous: on a loaded shared machine the gate may run at a few hundred drafts per second
        arrivals = await _consume_count(settings.broker, settings.topic("verdicts"), n, timeout_s=300 + n / 50)
        if len(arrivals) < n:
            raise RuntimeError(f"only {len(arrivals)} of {n} verdicts arrived")


async def history_behind_window(settings: Settings, timeout_s: float = 180.0) -> None:
    """Wait until each changelog partition's newest checkpoint older than the window is at its end offset."""
    topics = list(changelog_topics(settings))
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.broker, enable_auto_commit=False)
    await consumer.start()
    deadline = time.monotonic() + timeout_s
    try:
        async with await Store.connect(settings.database()) as store:
            while time.monotonic() < deadline:
                tps = [TopicPartition(t, p) for t in topics for p in range(3)]
                ends = {(tp.topic, tp.partition): end for tp, end in (await consumer.end_offsets(tps)).items()}
                rows = await store.pool.fetch(
                    "SELECT DISTINCT ON (topic, partition) topic, partition, end_offset FROM changelog_checkpoints "
                    "WHERE topic = ANY($1) AND taken_at <= now() - make_interval(secs => $2) "
                    "ORDER BY topic, partition, taken_at DESC", topics, WINDOW_S)  # fmt: skip
                covered = {
                    (r["topic"], r["partition"]) for r in rows if r["end_offset"] >= ends[(r["topic"], r["partition"])]
                }
                if all(key in covered for key, end in ends.items() if end > 0):
                    return
                await asyncio.sleep(1.0)
    finally:
        await consumer.stop()
    raise RuntimeError("the history never fell behind the restore window")


def join(stack: EmbeddedStack, settings: Settings, window_s: float) -> float:
    """Seconds from a second worker's process start to its ``ready`` line."""
    started = time.monotonic()
    worker = _worker(stack, settings, "offline", env=_env(window_s)).start(timeout_s=300)
    ready = time.monotonic() - started
    worker.stop()
    return ready


async def measure(n: int, synthetic: bool = False) -> dict[str, Any]:
    stack = start_stack()
    first: WorkerProcess | None = None
    try:
        settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix="ready.")
        await create_topics(settings)
        await _configure(settings, [f"agent-{i}" for i in range(AGENTS)], {"gate_similarity_enabled": True})
        made = time.monotonic()
        if synthetic:  # the changelogs as that history leaves them (see ops.bench.ready_synthetic)
            await write_history(settings, n)
        first = _worker(stack, settings, "offline", env=_env(WINDOW_S)).start(timeout_s=300)
        if not synthetic:
            await make_history(stack, settings, n)
            await history_behind_window(settings, timeout_s=300 + n / 100)  # the worker's state lane may lag
        made_s = time.monotonic() - made
        bounded, full = [], []
        for _ in range(JOINS):
            bounded.append(join(stack, settings, WINDOW_S))
            full.append(join(stack, settings, 0))
        return {"bounded": statistics.median(bounded), "full": statistics.median(full), "history_s": made_s}
    finally:
        if first is not None:
            first.stop()
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m ops.bench.ready")
    parser.add_argument("--history", default="0,100000,150000,500000", help="history sizes in drafts, comma-separated")
    parser.add_argument("--synthetic", action="store_true", help="write the history into the changelogs directly")
    args = parser.parse_args()
    sizes = [int(x) for x in args.history.split(",")]
    info = machine_info()
    print(f"machine: {info['cpu']}, {info['cores']} cores, Python {info['python']}")
    results: dict[str, float] = {}
    for n in sizes:  # any order: the ratios are taken once every size is measured
        found = asyncio.run(measure(n, args.synthetic))
        results[f"ready_after_{n}_s"] = round(found["bounded"], 2)
        results[f"ready_full_replay_after_{n}_s"] = round(found["full"], 2)
        bounded, full, made = found["bounded"], found["full"], found["history_s"]
        how = "written into the changelogs" if args.synthetic else "judged"
        print(f"history {n:>7,} drafts {how} ({made:.0f} s to make): joining worker ready in {bounded:.2f} s bounded, "
              f"{full:.2f} s replaying whole changelogs", flush=True)  # fmt: skip
    if (fresh := results.get("ready_after_0_s")) is not None:
        for n in sizes:
            if n:
                results[f"ready_{n}_vs_fresh"] = round(results[f"ready_after_{n}_s"] / fresh, 3)
    for key, value in results.items():
        print(f"  {key:<36}{value:>8.3f}")
    merge_results(RESULTS_PATH, results)
    print(f"written to {RESULTS_PATH}")


if __name__ == "__main__":
    main()
