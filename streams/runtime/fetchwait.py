"""A fetch wait that grows when the broker cannot find a partition's records within it.

The embedded broker (Tansu, memory storage) answers a fetch by listing every record batch the partition has
ever stored, oldest first, and it stops listing when the fetch's max wait runs out: a partition with more
batches than it can list in that time answers with no records from the point the listing stopped on, however
many records lie past the fetch offset. The worker fetches with a 10 ms wait for latency
(``DRIFT_FETCH_MAX_WAIT_MS``), and at 100 drafts/s a partition passes about 13,000 single-record batches in
six minutes on an idle machine (sooner under load): from then on no consumer with that wait read the partition
again, and the gate answered nothing (docs/known-issues.md, "A partition the embedded broker cannot list in
time").

:class:`FetchWait` watches the fetch responses: a partition that comes back without records although the
broker reports records past the fetch offset, :data:`STREAK` responses in a row, doubles the consumer's wait
(up to :data:`MAX_WAIT_MS`). The broker answers as soon as it has records, so a longer wait costs nothing
while records flow; what it costs is the wait before a record is noticed on an idle partition (up to half the
wait on this broker). Kafka answers such a fetch with records, so there the wait never moves.

:func:`kafka_consumer` builds the plain consumers of the worker and the clients with it;
:mod:`streams.runtime.transport` installs it on the worker's Faust consumer.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from aiokafka import AIOKafkaConsumer

from engine.settings import Settings
from streams.runtime import faust_private as private
from streams.wire.kafka import consumer_kwargs

log = logging.getLogger(__name__)

#: responses in a row that leave a partition's records unread before the wait doubles
STREAK = 3
#: the longest wait it grows to (a partition the broker cannot list in a second is one to move to Kafka)
MAX_WAIT_MS = 2_000


class FetchWait:
    """The fetch wait of one consumer, raised when the broker keeps answering without the records it has."""

    def __init__(self, wait_ms: int, *, streak: int = STREAK, max_wait_ms: int = MAX_WAIT_MS) -> None:
        self.wait_ms = wait_ms
        self.streak = streak
        self.max_wait_ms = max_wait_ms
        self._streaks: dict[Any, int] = {}

    def observe(self, asked: Collection[Any], unread: Collection[Any]) -> int | None:
        """One fetch response: the partitions it ``asked`` for, and those of them that came back ``unread``
        (no records, though the broker reports records past the fetch offset). The new wait, or None."""
        for tp in asked:
            if tp in unread:
                self._streaks[tp] = self._streaks.get(tp, 0) + 1
            else:
                self._streaks.pop(tp, None)
        stuck = [tp for tp, n in self._streaks.items() if n >= self.streak]
        if not stuck or self.wait_ms >= self.max_wait_ms:
            return None
        before, self.wait_ms = self.wait_ms, min(self.max_wait_ms, max(1, self.wait_ms) * 2)
        self._streaks.clear()
        log.warning(
            "the broker answered %d fetches of %s in a row without the records it has past the fetch offset "
            "(a partition it cannot list within the fetch wait: docs/known-issues.md); fetch wait %d ms -> %d ms",
            self.streak, ", ".join(f"{tp.topic}[{tp.partition}]" for tp in stuck), before, self.wait_ms,
        )  # fmt: skip
        return self.wait_ms


def watch(kafka_consumer: Any) -> None:
    """Install a :class:`FetchWait` on a started aiokafka consumer (once; a no-op before it starts)."""
    fetcher = private.kafka_fetcher(kafka_consumer)
    if fetcher is not None:
        private.on_fetch_responses(fetcher, FetchWait(private.fetch_max_wait(fetcher)).observe)


class KafkaConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer with a :class:`FetchWait`."""

    async def start(self) -> None:
        await super().start()
        watch(self)


def kafka_consumer(settings: Settings, *topics: str, **kwargs: Any) -> KafkaConsumer:
    """A consumer tuned for the broker round trip (``consumer_kwargs``), ``kwargs`` on top, with a fetch wait
    that grows when the broker needs it to."""
    return KafkaConsumer(*topics, **{**consumer_kwargs(settings), **kwargs})
