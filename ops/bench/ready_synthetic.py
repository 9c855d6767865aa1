"""History written straight into the changelogs, for :mod:`ops.bench.ready` ``--synthetic``.

On a loaded shared machine the gate may judge only a few hundred drafts per second, and 500,000 drafts of real
history take longer than a run can. This writes what those drafts leave in the changelogs — per draft one
``verdict-records`` record and one ``recent-messages`` record of its agent (200 agents), shaped as the gate
writes them, stamped an hour ago — plus the committed messages' rows in ``run_messages`` (the agents' windows,
10 per agent), and the restore checkpoints a worker would have recorded at the end. A joining worker then
restores exactly what it would after that history; only the way the history got there differs (labelled in
the output).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine.settings import Settings
from ops.bench.gate import AGENTS, draft_text
from streams.runtime.restore import agent_partition
from streams.store import Store
from streams.store.restore import Checkpoint
from streams.wire.payloads import Message
from streams.wire.topics import app_id


def _records(n: int, agents: list[str]) -> list[tuple[str, int, bytes, bytes]]:
    """(changelog table, partition, key, value) of ``n`` drafts."""
    out: list[tuple[str, int, bytes, bytes]] = []
    recent: dict[str, list[dict[str, object]]] = {}
    for i in range(n):
        agent = agents[i % AGENTS]
        partition, text = agent_partition(agent, 3), draft_text(i)
        verdict = {"1": {"verdict": {"draft_id": f"d{i}", "attempt": 1, "agent_id": agent, "decision": "commit",
                                     "outcome": "passed", "text": text, "scores": {}, "latency_ms": 1.0},
                         "at": "2026-01-01T00:00:00Z"}}  # fmt: skip
        out.append(("verdict-records", partition, orjson.dumps(f"d{i}"), orjson.dumps(verdict)))
        window = recent.setdefault(agent, [])
        window.append({"id": f"d{i}", "text": text, "channel": None, "n": i // AGENTS + 1})
        del window[:-10]
        out.append(("recent-messages", partition, orjson.dumps(agent), orjson.dumps(window)))
    return out


async def write_history(settings: Settings, n: int) -> None:
    """Write ``n`` drafts' changelog records (an hour old), the agents' last messages and the checkpoints."""
    agents = [f"agent-{i}" for i in range(AGENTS)]
    stamp = int((time.time() - 3600) * 1000)
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker, linger_ms=20, max_batch_size=512 * 1024)
    await producer.start()
    try:
        for table, partition, key, value in _records(n, agents):
            topic = f"{app_id(settings)}-{table}-changelog"
            await producer.send(topic, value, key=key, partition=partition, timestamp_ms=stamp)
        await producer.flush()
    finally:
        await producer.stop()
    async with await Store.connect(settings.database()) as store:
        last = [Message(message_id=f"d{i}", agent_id=agents[i % AGENTS], text=draft_text(i))
                for i in range(max(0, n - 10 * AGENTS), n)]  # fmt: skip
        await store.write_messages(last)
        await store.record_checkpoints(await _ends(settings), datetime.now(UTC) - timedelta(days=1))


async def _ends(settings: Settings) -> list[Checkpoint]:
    topics = [f"{app_id(settings)}-{t}-changelog" for t in ("verdict-records", "recent-messages")]
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.broker, enable_auto_commit=False)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(t, p) for t in topics for p in range(3)])
    finally:
        await consumer.stop()
    taken = datetime.now(UTC) - timedelta(minutes=30)  # older than the window: the history lies before it
    return [Checkpoint(tp.topic, tp.partition, end, taken) for tp, end in ends.items() if end > 0]
