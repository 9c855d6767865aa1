"""The plain aiokafka group consumers a worker runs beside its gate: the sinks', the drift monitor's and the shadow
lane's (:mod:`streams.services.sinks`, :mod:`streams.services.monitor`).

Their tasks end only after the gate's consumer has left its group, about a second into a graceful stop. Until
then, a heartbeat that finds one of their groups rebalancing (the same consumer of a worker stopped at the same
moment left it) made aiokafka rejoin, and on the embedded broker the stop then waited out the 3 s join phase
(docs/known-issues.md, "A stopping worker rejoined its group"). Each such consumer is registered here once it
has started; the worker's stop, as its first step, tells every one of them not to rejoin any more, as it tells
the gate's own consumer (:func:`streams.runtime.faust_private.stop_rejoining`).
"""

from __future__ import annotations

import weakref
from typing import Any

from streams.runtime import faust_private


class BesideGroups:
    """The started group consumers beside the verdict path (held weakly: a stopped consumer just goes)."""

    def __init__(self) -> None:
        self._consumers: weakref.WeakSet[Any] = weakref.WeakSet()
        self.stopping = False

    def add(self, consumer: Any) -> None:
        """A consumer that has started; one added once the worker stops does not rejoin either."""
        self._consumers.add(consumer)
        if self.stopping:
            faust_private.stop_rejoining(consumer)

    def stop_rejoining(self) -> int:
        """The worker stops: none of its consumers rejoins its group from now on. The number told."""
        self.stopping = True
        return sum(faust_private.stop_rejoining(consumer) for consumer in list(self._consumers))
