"""Scenario f: drafts compressed with every codec Kafka defines, from the two producers orchestrators use —
aiokafka (``compression_type``) and librdkafka through confluent-kafka (``compression.codec``) — then one
record batch whose compressed data is broken (built by hand, correct CRC: only decompression fails).

Before issue 20, the first snappy batch raised in the worker's fetcher and stopped it, and again after every
restart. Every compressed draft must be verdicted; the broken batch must give one dead letter naming its first
and last offset, and the drafts after it on the same partition must be verdicted.
"""

from __future__ import annotations

from aiokafka import AIOKafkaProducer
from aiokafka.partitioner import DefaultPartitioner
from confluent_kafka import Producer

from ops.chaos.common import Figures, Stage
from ops.chaos.wire import deaths, draft, letters, one_worker, send_in_order, verdicts_by_id
from streams.wire.kafka import client_kwargs
from streams.wire.topics import Topics
from tests.streams.batches import GZIP, batch, broken_gzip

CODECS = ("gzip", "snappy", "lz4", "zstd")


async def run(stage: Stage, *, per_producer: int = 25, broken: int = 3) -> Figures:
    agents = [f"{stage.prefix}creed{i}" for i in range(4)]
    toby = f"{stage.prefix}toby"
    run_id = f"{stage.prefix}run"
    sent: dict[str, set[str]] = {}
    async with one_worker(stage, [*agents, toby]):
        for codec in CODECS:
            sent[f"aiokafka {codec}"] = await _aiokafka(stage, codec, agents, per_producer)
            sent[f"confluent-kafka {codec}"] = _confluent(stage, codec, agents, per_producer)
        lost = [f"{run_id}-lost{n}" for n in range(broken)]
        offsets = await _broken_batch(stage, toby, [draft(run_id, i, toby)[1] or b"" for i in lost])
        after = {f"{run_id}-after{n}" for n in range(10)}
        await send_in_order(stage, [draft(run_id, i, toby) for i in sorted(after)])
        verdicts = await verdicts_by_id(stage, set().union(*sent.values()) | after)
        dead = await letters(stage, 1)
    died = deaths(stage)
    figures: Figures = {f"{name} verdicted": f"{len(ids & set(verdicts))}/{len(ids)}" for name, ids in sent.items()}
    letter = dead[0] if len(dead) == 1 else {}
    span = (letter.get("offset"), letter.get("last_offset"))
    figures |= {
        "broken gzip batch: records": broken,
        "dead letters": len(dead),
        "dead letter offsets (first, last)": f"{span[0]}, {span[1]} (batch at {offsets[0]}, {offsets[1]})",
        "dead letter reason": str(letter.get("error", "none"))[:90],
        "verdicts for the broken batch's drafts": len(set(lost) & set(verdicts)),
        "drafts after it verdicted": f"{len(after & set(verdicts))}/{len(after)}",
        "worker deaths": died,
        "ok": int(all(ids <= set(verdicts) for ids in sent.values()) and after <= set(verdicts) and died == 0
                  and span == offsets and str(letter.get("error", "")).startswith("undecodable record batch")),
    }  # fmt: skip
    return figures


async def _aiokafka(stage: Stage, codec: str, agents: list[str], count: int) -> set[str]:
    producer = AIOKafkaProducer(**client_kwargs(stage.settings), compression_type=codec, linger_ms=20)
    await producer.start()
    ids = {f"{stage.prefix}run-aiokafka-{codec}-{n}" for n in range(count)}
    try:
        for n, draft_id in enumerate(sorted(ids)):
            key, value = draft(f"{stage.prefix}run", draft_id, agents[n % len(agents)])
            await producer.send(Topics(stage.prefix).drafts, value, key=key)
        await producer.flush()
    finally:
        await producer.stop()
    return ids


def _confluent(stage: Stage, codec: str, agents: list[str], count: int) -> set[str]:
    producer = Producer({"bootstrap.servers": stage.broker, "compression.codec": codec, "linger.ms": 20})
    ids = {f"{stage.prefix}run-confluent-{codec}-{n}" for n in range(count)}
    for n, draft_id in enumerate(sorted(ids)):
        key, value = draft(f"{stage.prefix}run", draft_id, agents[n % len(agents)])
        producer.produce(Topics(stage.prefix).drafts, value, key)
    if (left := producer.flush(15)) != 0:
        raise RuntimeError(f"confluent-kafka could not deliver {left} {codec} drafts")
    return ids


async def _broken_batch(stage: Stage, agent: str, values: list[bytes]) -> tuple[int, int]:
    """One gzip batch of ``values`` whose compressed data is broken, on ``agent``'s partition (where its drafts
    go); the first and last offset the broker gave it."""
    producer = AIOKafkaProducer(**client_kwargs(stage.settings))
    await producer.start()
    try:
        topic = Topics(stage.prefix).drafts
        partitions = sorted(await producer.partitions_for(topic))
        partition = int(DefaultPartitioner()(agent.encode(), partitions, partitions))
        builder = producer.create_batch()
        for value in values:
            builder.append(key=agent.encode(), value=value, timestamp=None)
        builder._buffer = broken_gzip(batch(0, values, codec=GZIP, key=agent.encode()))  # what goes on the wire
        metadata = await (await producer.send_batch(builder, topic, partition=partition))
    finally:
        await producer.stop()
    return int(metadata.offset), int(metadata.offset) + len(values) - 1
