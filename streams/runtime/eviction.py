"""When each key was last seen, cheaply: the bookkeeping behind idle eviction (see
:mod:`streams.services.eviction`).

:class:`LastSeen` keeps keys in the order they were last touched (an ordered dict: a touch moves its key to the
end in O(1)), so the keys idle for longer than a TTL are always at the front and :meth:`LastSeen.idle` finds
them in O(number of idle keys), never by scanning every key. The clock is injected (monotonic by default) so
tests drive time by hand.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from streams.wire.payloads import Draft

Clock = Callable[[], float]


class LastSeen:
    """Keys with the time they were last touched, oldest first."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self.clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()

    def touch(self, key: str) -> None:
        """``key`` was seen now."""
        self._seen[key] = self.clock()
        self._seen.move_to_end(key)

    def forget(self, key: str) -> None:
        self._seen.pop(key, None)

    def idle(self, ttl_s: float) -> list[str]:
        """Remove and return the keys not touched for more than ``ttl_s`` (oldest first)."""
        cutoff = self.clock() - ttl_s
        expired: list[str] = []
        while self._seen:
            key, seen = next(iter(self._seen.items()))
            if seen >= cutoff:
                break
            self._seen.popitem(last=False)
            expired.append(key)
        return expired

    def __contains__(self, key: object) -> bool:
        return key in self._seen

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self) -> Iterator[str]:
        return iter(self._seen)


def unknown_earlier_attempts(pending: Mapping[str, Any], draft: Draft) -> int:
    """How many attempts before ``draft``'s the gate holds no record of: their ``pending-attempts`` entry expired
    (``DRIFT_PENDING_TTL_S``) or never reached this gate. The decision chose among the known attempts only (the
    verdict's ``unknown_earlier_attempts``)."""
    known = {a["attempt"] for a in pending.get(draft.draft_id) or [] if a["attempt"] < draft.attempt}
    return max(draft.attempt - 1 - len(known), 0)
