"""aiokafka's group coordinator, made to go on consuming through a rebalance's join: the partitions a worker keeps
pause for its revocation at the join's end, not for the whole join (docs/operations.md, "Partitions that do not
move").

aiokafka knows only the eager protocol: before its JoinGroup, a member revokes every partition it holds (Faust
pauses them all and waits for the events in flight), and it resumes them once the new assignment is installed,
after the broker's join phase (2 s on the embedded broker at the default session). Here the revocation moves to
the moment the assignment arrives, so a member goes on judging its partitions during the join. The broker allows
that: it accepts commits of the current generation while a join forms (a commit sent during the join is answered
after it, behind the JoinGroup on the coordinator's connection; one refused as the old generation's leaves its
offsets acked, and the next commit takes them).

What keeps it safe is that a partition a member loses may already be another member's when the first learns it
lost it: the new owner must not read it before the old one has drained it (its verdict records on the broker, its
offsets committed). Every worker therefore *claims* the partitions it holds in PostgreSQL while it holds its peer
lock (:mod:`streams.worker.claims`), and:

* a member defers its revocation only while its current partitions are claimed (else it revokes first, as
  aiokafka does);
* at the join's end it claims what it held and what it gets, revokes everything it held (Faust's handlers, as
  before), then claims only what it gets: that releases the partitions it lost;
* before it takes a partition it did not hold, it waits until no live worker claims it.

A worker that dies holds no claim (its lock goes with its connection), so its partitions wait for nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from aiokafka.coordinator.protocol import ConsumerProtocol

log = logging.getLogger(__name__)

#: The private names reached below (part of :data:`streams.runtime.faust_private.PRIVATE_NAMES`).
NAMES: tuple[tuple[str, str, str], ...] = (
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_on_join_prepare", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_on_join_complete", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_start_heartbeat_task", "method"),
)


class Claims(Protocol):
    """The worker's partition claims (:class:`streams.worker.claims.PartitionClaims`). Called on the consumer's
    own thread and event loop."""

    def holds(self, partitions: frozenset[str]) -> bool:
        """``partitions`` are this worker's latest claim, written while it held its lock."""
        ...

    async def claim(self, partitions: frozenset[str]) -> bool:
        """Make ``partitions`` this worker's claim (True once written)."""
        ...

    async def released(self, partitions: frozenset[str]) -> None:
        """Return once no other live worker claims any of ``partitions`` (bounded: see the implementation)."""
        ...

    def rejoining(self) -> None:
        """The member is about to rejoin with its revocation deferred (the group's news, as a revocation would)."""
        ...

    async def unclaim(self) -> None:
        """The member has left its group: its claim goes."""
        ...


def tp_name(tp: Any) -> str:
    """A claimed partition: ``topic:partition``."""
    return f"{tp.topic}:{tp.partition}"


def run_through_joins(kafka_consumer: Any, claims: Claims, stopping: Callable[[], bool]) -> bool:
    """Install the deferred revocation on the consumer's coordinator (True; False: no group coordinator)."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None or not hasattr(coordinator, "_on_join_prepare"):
        return False
    joins = _ThroughJoins(coordinator, claims, stopping)
    coordinator._on_join_prepare = joins.on_join_prepare
    coordinator._on_join_complete = joins.on_join_complete
    return True


class _ThroughJoins:
    """The coordinator's prepare and completion of a join, with the revocation deferred (module docstring)."""

    def __init__(self, coordinator: Any, claims: Claims, stopping: Callable[[], bool]) -> None:
        self.coordinator = coordinator
        self.claims = claims
        self.stopping = stopping
        self.prepare, self.complete = coordinator._on_join_prepare, coordinator._on_join_complete
        self.deferred: Any = None  # the assignment whose revocation waits for the join's end

    async def on_join_prepare(self, previous: Any) -> None:
        held = frozenset(tp_name(tp) for tp in previous.tps) if previous is not None else frozenset()
        if not held or self.stopping() or not self.claims.holds(held):
            await self.prepare(previous)
            return
        self.deferred = previous
        self.coordinator._group_subscription = None  # as aiokafka's prepare does (it names the leader: group.py)
        self.claims.rejoining()
        log.debug("rejoining with %d partition(s) still judged until the join ends", len(held))

    async def on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        previous, self.deferred = self.deferred, None
        if not self.stopping():  # else Faust's handlers do nothing: the stop drains, its claims go once it left
            gets = frozenset(tp_name(tp) for tp in ConsumerProtocol.ASSIGNMENT.decode(assignment).partitions())
            held = frozenset(tp_name(tp) for tp in previous.tps) if previous is not None else frozenset()
            self.coordinator._start_heartbeat_task()  # the revocation and the wait below can outlast a session
            if previous is not None:
                await self._revoke(previous, held | gets)
            if not await self.claims.claim(gets):  # releases what this member lost
                log.info("partitions not claimed (the worker is not registered yet, or the database is away): "
                         "it revokes them before its next join")  # fmt: skip
            await self.claims.released(gets - held)
        await self.complete(generation, member_id, protocol, assignment)

    async def _revoke(self, previous: Any, held_and_gets: frozenset[str]) -> None:
        """aiokafka's eager revocation, at the join's end (Faust pauses, drains and flushes), under a claim of
        what the member held and gets: no one reads a partition this member drains."""
        await self.claims.claim(held_and_gets)
        leader = self.coordinator._group_subscription
        await self.prepare(previous)
        self.coordinator._group_subscription = leader
