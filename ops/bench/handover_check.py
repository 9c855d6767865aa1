"""Where the hand-over benchmark's unanswered drafts were lost: before the stack stops (its broker keeps topics in
memory), each unanswered draft is looked up on the broker itself.

A draft whose verdict is on the verdicts topic was decided and only missed by the benchmark's live reader; one
without was never decided, and the gate group's committed offset on its drafts partition, beside the draft's own
offset, says whether commits passed it (a draft below the committed offset will not be read again by any worker).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from engine.settings import Settings
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import client_kwargs, true_end_offsets
from streams.wire.topics import app_id


async def verdicts_on_broker(settings: Settings, draft_ids: set[str], partitions: int) -> set[str]:
    """Those of ``draft_ids`` with a verdict on the verdicts topic, read whole from its start."""
    if not draft_ids:
        return set()
    consumer = kafka_consumer(settings, enable_auto_commit=False, fetch_max_wait_ms=500)
    await consumer.start()
    found: set[str] = set()
    try:
        tps = [TopicPartition(settings.topic("verdicts"), p) for p in range(partitions)]
        consumer.assign(tps)
        ends = await true_end_offsets(consumer, dict(await consumer.end_offsets(tps)))
        consumer.assign(tps)  # the probe above re-assigned only the non-empty ones
        await consumer.seek_to_beginning(*tps)
        async with asyncio.timeout(120.0):
            while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
                batch = await consumer.getmany(timeout_ms=500, max_records=5000)
                for records in batch.values():
                    found.update(d for r in records if (d := orjson.loads(r.value)["draft_id"]) in draft_ids)
    finally:
        await consumer.stop()
    return found


async def committed_drafts_offsets(settings: Settings, partitions: int) -> dict[int, int | None]:
    """The gate group's committed offset of each drafts partition (None: nothing committed)."""
    consumer = AIOKafkaConsumer(**client_kwargs(settings), group_id=app_id(settings), enable_auto_commit=False)
    await consumer.start()
    try:
        out: dict[int, int | None] = {}
        for p in range(partitions):
            out[p] = await consumer.committed(TopicPartition(settings.topic("drafts"), p))
        return out
    finally:
        await consumer.stop()


def ranges(offsets: Iterable[int]) -> str:
    """``[3, 4, 5, 9]`` -> ``"3..5, 9"``."""
    spans: list[list[int]] = []
    for n in sorted(offsets):
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in spans)


async def post_mortem(settings: Settings, traffic: Any, partitions: int) -> dict[str, Any]:
    """The unanswered drafts split into decided (the reader missed the verdict) and never decided, with their
    drafts offsets per partition and the gate group's committed offsets. Empty when every draft was answered."""
    lost = {d for d in traffic.sent if d not in traffic.answered}
    if not lost:
        return {}
    decided = await verdicts_on_broker(settings, lost, partitions)
    committed = await committed_drafts_offsets(settings, partitions)
    undecided: dict[int, list[int]] = {}
    for d in lost - decided:
        if d in traffic.offsets:
            undecided.setdefault(traffic.sent[d][1], []).append(traffic.offsets[d])
    return {
        "unanswered": len(lost),
        "decided_missed_by_reader": len(decided),
        "undecided_offsets": {p: ranges(o) for p, o in sorted(undecided.items())},
        "committed": committed,
    }
