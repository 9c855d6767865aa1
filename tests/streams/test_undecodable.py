"""Issue 20 point 3: a record batch the consumer cannot decode is skipped and reported, never raised."""

from __future__ import annotations

import collections
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.consumer.fetcher import PartitionRecords
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import TopicPartition

from streams.runtime.undecodable import GuardedRecords, SkippedBatch, guard_fetcher
from tests.streams.batches import GZIP, batch, broken_gzip

TP0 = TopicPartition("drafts", 0)


def partition_records(raw: bytes, fetch_offset: int = 0) -> Any:
    return PartitionRecords(TP0, MemoryRecords(raw), [], fetch_offset, None, None, True, 0)


def fetched(raw: bytes) -> tuple[Any, collections.deque[SkippedBatch]]:
    """``raw`` as a fetch result stored in a guarded fetcher buffer."""
    skipped: collections.deque[SkippedBatch] = collections.deque()
    fetcher = SimpleNamespace(_records=collections.OrderedDict())
    guard_fetcher(fetcher, skipped)
    records = partition_records(raw)
    fetcher._records[TP0] = SimpleNamespace(_partition_records=records)
    return records, skipped


GOOD_BAD_GOOD = batch(0, [b"a", b"b"]) + broken_gzip(batch(2, [b"c" * 100, b"d", b"e"], codec=GZIP)) + batch(5, [b"f"])


def test_unguarded_aiokafka_raises_out_of_the_fetch() -> None:
    """What killed the worker: the error escapes the record iterator (and so ``getmany``)."""
    with pytest.raises(Exception, match="decompress"):
        list(partition_records(GOOD_BAD_GOOD))


def test_a_bad_batch_ends_the_partition_records_and_moves_the_position_past_it() -> None:
    records, skipped = fetched(GOOD_BAD_GOOD)
    assert [r.value for r in records] == [b"a", b"b"]  # records before the bad batch are delivered
    assert records.next_fetch_offset == 5  # the next fetch starts after the bad batch (offsets 2-4)
    [skip] = skipped
    assert (skip.topic, skip.partition, skip.first, skip.last) == ("drafts", 0, 2, 4)
    assert skip.reason.startswith("undecodable record batch: error: Error -3 while decompressing")


def test_a_bad_first_batch_is_skipped_whole_and_the_rest_comes_from_the_next_fetch() -> None:
    records, skipped = fetched(broken_gzip(batch(7, [b"x", b"y"], codec=GZIP)) + batch(9, [b"z"]))
    assert list(records) == [] and records.next_fetch_offset == 9
    assert [(s.first, s.last) for s in skipped] == [(7, 8)]
    rest, _ = fetched(batch(9, [b"z"]))
    assert [r.offset for r in rest] == [9]


def test_a_bad_crc_is_skipped_too() -> None:
    raw = bytearray(batch(3, [b"q", b"r"]))
    raw[-1] ^= 0xFF  # the CRC no longer matches
    records, skipped = fetched(bytes(raw))
    assert list(records) == [] and [(s.first, s.last) for s in skipped] == [(3, 4)]
    assert "CorruptRecord" in skipped[0].reason


def test_results_already_buffered_are_guarded_and_the_guard_is_installed_once() -> None:
    skipped: collections.deque[SkippedBatch] = collections.deque()
    records = partition_records(broken_gzip(batch(0, [b"x"], codec=GZIP)))
    fetcher = SimpleNamespace(_records=collections.OrderedDict({TP0: SimpleNamespace(_partition_records=records)}))
    guard_fetcher(fetcher, skipped)
    first = fetcher._records
    guard_fetcher(fetcher, skipped)
    assert isinstance(first, GuardedRecords) and fetcher._records is first
    assert list(records) == [] and len(skipped) == 1


class Letters:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[tuple[str, int, int, int]] = []
        self.fail = fail

    async def dead_letter_batch(self, topic: str, partition: int, first: int, last: int, reason: str) -> None:
        if self.fail:
            raise ConnectionError("broker away")
        self.sent.append((topic, partition, first, last))


def consumer_with(skipped: list[SkippedBatch], letters: Letters) -> Any:
    from tests.streams.test_transport import FakeApp, FakeConsumer

    app = FakeApp()
    app.skipped = letters.dead_letter_batch  # type: ignore[attr-defined]
    consumer = FakeConsumer([], app=app)
    consumer._thread = SimpleNamespace(skipped=collections.deque(skipped))  # type: ignore[attr-defined]
    return consumer


async def test_skipped_batches_are_dead_lettered_then_committed_past() -> None:
    from streams.runtime.transport import report_skipped
    from tests.streams.test_transport import TP

    consumer = consumer_with([SkippedBatch("drafts", 1, 10, 14, "undecodable")], letters := Letters())
    await report_skipped(consumer)
    assert letters.sent == [("drafts", 1, 10, 14)] and not consumer._thread.skipped
    assert consumer._read_offset[TP("drafts", 1)] == 14 and consumer.gaps == [(TP("drafts", 1), 10, 14)]


async def test_a_dead_letter_that_cannot_be_sent_is_retried_and_nothing_is_committed_past() -> None:
    from streams.runtime.transport import report_skipped

    consumer = consumer_with([SkippedBatch("drafts", 0, 3, 3, "undecodable")], Letters(fail=True))
    await report_skipped(consumer)
    assert len(consumer._thread.skipped) == 1 and consumer.gaps == []


def test_a_record_the_broker_will_not_send_is_reported_at_its_offset() -> None:
    from aiokafka.errors import RecordTooLargeError

    from streams.runtime.undecodable import unfetchable

    exc = RecordTooLargeError("There are some messages at %s=%s larger than %s", TP0, 42, 4194304)
    skip = unfetchable(exc)
    assert skip is not None and (skip.topic, skip.partition, skip.first, skip.last) == ("drafts", 0, 42, 42)
    assert "4194304" in skip.reason
    assert unfetchable(ValueError("other")) is None
