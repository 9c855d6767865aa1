"""aiokafka's fetcher: the fetch wait (:mod:`streams.runtime.fetchwait`) and the completed fetches whose
undecodable batches :mod:`streams.runtime.undecodable` skips."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from aiokafka import TopicPartition
from faust.types import TP

#: The private names reached below (part of :data:`streams.runtime.faust_private.PRIVATE_NAMES`).
NAMES: tuple[tuple[str, str, str], ...] = (
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_fetch_max_wait_ms", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_records", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_fetch_max_wait_ms", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_proc_fetch_request", "method"),
    ("aiokafka.consumer.fetcher:FetchResult", "_partition_records", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_records_iterator", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_tp", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_unpack_records", "method"),
    ("aiokafka.consumer.fetcher:PartitionRecords._unpack_records", "next_batch", "local"),
)

#: aiokafka's record generator and its local holding the batch being unpacked (found in a traceback).
UNPACK_FUNCTION = "_unpack_records"
UNPACK_BATCH_LOCAL = "next_batch"


def set_fetch_max_wait(kafka_consumer: Any, wait_ms: int) -> None:
    """Faust hard-codes 1500 ms; the embedded broker answers faster with a shorter wait."""
    kafka_consumer._fetch_max_wait_ms = wait_ms


def fetch_max_wait(fetcher: Any) -> int:
    """The max wait (ms) the fetcher sends with each fetch request."""
    wait: int = fetcher._fetch_max_wait_ms
    return wait


_watched: weakref.WeakSet[Any] = weakref.WeakSet()


def on_fetch_responses(fetcher: Any, observe: Callable[[list[Any], set[Any], bool], int | None]) -> bool:
    """After each fetch response the fetcher handles, ``observe(asked, unread, fed)`` gets the partitions the
    request asked for, those that came back without records though the broker reports records past the fetch
    offset, and whether any came back with records; a wait it returns becomes the fetcher's max wait
    (streams.runtime.fetchwait). Installed once: False if an observer was already installed."""
    if fetcher in _watched:
        return False
    _watched.add(fetcher)
    handle = fetcher._proc_fetch_request

    async def handled(assignment: Any, node_id: Any, request: Any) -> Any:
        result = await handle(assignment, node_id, request)
        asked = [(TopicPartition(topic, p[0]), p[1]) for topic, partitions in request.topics for p in partitions]
        unread = {tp for tp, offset in asked if _unread(fetcher, assignment.state_value(tp), tp, offset)}
        fed = any(tp in fetcher._records for tp, _ in asked)
        if (wait := observe([tp for tp, _ in asked], unread, fed)) is not None:
            fetcher._fetch_max_wait_ms = wait
        return result

    fetcher._proc_fetch_request = handled
    return True


def _unread(fetcher: Any, state: Any, tp: Any, offset: int) -> bool:
    """No records buffered for ``tp`` after a response to a fetch at ``offset``, which is still its position,
    while the broker's high watermark lies past it."""
    if state is None or tp in fetcher._records or not state.has_valid_position or state.position != offset:
        return False
    return state.highwater is not None and state.highwater > offset


def fetch_results(fetcher: Any) -> Any:
    """The fetcher's completed fetches (a dict of TP -> FetchResult)."""
    return fetcher._records


def replace_fetch_results(fetcher: Any, results: Any) -> None:
    fetcher._records = results


def partition_records(result: Any) -> Any:
    """A FetchResult's record iterator (None once consumed)."""
    return getattr(result, "_partition_records", None)


def records_iterator(records: Any) -> Any:
    return getattr(records, "_records_iterator", None)


def replace_records_iterator(records: Any, iterator: Any) -> None:
    records._records_iterator = iterator


def records_partition(records: Any) -> TP:
    tp: TP = records._tp
    return tp
