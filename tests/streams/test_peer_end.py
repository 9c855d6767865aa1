"""Ending a departed member on the broker (:func:`streams.runtime.faust_private.end_member`): never while the group
forms when the broker needs that (the embedded broker's departed-leader bug), and a rejoin at once when the leave
started a rebalance. Rejoining on a peer's news (:func:`streams.runtime.faust_private.rejoin_if_rebalancing`): only
between rebalances, and only when the broker says the group rebalances. A fake coordinator answers as the broker
would."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from aiokafka.errors import KafkaConnectionError, RebalanceInProgressError, UnknownMemberIdError
from aiokafka.protocol.group import HeartbeatRequest, LeaveGroupRequest

from streams.runtime import faust_private
from streams.services.stats import GateStats
from streams.worker.metrics import render_prometheus


@dataclass
class Answer:
    error_code: int


@dataclass
class Coordinator:
    """Answers heartbeats from ``beats`` in turn and LeaveGroup with ``leave``; records what was sent."""

    beats: list[int]
    leave: int | Exception = 0
    group_id: str = "group"
    generation: int = 4
    member_id: str = "me"
    sent: list[str] = field(default_factory=list)
    rejoins: int = 0
    _heartbeat_task: Any = None  # aiokafka's: running between rebalances, None while the member joins
    on_heartbeat: Any = None  # called as the heartbeat is answered (a join that starts meanwhile)

    async def _send_req(self, request: Any) -> Answer:
        if isinstance(request, LeaveGroupRequest):
            self.sent.append("leave")
            if isinstance(self.leave, Exception):
                raise self.leave
            return Answer(self.leave)
        assert isinstance(request, HeartbeatRequest)
        self.sent.append("heartbeat")
        if self.on_heartbeat is not None:
            self.on_heartbeat(self)
        return Answer(self.beats.pop(0))

    def request_rejoin(self) -> None:
        self.rejoins += 1


@dataclass
class Consumer:
    _coordinator: Coordinator


async def test_a_forming_group_is_not_sent_a_leave_when_the_broker_needs_it_formed() -> None:
    coordinator = Coordinator(beats=[RebalanceInProgressError.errno])
    assert not await faust_private.end_member(Consumer(coordinator), "dead", formed_first=True)
    assert coordinator.sent == ["heartbeat"]  # no LeaveGroup: the next sweep tries again


async def test_a_leave_that_starts_a_rebalance_rejoins_at_once() -> None:
    coordinator = Coordinator(beats=[0, RebalanceInProgressError.errno])
    await _beating(coordinator)
    assert await faust_private.end_member(Consumer(coordinator), "dead", formed_first=True)
    assert coordinator.sent == ["heartbeat", "leave", "heartbeat"] and coordinator.rejoins == 1


async def test_a_leave_sent_while_the_member_joins_asks_for_no_second_rebalance() -> None:
    joining = Coordinator(beats=[])  # no heartbeat task: its own join is under way, the leave joins that rebalance
    assert await faust_private.end_member(Consumer(joining), "dead", formed_first=False)
    assert joining.sent == ["leave"] and joining.rejoins == 0


async def test_a_member_already_gone_is_done_without_a_rejoin() -> None:
    gone = Coordinator(beats=[0], leave=UnknownMemberIdError.errno)  # Kafka: the member is unknown
    await _beating(gone)
    assert await faust_private.end_member(Consumer(gone), "dead", formed_first=False)
    quiet = Coordinator(beats=[0])  # the embedded broker answers 0 either way; the group did not rebalance
    await _beating(quiet)
    assert await faust_private.end_member(Consumer(quiet), "dead", formed_first=False)
    assert (gone.sent, gone.rejoins, quiet.rejoins) == (["leave", "heartbeat"], 0, 0)


async def test_a_broker_that_does_not_answer_is_tried_again_later() -> None:
    coordinator = Coordinator(beats=[], leave=KafkaConnectionError())
    assert not await faust_private.end_member(Consumer(coordinator), "dead", formed_first=False)
    refused = Coordinator(beats=[], leave=RebalanceInProgressError.errno)
    assert not await faust_private.end_member(Consumer(refused), "dead", formed_first=False)
    assert await faust_private.end_member(Consumer(None), "dead", formed_first=False) is False  # type: ignore[arg-type]


def test_the_members_a_worker_ended_are_a_counter_on_its_metrics() -> None:
    stats = GateStats()
    stats.probes["group_members_ended"] = lambda: 2  # registered with the watch (streams.worker.app)
    assert "drift_group_members_ended_total 2.0" in render_prometheus(stats)
    assert "drift_group_members_ended_total 0.0" in render_prometheus(GateStats())  # no watch (static membership)


async def _beating(coordinator: Coordinator) -> asyncio.Future[None]:
    coordinator._heartbeat_task = asyncio.get_running_loop().create_future()  # not done: the task runs
    return coordinator._heartbeat_task  # type: ignore[no-any-return]


async def test_a_peers_news_rejoins_when_the_broker_says_the_group_rebalances() -> None:
    stable = Coordinator(beats=[0])
    await _beating(stable)
    assert await faust_private.rejoin_if_rebalancing(Consumer(stable)) is False  # the news is ahead of the broker
    rebalancing = Coordinator(beats=[RebalanceInProgressError.errno])
    await _beating(rebalancing)
    assert await faust_private.rejoin_if_rebalancing(Consumer(rebalancing)) is True
    assert (stable.rejoins, rebalancing.rejoins) == (0, 1)


async def test_a_member_that_is_joining_already_is_not_asked_to_rejoin() -> None:
    joining = Coordinator(beats=[])  # no heartbeat task: between its JoinGroup and its SyncGroup
    assert await faust_private.rejoin_if_rebalancing(Consumer(joining)) is None
    assert joining.sent == [] and joining.rejoins == 0
    done = Coordinator(beats=[])
    (await _beating(done)).set_result(None)  # a finished heartbeat task: the member is rejoining
    assert await faust_private.rejoin_if_rebalancing(Consumer(done)) is None and done.sent == []


async def test_a_rejoin_started_while_the_heartbeat_was_out_is_not_asked_twice() -> None:
    def new_generation(coordinator: Coordinator) -> None:
        coordinator.generation += 1  # its own heartbeat saw the rebalance and it joined meanwhile

    moved = Coordinator(beats=[RebalanceInProgressError.errno], on_heartbeat=new_generation)
    await _beating(moved)
    assert await faust_private.rejoin_if_rebalancing(Consumer(moved)) is None and moved.rejoins == 0
    other = Coordinator(beats=[UnknownMemberIdError.errno])  # its own heartbeat handles that answer
    await _beating(other)
    assert await faust_private.rejoin_if_rebalancing(Consumer(other)) is None and other.rejoins == 0
    assert await faust_private.rejoin_if_rebalancing(Consumer(None)) is None  # type: ignore[arg-type]


def test_rejoins_on_news_are_a_counter_on_the_metrics() -> None:
    stats = GateStats()
    stats.probes["group_rejoins_on_news"] = lambda: 3
    assert "drift_group_rejoins_on_news_total 3.0" in render_prometheus(stats)
    stats.probes["claim_wait_seconds"] = lambda: 0.25  # the claims' (streams.worker.claims)
    assert "drift_claim_wait_seconds_total 0.25" in render_prometheus(stats)


async def test_a_peers_join_rejoins_a_member_between_rebalances_only() -> None:
    stable = Coordinator(beats=[])
    await _beating(stable)
    assert await faust_private.rejoin_now(Consumer(stable)) is True and stable.rejoins == 1
    joining = Coordinator(beats=[])
    assert await faust_private.rejoin_now(Consumer(joining)) is False and joining.rejoins == 0
    assert stable.sent == [] and joining.sent == []  # no request: the peer's JoinGroup has not been sent yet


async def test_a_stopping_worker_does_not_rejoin_when_its_heartbeat_finds_a_rebalance() -> None:
    coordinator = Coordinator(beats=[RebalanceInProgressError.errno])
    await _beating(coordinator)
    assert faust_private.stop_rejoining(Consumer(coordinator))
    coordinator.request_rejoin()  # what aiokafka's heartbeat does when the group rebalances
    assert await faust_private.rejoin_if_rebalancing(Consumer(coordinator)) is True  # asked, and not done
    assert coordinator.rejoins == 0
    assert not faust_private.stop_rejoining(Consumer(None))  # type: ignore[arg-type]
