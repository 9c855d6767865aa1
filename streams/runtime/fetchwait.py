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
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

from aiokafka import AIOKafkaConsumer

from engine.settings import Settings
from streams.runtime import faust_private as private
from streams.wire.kafka import consumer_kwargs

log = logging.getLogger(__name__)
Clock = Callable[[], float]

#: responses in a row that leave a partition's records unread before the wait doubles
STREAK = 3
#: the longest wait it grows to (a partition the broker cannot list in a second is one to move to Kafka)
MAX_WAIT_MS = 2_000


class FetchWait:
    """The fetch wait of one consumer, raised when the broker keeps answering without the records it has."""

    def __init__(
        self, wait_ms: int, *, streak: int = STREAK, max_wait_ms: int = MAX_WAIT_MS, clock: Clock = time.monotonic
    ) -> None:
        self.wait_ms = wait_ms
        self.streak = streak
        self.max_wait_ms = max_wait_ms
        self._clock = clock
        self._streaks: dict[Any, int] = {}
        #: partition -> since when every response left its records unread (replaced whole: read from other threads)
        self.unread_since: Mapping[Any, float] = {}

    def observe(self, asked: Collection[Any], unread: Collection[Any]) -> int | None:
        """One fetch response: the partitions it ``asked`` for, and those of them that came back ``unread``
        (no records, though the broker reports records past the fetch offset). The new wait, or None."""
        since = dict(self.unread_since)
        for tp in asked:
            if tp in unread:
                self._streaks[tp] = self._streaks.get(tp, 0) + 1
                since.setdefault(tp, self._clock())
            else:
                self._streaks.pop(tp, None)
                since.pop(tp, None)
        self.unread_since = since
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

    def stuck(self, bound_s: float, topic: str | None = None) -> str | None:
        """Why a consumer reads nothing although records wait: partitions (of ``topic``, if given) whose every
        fetch response has come back without their records for ``bound_s`` or longer; None if none has."""
        now, unread = self._clock(), self.unread_since  # one snapshot: the consumer thread replaces it
        late = sorted((tp for tp, since in unread.items() if now - since >= bound_s and
                       (topic is None or tp.topic == topic)), key=lambda tp: (tp.topic, tp.partition))  # fmt: skip
        if not late:
            return None
        names = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in late)
        lasted = max(now - unread[tp] for tp in late)
        return (
            f"the broker answers every fetch of {names} without its records (for {lasted:.0f} s, fetch wait "
            f"{self.wait_ms} ms; docs/known-issues.md: a partition the embedded broker cannot list)"
        )


def watch(kafka_consumer: Any) -> FetchWait | None:
    """Install a :class:`FetchWait` on a started aiokafka consumer (once; a no-op before it starts, or if one is
    installed). The one installed now, or None."""
    fetcher = private.kafka_fetcher(kafka_consumer)
    if fetcher is None:
        return None
    wait = FetchWait(private.fetch_max_wait(fetcher))
    return wait if private.on_fetch_responses(fetcher, wait.observe) else None


class KafkaConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer with a :class:`FetchWait`."""

    async def start(self) -> None:
        await super().start()
        watch(self)


def kafka_consumer(settings: Settings, *topics: str, **kwargs: Any) -> KafkaConsumer:
    """A consumer tuned for the broker round trip (``consumer_kwargs``), ``kwargs`` on top, with a fetch wait
    that grows when the broker needs it to."""
    return KafkaConsumer(*topics, **{**consumer_kwargs(settings), **kwargs})
