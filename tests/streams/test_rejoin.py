"""A worker that goes on judging through a rebalance's join (streams.runtime.faust_private.rejoin): the order of
its claims, revocation and release wait, against a stand-in for aiokafka's coordinator."""

from __future__ import annotations

import asyncio
from typing import Any

from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.structs import TopicPartition

from streams.runtime import faust_private


class Coordinator:
    """aiokafka's coordinator, as far as the hook reaches it: its prepare clears the leader's subscription."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self._group_subscription: set[str] | None = {"drafts"}
        self.beating = False

    async def _on_join_prepare(self, previous: Any) -> None:
        self.log.append(("revoke", None if previous is None else frozenset(map(faust_private.tp_name, previous.tps))))
        self._group_subscription = None

    async def _on_join_complete(self, generation: int, member_id: str, protocol: str, assignment: bytes) -> None:
        self.log.append(("assigned", generation))

    def _start_heartbeat_task(self) -> None:
        self.beating = True


class Claims:
    def __init__(self, log: list[Any], held: frozenset[str] = frozenset()) -> None:
        self.log = log
        self.held = held
        self.writes = True

    def holds(self, partitions: frozenset[str]) -> bool:
        return self.held == partitions

    async def claim(self, partitions: frozenset[str]) -> bool:
        self.log.append(("claim", partitions))
        if self.writes:
            self.held = partitions
        return self.writes

    async def released(self, partitions: frozenset[str]) -> None:
        self.log.append(("wait", partitions))

    def rejoining(self) -> None:
        self.log.append(("news", None))

    async def unclaim(self) -> None:
        self.held = frozenset()


class Assignment:
    def __init__(self, *partitions: int) -> None:
        self.tps = {TopicPartition("drafts", p) for p in partitions}


def _bytes(*partitions: int) -> bytes:
    encoded: bytes = ConsumerProtocolMemberAssignment(0, [("drafts", list(partitions))], b"").encode()
    return encoded


def _names(*partitions: int) -> frozenset[str]:
    return frozenset(f"drafts:{p}" for p in partitions)


def _consumer(log: list[Any]) -> Any:
    consumer = type("Consumer", (), {})()
    consumer._coordinator = Coordinator(log)
    return consumer


def test_a_member_whose_partitions_are_claimed_judges_through_the_join_and_releases_what_it_lost() -> None:
    log: list[Any] = []
    consumer, claims = _consumer(log), Claims(log, _names(0, 1, 2))
    assert faust_private.run_through_joins(consumer, claims, lambda: False)
    coordinator = consumer._coordinator

    async def rebalance() -> None:
        await coordinator._on_join_prepare(Assignment(0, 1, 2))
        assert log == [("news", None)]  # nothing revoked before the join: it goes on judging
        assert coordinator._group_subscription is None
        coordinator._group_subscription = {"drafts"}  # elected leader at this join
        await coordinator._on_join_complete(7, "m", "faust", _bytes(0, 1))

    asyncio.run(rebalance())
    assert log[1:] == [
        ("claim", _names(0, 1, 2)),  # what it held and what it gets, before anything moves
        ("revoke", _names(0, 1, 2)),  # aiokafka's revocation, at the join's end
        ("claim", _names(0, 1)),  # partition 2 released once drained
        ("wait", frozenset()),  # it gets nothing new
        ("assigned", 7),
    ]
    assert coordinator.beating  # the revocation may outlast a session: the heartbeat runs during it
    assert coordinator._group_subscription == {"drafts"}  # still the leader of this generation


def test_a_new_owner_waits_for_the_release_of_what_it_did_not_hold() -> None:
    log: list[Any] = []
    consumer, claims = _consumer(log), Claims(log, _names(0))
    faust_private.run_through_joins(consumer, claims, lambda: False)
    coordinator = consumer._coordinator

    async def rebalance() -> None:
        await coordinator._on_join_prepare(Assignment(0))
        await coordinator._on_join_complete(8, "m", "faust", _bytes(0, 1, 2))

    asyncio.run(rebalance())
    assert log[-3:] == [("claim", _names(0, 1, 2)), ("wait", _names(1, 2)), ("assigned", 8)]
    assert log.index(("wait", _names(1, 2))) > log.index(("revoke", _names(0)))


def test_unclaimed_stopping_or_first_joins_revoke_before_the_join_as_aiokafka_does() -> None:
    for held, stopping, previous in (
        (frozenset(), False, Assignment(0, 1)),  # its partitions are not claimed (database away, not registered)
        (_names(0, 1), True, Assignment(0, 1)),  # the worker stops
        (frozenset(), False, None),  # a first join
    ):
        log: list[Any] = []
        consumer = _consumer(log)
        faust_private.run_through_joins(consumer, Claims(log, held), (lambda: True) if stopping else (lambda: False))

        async def rebalance(previous: Any = previous, coordinator: Any = consumer._coordinator) -> None:
            await coordinator._on_join_prepare(previous)
            await coordinator._on_join_complete(3, "m", "faust", _bytes(0, 1))

        asyncio.run(rebalance())
        expected_revoke = ("revoke", None if previous is None else _names(*(tp.partition for tp in previous.tps)))
        assert log[0] == expected_revoke  # before the join
        at_the_end = ["assigned"] if stopping else ["claim", "wait", "assigned"]
        assert [entry[0] for entry in log[1:]] == at_the_end  # and no revocation again at its end


def test_a_claim_that_cannot_be_written_makes_the_next_join_eager() -> None:
    log: list[Any] = []
    consumer, claims = _consumer(log), Claims(log, _names(0))
    faust_private.run_through_joins(consumer, claims, lambda: False)
    coordinator = consumer._coordinator
    claims.writes = False

    async def two_rebalances() -> None:
        await coordinator._on_join_prepare(Assignment(0))  # deferred: partition 0 is claimed
        await coordinator._on_join_complete(4, "m", "faust", _bytes(0, 1))  # the database went away meanwhile
        log.clear()
        await coordinator._on_join_prepare(Assignment(0, 1))

    asyncio.run(two_rebalances())
    assert log == [("revoke", _names(0, 1))]


def test_a_join_that_ends_while_the_worker_stops_releases_nothing() -> None:
    """Faust's handlers do nothing once the worker stops (its stop drains): the partitions it held stay claimed
    until it has left its group."""
    log: list[Any] = []
    consumer, claims = _consumer(log), Claims(log, _names(0, 1))
    stopping = [False]
    faust_private.run_through_joins(consumer, claims, lambda: stopping[0])
    coordinator = consumer._coordinator

    async def rebalance() -> None:
        await coordinator._on_join_prepare(Assignment(0, 1))  # deferred
        stopping[0] = True  # SIGTERM during the join
        await coordinator._on_join_complete(5, "m", "faust", _bytes(0))

    asyncio.run(rebalance())
    assert log == [("news", None), ("assigned", 5)]
    assert claims.held == _names(0, 1)


def test_no_group_coordinator_nothing_installed() -> None:
    assert not faust_private.run_through_joins(object(), Claims([]), lambda: False)
