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

While records flow (a response carried some within :data:`BRISK_FOR_S`), or while a client awaits a reply, a
consumer on the verdict path fetches with its *brisk* wait instead (``DRIFT_FETCH_BRISK_WAIT_MS``, 3 ms, when
shorter): each hop on the embedded broker costs about half the wait in effect, and an idle consumer keeps the
longer one, so it does not poll the broker more often at rest. A streak of unread responses doubles the wait in
effect; the brisk wait never exceeds the other.

:func:`kafka_consumer` builds the plain consumers of the worker and the clients with it;
:mod:`streams.runtime.transport` installs it on the worker's Faust consumer.
"""

from __future__ import annotations

import logging
import math
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
#: a consumer keeps its brisk wait this long after a fetch response that carried records
BRISK_FOR_S = 1.0


class FetchWait:
    """The fetch wait of one consumer, raised when the broker keeps answering without the records it has."""

    def __init__(
        self,
        wait_ms: int,
        *,
        brisk_ms: int | None = None,
        streak: int = STREAK,
        max_wait_ms: int = MAX_WAIT_MS,
        clock: Clock = time.monotonic,
    ) -> None:
        self.wait_ms = wait_ms
        #: the wait while records flow or a reply is awaited (never above ``wait_ms``)
        self.brisk_ms = wait_ms if brisk_ms is None else min(brisk_ms, wait_ms)
        self.streak = streak
        self.max_wait_ms = max_wait_ms
        #: a client's "replies are awaited" (brisk while true), read at each response
        self.awaiting: Callable[[], bool] = lambda: False
        self._clock = clock
        self._streaks: dict[Any, int] = {}
        self._fed_at = -math.inf
        self._in_effect = wait_ms
        #: partition -> since when every response left its records unread (replaced whole: read from other threads)
        self.unread_since: Mapping[Any, float] = {}

    def observe(self, asked: Collection[Any], unread: Collection[Any], fed: bool = False) -> int | None:
        """One fetch response: the partitions it ``asked`` for, those of them that came back ``unread`` (no
        records, though the broker reports records past the fetch offset), and whether it carried records
        (``fed``). The wait for the next request when it changes, or None."""
        now = self._clock()
        if fed:
            self._fed_at = now
        brisk = now - self._fed_at < BRISK_FOR_S or self.awaiting()
        if stuck := self._stuck(asked, unread):
            self._grow(brisk, stuck)
        wait = self.brisk_ms if brisk else self.wait_ms
        if wait == self._in_effect:
            return None
        self._in_effect = wait
        return wait

    def _stuck(self, asked: Collection[Any], unread: Collection[Any]) -> list[Any]:
        """The partitions whose responses left their records unread :attr:`streak` times in a row."""
        since = dict(self.unread_since)
        for tp in asked:
            if tp in unread:
                self._streaks[tp] = self._streaks.get(tp, 0) + 1
                since.setdefault(tp, self._clock())
            else:
                self._streaks.pop(tp, None)
                since.pop(tp, None)
        self.unread_since = since
        return [tp for tp, n in self._streaks.items() if n >= self.streak]

    def _grow(self, brisk: bool, stuck: list[Any]) -> None:
        """Double the wait in effect (the brisk one up to the other; both once they are equal)."""
        if brisk and self.brisk_ms < self.wait_ms:
            before = self.brisk_ms
            self.brisk_ms = _doubled(self.brisk_ms, self.wait_ms)
            after, which = self.brisk_ms, "brisk fetch wait (records flowing)"
        elif self.wait_ms < self.max_wait_ms:
            before = self.wait_ms
            self.wait_ms = _doubled(self.wait_ms, self.max_wait_ms)
            self.brisk_ms = _doubled(self.brisk_ms, self.wait_ms)
            after, which = self.wait_ms, "fetch wait"
        else:
            return
        self._streaks.clear()
        log.warning(
            "the broker answered %d fetches of %s in a row without the records it has past the fetch offset "
            "(a partition it cannot list within the fetch wait: docs/known-issues.md); %s %d ms -> %d ms",
            self.streak, ", ".join(f"{tp.topic}[{tp.partition}]" for tp in stuck), which, before, after,
        )  # fmt: skip

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


def _doubled(wait_ms: int, bound_ms: int) -> int:
    """Twice ``wait_ms`` (a 0 ms wait becomes 2 ms), at most ``bound_ms``."""
    return min(bound_ms, max(1, wait_ms) * 2)


def watch(kafka_consumer: Any, brisk_ms: int | None = None) -> FetchWait | None:
    """Install a :class:`FetchWait` on a started aiokafka consumer (once; a no-op before it starts, or if one is
    installed), with a brisk wait of ``brisk_ms`` (None: none). The one installed now, or None."""
    fetcher = private.kafka_fetcher(kafka_consumer)
    if fetcher is None:
        return None
    wait = FetchWait(private.fetch_max_wait(fetcher), brisk_ms=brisk_ms)
    return wait if private.on_fetch_responses(fetcher, wait.observe) else None


class KafkaConsumer(AIOKafkaConsumer):  # type: ignore[misc]
    """aiokafka's consumer with a :class:`FetchWait` (``fetch_wait`` once started), brisk at ``brisk_wait_ms``."""

    def __init__(self, *topics: str, brisk_wait_ms: int | None = None, **kwargs: Any) -> None:
        super().__init__(*topics, **kwargs)
        self.brisk_wait_ms = brisk_wait_ms
        self.fetch_wait: FetchWait | None = None

    async def start(self) -> None:
        await super().start()
        self.fetch_wait = watch(self, self.brisk_wait_ms) or self.fetch_wait  # a start retried keeps the first


def kafka_consumer(settings: Settings, *topics: str, brisk: bool = False, **kwargs: Any) -> KafkaConsumer:
    """A consumer tuned for the broker round trip (``consumer_kwargs``), ``kwargs`` on top, with a fetch wait
    that grows when the broker needs it to; ``brisk``: a consumer of the verdict path, at
    ``DRIFT_FETCH_BRISK_WAIT_MS`` while records flow."""
    brisk_ms = settings.fetch_brisk_wait_ms if brisk else None
    return KafkaConsumer(*topics, brisk_wait_ms=brisk_ms, **{**consumer_kwargs(settings), **kwargs})
