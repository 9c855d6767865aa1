"""Faust's consumer bookkeeping, reached by the fast lanes (:mod:`streams.runtime.transport`,
:mod:`streams.runtime.commits`): the offsets read, acked and committed on each partition, the gaps commits may
pass, and the aiokafka consumer and fetcher behind Faust's consumer thread."""

from __future__ import annotations

from typing import Any, cast

from faust.types import TP

#: The private names reached below (part of :data:`streams.runtime.faust_private.PRIVATE_NAMES`).
NAMES: tuple[tuple[str, str, str], ...] = (
    ("faust.transport.drivers.aiokafka:Consumer", "_read_offset", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_unacked_messages", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_add_gap", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_committed_offset", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_acked", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_gap", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_thread", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_stopped", "attribute"),
    ("faust.transport.consumer:Consumer", "_get_active_partitions", "method"),
    ("faust.transport.consumer:Fetcher", "_stopped", "attribute"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_consumer", "attribute"),
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_fetcher", "attribute"),
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_coordinator", "attribute"),
)


def read_offset(consumer: Any, tp: TP) -> int | None:
    """The offset Faust's consumer last read on ``tp`` (None before the first record)."""
    return cast("int | None", consumer._read_offset[tp])


def set_read_offset(consumer: Any, tp: TP, offset: int) -> None:
    consumer._read_offset[tp] = offset


async def add_gap(consumer: Any, tp: TP, first: int, last: int) -> None:
    """Let offset commits pass ``first..last``, offsets that will never be acked (absent or skipped)."""
    await consumer._add_gap(tp, first, last)


def committed_offset(consumer: Any, tp: TP) -> int | None:
    """The offset Faust's consumer last committed on ``tp``, i.e. the next one the group reads (None: none yet)."""
    return cast("int | None", consumer._committed_offset[tp])


def start_commits_at(consumer: Any, tp: TP, offset: int) -> None:
    """Where commits of ``tp`` start when nothing was committed yet: the first record read since the assignment."""
    if consumer._committed_offset[tp] is None:
        consumer._committed_offset[tp] = offset


def acked_offsets(consumer: Any, tp: TP) -> list[int]:
    """The offsets acked on ``tp`` and not committed yet."""
    return cast("list[int]", consumer._acked[tp])


def in_gap(consumer: Any, tp: TP, offset: int) -> bool:
    """True when ``offset`` of ``tp`` is a gap: an offset that will never be acked (absent or skipped)."""
    return bool(consumer._gap[tp].overlaps(offset))


def release(consumer: Any, message: Any) -> None:
    """Forget a tracked message that will not be handled here (fetched again after a rebalance)."""
    consumer._unacked_messages.discard(message)


def active_partitions(consumer: Any) -> set[TP]:
    """The assigned partitions Faust's consumer fetches now (not paused by a rebalance's recovery)."""
    return set(consumer._get_active_partitions())


def fetch_loop_stopped(consumer: Any, fetcher: Any) -> bool:
    return bool(consumer._stopped.is_set() or fetcher._stopped.is_set())


def consumer_thread(consumer: Any) -> Any:
    """The thread service behind Faust's consumer (None before it is created)."""
    return getattr(consumer, "_thread", None)


def kafka_fetcher(kafka_consumer: Any) -> Any:
    """aiokafka's fetcher of a consumer (None before the consumer starts)."""
    return kafka_consumer._fetcher


def kafka_consumer(thread: Any) -> Any:
    """The aiokafka consumer of Faust's consumer thread (None before it is created)."""
    return getattr(thread, "_consumer", None)


async def seek_to_committed(kafka_consumer: Any) -> dict[TP, int | None]:
    """aiokafka's ``seek_to_committed`` of every assigned partition, with one OffsetFetch request: aiokafka's asks
    once per partition, one after another (0.4 s for a worker's partitions on the embedded broker under a stream,
    in the resume of every rebalance: BENCHMARKS.md, run AA). None: nothing committed."""
    partitions = kafka_consumer.assignment()
    found = await kafka_consumer._coordinator.fetch_committed_offsets(list(partitions))
    committed: dict[TP, int | None] = {}
    for tp in partitions:
        offset = found[tp].offset if tp in found else -1
        committed[tp] = None if offset == -1 else offset
        if offset > 0:
            kafka_consumer.seek(tp, offset)
    return committed
