"""Why a worker does not gate yet, and since when: the phase of its consumer group membership.

A worker is ready once it has joined the gate's consumer group, restored its tables for the partitions it was
given, resumed them, and opened its database. Each step can take long or stall (a slow restore on a broker that
never compacts, a group that does not form); :class:`Readiness` names the step it is in — ``starting``,
``joining the consumer group``, ``restoring tables: N changelog records left (…)``, ``preparing or finishing
the restore`` — with the seconds it has lasted, for ``/health``. The app
(:class:`streams.runtime.faust_app.DriftApp`) feeds it Faust's rebalance hooks; :meth:`Readiness.watch` logs
one warning line when a step outlasts the bound (``DRIFT_READY_BOUND_S``), and ``/health`` then reports the
worker not ready with that reason even after it was ready once (a rebalance that never ends is a worker that
does not gate). So does a worker through its rebalance whose consumer has fetched a partition for the bound
without getting the records the broker reports past its position (:func:`unread`: the embedded broker's
listing limit, docs/known-issues.md): it owns the partition and gates nothing there.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from streams.runtime import faust_private as private

log = logging.getLogger(__name__)

Clock = Callable[[], float]


class Readiness:
    """The group phase of one worker's app (Faust's ``rebalancing`` flag, its recovery, the hooks below)."""

    def __init__(self, bound_s: float, clock: Clock = time.monotonic, gated: str | None = None) -> None:
        self.bound_s = bound_s
        self.gated = gated  # the topic whose unread partitions make the worker not ready (drafts; None: any)
        self._clock = clock
        self.started_at = clock()
        self.rebalance_started_at: float | None = None  # the latest rebalance began (None: none yet)
        self.assigned_at: float | None = None  # its assignment arrived (None: not yet)
        self.rebalancing = False
        self.recovered_once = False  # the first restore ended and the partitions were resumed
        self._warned: str | None = None

    # -- the app's rebalance hooks (on_rebalance_start runs on the consumer thread: plain assignments only) --

    def rebalance_started(self) -> None:
        self.rebalance_started_at, self.assigned_at, self.rebalancing = self._clock(), None, True

    def assigned(self) -> None:
        self.assigned_at = self._clock()

    def rebalance_ended(self) -> None:
        self.rebalancing, self.recovered_once = False, True

    # -- what /health and the log say -----------------------------------------------------------------

    def phase(self, app: Any) -> tuple[str, float] | None:
        """(what the worker waits for, since when) while it is not through its latest rebalance; None after."""
        if self.recovered_once and not self.rebalancing:
            return None
        if self.rebalance_started_at is None:
            return "starting", self.started_at
        if self.assigned_at is None:
            return joining(app), self.rebalance_started_at
        recovery = app.tables.recovery
        if recovery.in_recovery:
            return restoring(recovery.active_remaining(), app.conf.id), self.assigned_at
        return "preparing or finishing the restore", self.assigned_at

    def waiting_for(self, app: Any, now: float | None = None) -> str | None:
        """The reason ``/health`` gives, with the seconds it has lasted; None when the worker gates. Before the
        first restore ended every phase is a reason; after it, only one that outlasted the bound (a short
        rebalance leaves the worker ready)."""
        current = self.phase(app)
        if current is None:
            return unread(app, self.bound_s, self.gated)
        what, since = current
        lasted = (self._clock() if now is None else now) - since
        if self.recovered_once and lasted < self.bound_s:
            return None
        return f"{what} (for {lasted:.0f} s)"

    async def watch(self, app: Any, interval_s: float = 1.0) -> None:
        """Log one warning line when a phase outlasts the bound (once per phase), until the app stops."""
        while True:
            await asyncio.sleep(interval_s)
            self.check(app)

    def check(self, app: Any) -> str | None:
        """The warning logged now, if any (a phase just past the bound, or partitions the broker answers without
        their records, not warned about yet)."""
        current = self.phase(app)
        if current is None:
            return self._warn_unread(app)
        what, since = current
        lasted = self._clock() - since
        key = what.split(":")[0]
        if lasted < self.bound_s or key == self._warned:
            return None
        self._warned = key
        line = f"worker not ready after {lasted:.0f} s (DRIFT_READY_BOUND_S={self.bound_s:g}): {what}"
        log.warning(line)
        return line

    def _warn_unread(self, app: Any) -> str | None:
        reason = unread(app, self.bound_s, self.gated)
        if reason is None:
            self._warned = None
            return None
        if self._warned == "unread":
            return None
        self._warned = "unread"
        line = f"worker not gating: {reason}"
        log.warning(line)
        return line


def unread(app: Any, bound_s: float, topic: str | None = None) -> str | None:
    """Partitions (of ``topic``) the worker's consumer has fetched for ``bound_s`` without getting the records the
    broker reports past its position (streams.runtime.fetchwait): it owns them and gates nothing there."""
    wait = getattr(private.consumer_thread(app.consumer), "fetch_wait", None)
    return None if wait is None else wait.stuck(bound_s, topic)


def joining(app: Any) -> str:
    """``joining the consumer group``, with the broker's refusal when it answered the join with an error aiokafka
    does not retry (the worker would wait for good without saying why)."""
    refusal = private.join_refusal(private.kafka_consumer(private.consumer_thread(app.consumer)))
    if refusal is None:
        return "joining the consumer group"
    name = type(refusal).__name__
    return f"joining the consumer group: the broker refused the join ({name}){REFUSAL_HINTS.get(name, '')}"


#: What to change when the broker refuses a worker's join for a reason the settings decide.
REFUSAL_HINTS = {
    "InvalidSessionTimeoutError": ": DRIFT_GROUP_SESSION_TIMEOUT_S is outside the broker's "
    "group.min.session.timeout.ms / group.max.session.timeout.ms (a stock Kafka accepts 6 to 1800)",
    "GroupAuthorizationFailedError": ": the broker's ACLs do not let this user read the group (DRIFT_TOPIC_PREFIX)",
}


def restoring(remaining: Any, app_id: str) -> str:
    """``restoring tables: N changelog records left (largest: TABLE[p] M)`` from Faust's remaining counts."""
    left = {tp: n for tp, n in dict(remaining).items() if n > 0}
    if not left:
        return "restoring tables: reading the last changelog records"
    tp, most = max(left.items(), key=lambda item: item[1])
    table = tp.topic.removeprefix(f"{app_id}-").removesuffix("-changelog")
    return f"restoring tables: {sum(left.values())} changelog records left (largest: {table}[{tp.partition}] {most})"
