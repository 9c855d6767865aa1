"""Record batches the worker's consumer cannot decode: skipped and dead-lettered, never fatal.

aiokafka decodes a fetched batch lazily, while :meth:`Fetcher.fetched_records` hands records out; a batch it
cannot decode (an unknown or broken compression codec, a bad CRC, a malformed batch) raises out of that call,
which would stop Faust's fetcher and the worker, and the same batch would come back after every restart.

:class:`GuardedRecords` replaces the fetcher's buffer of fetched partitions: each partition's record iterator
is wrapped so that a decoding error ends that partition's records *at the bad batch*, moves its position past
the batch and notes a :class:`SkippedBatch` (topic, partition, first and last offset, reason). Records before
the bad batch are delivered as usual; records after it are fetched again from the new position. The worker
then dead-letters the skipped batch (see :func:`streams.runtime.transport.report_skipped`) and goes on gating.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from streams.runtime import faust_private as private

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SkippedBatch:
    topic: str
    partition: int
    first: int
    last: int
    reason: str


class GuardedRecords(collections.OrderedDict[Any, Any]):
    """The fetcher's ``_records`` (partition -> fetch result), wrapping every fetch result stored in it."""

    def __init__(self, existing: dict[Any, Any], skipped: collections.deque[SkippedBatch]) -> None:
        super().__init__()
        self.skipped = skipped
        for tp, result in existing.items():
            self[tp] = result

    def __setitem__(self, tp: Any, result: Any) -> None:
        records: Any = private.partition_records(result)
        iterator = private.records_iterator(records)
        if iterator is not None and not isinstance(iterator, _Guarded):
            private.replace_records_iterator(records, _Guarded(records, iterator, self.skipped))
        super().__setitem__(tp, result)


def guard_fetcher(fetcher: Any, skipped: collections.deque[SkippedBatch]) -> None:
    """Install :class:`GuardedRecords` on an aiokafka fetcher (once)."""
    results = private.fetch_results(fetcher)
    if not isinstance(results, GuardedRecords):
        private.replace_fetch_results(fetcher, GuardedRecords(results, skipped))


class _Guarded(Iterator[Any]):
    """A partition's record iterator that turns a decoding error into a skipped batch and a clean end."""

    def __init__(self, records: Any, inner: Iterator[Any], skipped: collections.deque[SkippedBatch]) -> None:
        self._records = records
        self._inner: Iterator[Any] | None = inner
        self._skipped = skipped

    def __next__(self) -> Any:
        if self._inner is None:
            raise StopIteration
        try:
            return next(self._inner)
        except StopIteration:
            self._inner = None
            raise
        except Exception as exc:  # whatever the cause, the batch is skipped and reported
            self._inner = None
            self._skip(exc)
            raise StopIteration from None

    def _skip(self, exc: Exception) -> None:
        tp = private.records_partition(self._records)
        first = int(self._records.next_fetch_offset)
        batch = failing_batch(exc.__traceback__)
        if batch is not None and int(batch.next_offset) > first:  # else a stale earlier batch: one offset only
            first = max(first, int(batch.base_offset))
        last = max(first, int(batch.next_offset) - 1) if batch is not None else first
        self._records.next_fetch_offset = last + 1  # the fetch position moves past the batch
        reason = f"undecodable record batch: {type(exc).__name__}: {exc}"
        log.error("%s[%d] offsets %d..%d skipped: %s", tp.topic, tp.partition, first, last, reason)
        self._skipped.append(SkippedBatch(tp.topic, tp.partition, first, last, reason))


def failing_batch(tb: TracebackType | None) -> Any:
    """The batch aiokafka was unpacking when it failed (a local of its record generator), if known.

    It is known when decoding failed inside the batch (codec, CRC); when the batch header itself could not be
    read, the stale local would be an earlier batch, which the caller's ``max(first, ...)`` makes harmless:
    then one offset is skipped per fetch until the position is past the bad data."""
    batch = None
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == private.UNPACK_FUNCTION:
            batch = frame.f_locals.get(private.UNPACK_BATCH_LOCAL)
        tb = tb.tb_next
    return batch if batch is not None and hasattr(batch, "next_offset") else None


def unfetchable(exc: Exception) -> SkippedBatch | None:
    """A record larger than the consumer's fetch size on a broker that will not send it anyway (brokers before
    KIP-74): aiokafka has already moved the position one past it and raises ``RecordTooLargeError`` with the
    partition and offset as arguments. None for any other error."""
    if type(exc).__name__ != "RecordTooLargeError" or len(exc.args) < 3:
        return None
    tp, offset = exc.args[1], exc.args[2]
    if not (hasattr(tp, "topic") and isinstance(offset, int)):
        return None
    reason = f"record too large for the consumer's fetch size ({exc.args[3] if len(exc.args) > 3 else '?'} bytes)"
    return SkippedBatch(tp.topic, tp.partition, offset, offset, reason)
