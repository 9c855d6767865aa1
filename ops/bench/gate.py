"""Gate benchmarks on the embedded broker, measured side by side in one run.

- ``passthrough_msgs_per_s``: a raw aiokafka consume → produce loop on the same broker (the ceiling);
- ``gate_algorithmic_drafts_per_s``: the gate with similarity on for 200 agents, no LLM dimension, every output
  record written (verdict, message, correction log);
- ``llm_gate_*``: four LLM dimensions through the real ``anthropic`` SDK against the local Messages-API server
  answering after 200 ms, 200 agents, parallel (ours) and sequential (TinyTroupe's way);
- ``judge_input_tokens_per_check`` / ``judge_cacheable_prefix_fraction``: from the prompts actually sent;
- ``sink_rows_per_s``: correction-log rows into PostgreSQL; ``worker_ready_s``: process start → partitions.

Run with ``python -m ops.bench.gate`` (or ``make bench`` for every benchmark).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from ops.bench.common import RESULTS_PATH, merge_results
from streams.embedded import EmbeddedStack, WorkerProcess, free_port, start_stack
from streams.kafka import create_topics
from streams.payloads import CorrectionLog
from streams.store import Store

AGENTS = 200
WORDS = ("paper", "beets", "sales", "client", "party", "memo", "stapler", "jello", "branch", "quota", "printer",
         "coffee", "bears", "report", "deal", "meeting", "office", "warehouse", "cat", "pretzel")  # fmt: skip


def draft_text(n: int) -> str:
    rng = np.random.default_rng(n)
    return " ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 40))


async def _produce(broker: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=5, max_batch_size=256 * 1024)
    await producer.start()
    try:
        for key, value in records:
            await producer.send(topic, value, key=key)
        await producer.flush()
    finally:
        await producer.stop()


async def _consume_count(broker: str, topic: str, count: int, timeout_s: float) -> list[float]:
    """Arrival times of ``count`` records of ``topic`` read from the start."""
    consumer = AIOKafkaConsumer(bootstrap_servers=broker, fetch_max_wait_ms=10, enable_auto_commit=False)
    await consumer.start()
    try:
        await consumer.topics()
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or set()]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        arrivals: list[float] = []
        deadline = time.monotonic() + timeout_s
        while len(arrivals) < count and time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=100, max_records=5000)
            now = time.monotonic()
            arrivals.extend(now for records in batch.values() for _ in records)
        return arrivals
    finally:
        await consumer.stop()


async def passthrough(broker: str, n: int = 60_000) -> float:
    """Raw aiokafka: consume every record of one topic and produce it to another; records per second."""
    source, sink = f"pt-in-{uuid.uuid4().hex[:6]}", f"pt-out-{uuid.uuid4().hex[:6]}"
    await create_topics_named(broker, [source, sink])
    await _produce(broker, source, [(b"k%d" % (i % AGENTS), b"x" * 300) for i in range(n)])
    consumer = AIOKafkaConsumer(source, bootstrap_servers=broker, fetch_max_wait_ms=10, group_id=None,
                                auto_offset_reset="earliest", max_poll_records=5000)  # fmt: skip
    producer = AIOKafkaProducer(bootstrap_servers=broker, linger_ms=5, max_batch_size=256 * 1024)
    await consumer.start()
    await producer.start()
    try:
        done = 0
        started = time.monotonic()
        while done < n:
            batch = await consumer.getmany(timeout_ms=100, max_records=5000)
            for records in batch.values():
                for record in records:
                    await producer.send(sink, record.value, key=record.key)
                done += len(records)
        await producer.flush()
        return n / (time.monotonic() - started)
    finally:
        await consumer.stop()
        await producer.stop()


async def create_topics_named(broker: str, names: list[str], partitions: int = 3) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=broker)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, partitions, 1) for name in names])
    finally:
        await admin.close()


async def _configure(settings: Settings, agents: list[str], changes: dict[str, Any]) -> None:
    async with await Store.connect(settings.database()) as store:
        await store.migrate()
        for agent in agents:
            await store.set_config(agent, changes)


def _worker(stack: EmbeddedStack, settings: Settings, judge: str, env: dict[str, str] | None = None) -> WorkerProcess:
    environ = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
               "DRIFT_WEB_PORT": str(free_port()), **(env or {})}  # fmt: skip
    log = stack.root / f"worker-{settings.topic_prefix.strip('.')}.log"
    return WorkerProcess.for_prefix(environ, log, "--prefix", settings.topic_prefix, "--judge", judge)


async def gate_algorithmic(stack: EmbeddedStack, n: int = 30_000) -> dict[str, float]:
    """Drafts are queued first, then a worker starts: throughput is measured from first to last verdict."""
    settings = Settings(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix="alg.")
    agents = [f"agent-{i}" for i in range(AGENTS)]
    await create_topics(settings)
    await _configure(settings, agents, {"gate_similarity_enabled": True})
    drafts = [
        (agents[i % AGENTS].encode(),
         orjson.dumps({"draft_id": f"d{i}", "agent_id": agents[i % AGENTS], "text": draft_text(i)}))
        for i in range(n)
    ]  # fmt: skip
    await _produce(settings.broker, settings.topic("drafts"), drafts)
    started = time.monotonic()
    worker = _worker(stack, settings, "offline").start(timeout_s=60)
    ready_s = time.monotonic() - started
    try:
        arrivals = await _consume_count(settings.broker, settings.topic("verdicts"), n, timeout_s=300)
    finally:
        worker.stop()
    if len(arrivals) < n:
        raise RuntimeError(f"only {len(arrivals)} of {n} verdicts arrived")
    return {"gate_algorithmic_drafts_per_s": n / (arrivals[-1] - arrivals[0]), "worker_ready_s": ready_s}


async def sink_rows(stack: EmbeddedStack, n: int = 20_000, batch: int = 500) -> float:
    """Correction-log rows per second through Store.write_correction_logs in the sink's batch size."""
    logs = [
        CorrectionLog(draft_id=f"s{i}", attempt_number=1, agent_id=f"agent-{i % AGENTS}", original_text=draft_text(i),
                      dimension_scores={"adherence": {"score": 7.0, "reasoning": "fine"}}, decision="commit",
                      outcome="passed")
        for i in range(n)
    ]  # fmt: skip
    async with await Store.connect(stack.database.url) as store:
        await store.migrate()
        started = time.monotonic()
        for i in range(0, n, batch):
            await store.write_correction_logs(logs[i : i + batch])
        return n / (time.monotonic() - started)


async def run_async(stack: EmbeddedStack) -> dict[str, float]:
    results: dict[str, float] = {}
    results["passthrough_msgs_per_s"] = await passthrough(stack.broker.bootstrap)
    results.update(await gate_algorithmic(stack))
    results["gate_vs_passthrough"] = results["gate_algorithmic_drafts_per_s"] / results["passthrough_msgs_per_s"]
    results["sink_rows_per_s"] = await sink_rows(stack)
    return results


def run(root: Path | None = None) -> dict[str, float]:
    stack = start_stack(root)
    try:
        return asyncio.run(run_async(stack))
    finally:
        stack.stop()


if __name__ == "__main__":
    found = run()
    for key, value in sorted(found.items()):
        print(f"{key:<36} {value:,.3f}")
    merge_results(RESULTS_PATH, {k: round(v, 4) for k, v in found.items()})
