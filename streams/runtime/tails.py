"""Changelog tails read with a plain aiokafka consumer, for restores that do not wait on Faust's recovery loop.

Faust restores a table by handing each changelog record through its consumer thread, a queue and its recovery
loop, one event at a time: about 2,000 records a second on the benchmark's machine, so a partition that moves in
a hand-over waited seconds for a tail of a minute's traffic. A plain consumer reads the same records in batches
at tens of thousands a second. :func:`read_tails` reads them; :func:`changelog_events` shapes them as the events
Faust's ``apply_changelog_batch`` takes (keys and values JSON, as the tables' codec writes them), so the table, its
store and :class:`streams.runtime.tables.DirectTable`'s bookkeeping apply them exactly as a Faust restore would.
Faust then starts after the last offset applied here and finds nothing left to read.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.wire.kafka import true_end_offsets

log = logging.getLogger(__name__)

#: Told, before a tail is read, the end offset of each partition it reads to.
EndsKnown = Callable[[dict[int, int]], None]


@dataclass(frozen=True)
class ChangelogMessage:
    """The part of a Kafka record a table restore reads (Faust's ``Message``)."""

    key: bytes
    value: bytes | None
    partition: int
    offset: int


@dataclass(frozen=True)
class ChangelogEvent:
    """A changelog record as Faust's table restore gets it: the key and value decoded, the record beside."""

    key: Any
    value: Any
    message: ChangelogMessage


async def read_tails(
    consumer: AIOKafkaConsumer, topic: str, starts: Mapping[int, int | None], ends_known: EndsKnown | None = None
) -> dict[int, list[ChangelogMessage]]:
    """Every record of ``topic``'s partitions from each start offset (None: the first one held) to the end the
    partition has now; ``ends_known`` is told those ends (of the partitions with records to read) before the
    reading. It has no deadline of its own: the caller bounds it, end offsets and consumer start included
    (:meth:`streams.runtime.restore.RestorePlan.read_tails`)."""
    ends = {tp.partition: end for tp, end in (await _ends(consumer, topic, starts)).items()}
    wanted = {p: TopicPartition(topic, p) for p, end in ends.items() if end > (starts[p] or 0)}
    if ends_known is not None:
        ends_known({p: ends[p] for p in wanted})
    out: dict[int, list[ChangelogMessage]] = {p: [] for p in wanted}
    if not wanted:
        return out
    consumer.assign(list(wanted.values()))
    for p, tp in wanted.items():
        start = starts[p]
        if start is None:
            await consumer.seek_to_beginning(tp)
        else:
            consumer.seek(tp, start)
    pending = set(wanted)
    try:
        while pending:
            batches = await consumer.getmany(*[wanted[p] for p in pending], timeout_ms=100, max_records=10_000)
            for tp, records in batches.items():
                kept = out[tp.partition]
                kept.extend(ChangelogMessage(r.key, r.value, tp.partition, r.offset) for r in records
                            if r.offset < ends[tp.partition] and r.key is not None)  # fmt: skip
                if records and records[-1].offset + 1 >= ends[tp.partition]:
                    pending.discard(tp.partition)
    finally:
        consumer.assign([])
    return out


async def _ends(consumer: AIOKafkaConsumer, topic: str, partitions: Iterable[int]) -> dict[TopicPartition, int]:
    tps = [TopicPartition(topic, p) for p in sorted(partitions)]
    return await true_end_offsets(consumer, await consumer.end_offsets(tps)) if tps else {}


def changelog_events(messages: Iterable[ChangelogMessage]) -> list[ChangelogEvent]:
    """``messages`` as the events of a Faust table restore; a record that is not JSON is skipped (logged)."""
    events: list[ChangelogEvent] = []
    for message in messages:
        try:
            value = None if message.value is None else orjson.loads(message.value)
            events.append(ChangelogEvent(orjson.loads(message.key), value, message))
        except orjson.JSONDecodeError:
            log.warning("changelog record at offset %d of partition %d is not JSON: skipped", message.offset,
                        message.partition)  # fmt: skip
    return events


async def timestamps(consumer: AIOKafkaConsumer, offsets: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The timestamp (ms) of the record at each given offset (absent when it cannot be read in time)."""
    if not offsets:
        return {}
    consumer.assign(list(offsets))
    for tp, offset in offsets.items():
        consumer.seek(tp, offset)
    stamps: dict[TopicPartition, int] = {}
    deadline = time.monotonic() + 5.0
    while len(stamps) < len(offsets) and time.monotonic() < deadline:
        batch = await consumer.getmany(*[tp for tp in offsets if tp not in stamps], timeout_ms=500)
        for tp, records in batch.items():
            at = next((r for r in records if r.offset == offsets[tp]), None)
            if at is not None:
                stamps[tp] = at.timestamp
            elif records and records[0].offset > offsets[tp]:
                stamps[tp] = -1  # no longer held: the checkpoint cannot be checked
    consumer.assign([])
    return {tp: s for tp, s in stamps.items() if s >= 0}
