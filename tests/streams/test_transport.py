"""The fast lane of the worker's Faust consumer (streams.runtime.transport.drain_once), against a stand-in consumer."""

from __future__ import annotations

import asyncio
import functools
import logging
import types
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest

from streams.runtime import transport
from streams.runtime.transport import drain_once


class TP(NamedTuple):
    topic: str
    partition: int


@dataclass(eq=False)
class FakeMessage:
    topic: str
    partition: int
    offset: int

    @property
    def tp(self) -> TP:
        return TP(self.topic, self.partition)


@dataclass
class FakeApp:
    consumer_generation_id: int = 1
    topics: Any = None

    def __post_init__(self) -> None:
        class Conductor:
            @staticmethod
            def acks_enabled_for(topic: str) -> bool:
                return True

        self.topics = Conductor()


@dataclass
class FakeConsumer:
    """What drain_once uses of Faust's consumer: one fetch, offsets, tracking, the usual callback."""

    fetched: list[FakeMessage]
    app: FakeApp = field(default_factory=FakeApp)
    flow_active: bool = True
    suspend_flow: asyncio.Event = field(default_factory=asyncio.Event)
    _read_offset: dict[TP, int | None] = field(default_factory=dict)
    _committed_offset: dict[TP, int | None] = field(default_factory=dict)
    _unacked_messages: set[FakeMessage] = field(default_factory=set)
    gaps: list[tuple[TP, int, int]] = field(default_factory=list)
    routed: list[FakeMessage] = field(default_factory=list)
    seeks: list[tuple[TP, int]] = field(default_factory=list)
    assigned: set[TP] | None = None  # None: every partition fetched
    paused: set[TP] = field(default_factory=set)  # by a rebalance's recovery
    timeouts: list[float] = field(default_factory=list)  # of each fetch
    waits_out_rebalance: bool = False  # the fetch first waits for the flow, across a rebalance (as Faust's)

    def __post_init__(self) -> None:
        self._read_offset = _DefaultNone(self._read_offset)
        self._committed_offset = _DefaultNone(self._committed_offset)

    async def getmany(self, timeout: float) -> AsyncIterator[tuple[TP, FakeMessage]]:
        self.timeouts.append(timeout)
        if self.waits_out_rebalance:  # revoked, assigned again (a new generation), sought, flow resumed
            self.app.consumer_generation_id += 1
            self.waits_out_rebalance = False
        for message in self.fetched:
            yield message.tp, message

    def assignment(self) -> set[TP]:
        return self.assigned if self.assigned is not None else {m.tp for m in self.fetched}

    def _get_active_partitions(self) -> set[TP]:
        return self.assignment() - self.paused

    def track_message(self, message: FakeMessage) -> None:
        self._unacked_messages.add(message)

    async def _add_gap(self, tp: TP, start: int, end: int) -> None:
        self.gaps.append((tp, start, end))

    async def seek(self, tp: TP, offset: int) -> None:  # as Faust's: the read offset follows the seek
        self.seeks.append((tp, offset))
        self._read_offset[tp] = offset

    async def callback(self, message: FakeMessage) -> None:
        self.routed.append(message)

    async def wait_first(self, *awaitables: Any) -> None:
        await awaitables[0]
        for other in awaitables[1:]:
            if asyncio.iscoroutine(other):
                other.close()


class _DefaultNone(dict[TP, int | None]):
    def __missing__(self, key: TP) -> None:
        return None


def messages(topic: str, offsets: range, partition: int = 0) -> list[FakeMessage]:
    return [FakeMessage(topic, partition, n) for n in offsets]


class Lane:
    def __init__(
        self, consumer: FakeConsumer | None = None, *, rebalance_after: int | None = None, under_way: bool = False
    ) -> None:
        self.batches: list[list[int]] = []
        self.consumer, self.rebalance_after, self.under_way = consumer, rebalance_after, under_way

    async def __call__(self, batch: list[Any]) -> None:
        self.batches.append([m.offset for m in batch])
        if self.consumer is not None and len(self.batches) == self.rebalance_after:
            self.consumer.app.consumer_generation_id += 1  # a rebalance while the lane works
            self.consumer.flow_active = not self.under_way  # still under way, or over (flow resumed)


async def test_lane_records_are_tracked_and_handed_over_in_batches_others_take_faust_route(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(transport, "LANE_BATCH", 4)
    consumer = FakeConsumer(messages("drafts", range(10)) + messages("steps", range(2)))
    lane = Lane()
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [m.offset for m in consumer.routed] == [0, 1] and all(m.topic == "steps" for m in consumer.routed)
    assert {m.offset for m in consumer._unacked_messages} == set(range(10))  # the lane acks them, not Faust
    assert consumer._read_offset[TP("drafts", 0)] == 9


async def test_records_passed_over_are_read_again_and_only_offsets_that_never_come_are_a_gap(
    caplog: pytest.LogCaptureFixture,
) -> None:
    tp = TP("drafts", 0)
    consumer = FakeConsumer(messages("drafts", range(3, 6)) + messages("drafts", range(9, 12)))
    consumer._read_offset[tp] = 4
    lane = Lane()
    await drain_once(consumer, {"drafts": lane})  # 6-8 were fetched and dropped before they got here
    assert lane.batches == [[4, 5]] and consumer.seeks == [(tp, 6)] and consumer.gaps == []
    assert "drafts[0]: offsets 6..8 were fetched and not handed over; reading them again" in caplog.text

    consumer.fetched = messages("drafts", range(6, 12))  # read again: nothing lost, no gap
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches[1] == [6, 7, 8, 9, 10, 11] and consumer.gaps == [] and consumer.seeks == [(tp, 6)]

    consumer.fetched = messages("drafts", range(12, 13)) + messages("drafts", range(15, 16))
    await drain_once(consumer, {"drafts": lane})
    consumer.fetched = messages("drafts", range(15, 17))  # after the seek back 13-14 are missing again
    await drain_once(consumer, {"drafts": lane})
    assert consumer.gaps == [(tp, 13, 14)]  # they never come: commits may pass them, not 15
    assert lane.batches[2:] == [[12], [15, 16]] and consumer.seeks[-1] == (tp, 13)
    assert "drafts[0]: offsets 13..14 never came before 15; commits may pass them" in caplog.text


async def test_a_seek_back_pending_across_a_rebalance_is_forgotten() -> None:
    tp = TP("drafts", 0)
    consumer = FakeConsumer(messages("drafts", range(5, 6)) + messages("drafts", range(9, 10)))
    consumer._read_offset[tp] = 4
    lane = Lane()
    await drain_once(consumer, {"drafts": lane})
    consumer.app.consumer_generation_id += 1  # a rebalance; the new owner's seek sets the read offset
    consumer._read_offset[tp] = 20
    consumer.fetched = messages("drafts", range(20, 23))
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches == [[5], [20, 21, 22]] and consumer.gaps == []


async def test_a_batch_fetched_before_a_rebalance_is_released_not_handled(monkeypatch: Any) -> None:
    monkeypatch.setattr(transport, "LANE_BATCH", 2)
    consumer = FakeConsumer(messages("drafts", range(6)))
    lane = Lane(consumer, rebalance_after=1, under_way=True)  # its recovery will seek to the committed offsets
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches == [[0, 1]] and consumer.seeks == []
    assert {m.offset for m in consumer._unacked_messages} == {0, 1}  # the rest will be fetched again


async def test_a_fetch_that_waited_out_a_rebalance_is_handed_over() -> None:
    """Faust's getmany waits for the flow before it fetches: a drain that began before a rebalance fetched the
    new generation's first records. Judged by the generation read before that wait, they were released after
    the recovery's seek, never read again, and later commits passed them (run M's 117 unanswered drafts)."""
    consumer = FakeConsumer(messages("drafts", range(579, 696)), waits_out_rebalance=True)
    consumer._read_offset[TP("drafts", 0)] = 578
    lane = Lane()
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches == [list(range(579, 696))] and consumer.seeks == []


async def test_records_released_after_the_rebalance_ended_are_read_again_from_the_committed_offset(
    monkeypatch: Any, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(transport, "LANE_BATCH", 2)
    drafts = TP("drafts", 0)
    consumer = FakeConsumer(messages("drafts", range(10, 14)) + messages("drafts", range(3, 5), partition=1))
    consumer.assigned = {drafts}  # the rebalance (during the first batch) took partition 1 away
    consumer._committed_offset[drafts] = 10
    lane = Lane(consumer, rebalance_after=1)
    await drain_once(consumer, {"drafts": lane})
    assert lane.batches == [[10, 11]]
    assert consumer.seeks == [(drafts, 10)] and consumer._read_offset[drafts] == 10  # 12, 13 come again
    assert "drafts[0]: records from offset 12 were released after a rebalance; reading them again from 10" in (
        caplog.text
    )


async def test_a_partition_revoked_before_the_seek_back_is_left_to_its_next_owner(monkeypatch: Any) -> None:
    from aiokafka.errors import IllegalStateError

    monkeypatch.setattr(transport, "LANE_BATCH", 2)
    consumer = FakeConsumer(messages("drafts", range(10, 14)))

    async def revoked(tp: TP, offset: int) -> None:
        raise IllegalStateError(f"{tp} is not assigned")

    monkeypatch.setattr(consumer, "seek", revoked)
    lane = Lane(consumer, rebalance_after=1)
    await drain_once(consumer, {"drafts": lane})  # no error reaches the fetch loop
    assert lane.batches == [[10, 11]] and {m.offset for m in consumer._unacked_messages} == {10, 11}


async def test_a_line_says_where_each_fast_lane_partition_resumes_after_a_rebalance(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Seeking:
        app = type("App", (), {"fast_lanes": {"drafts": Lane()}})()

        def __init__(self) -> None:
            self._read_offset = {TP("drafts", 1): None, TP("drafts", 0): 579, TP("steps", 0): 7}
            self.sought = False

        async def perform_seek(self) -> None:
            self.sought = True

        def assignment(self) -> set[TP]:
            return set(self._read_offset)

    class Consumer(transport.FastLanes, Seeking):
        pass

    consumer = Consumer()
    with caplog.at_level(logging.INFO, logger=transport.__name__):
        await consumer.perform_seek()
    assert consumer.sought
    assert "fast lanes resume at the committed offsets: drafts[0] 579, drafts[1] None" in caplog.text


async def test_the_faust_consumer_has_what_the_fast_lane_relies_on(tmp_path: Any) -> None:
    """A contract check for upgrades: drain_once uses these internals of faust-streaming's consumer (the
    dependency is pinned below the next minor version for this reason)."""
    from engine.settings import Settings
    from streams.runtime.faust_app import faust_app
    from tests.streams.fakes import NothingToClose, no_skipped_batches

    app = faust_app(
        Settings(data_dir=tmp_path, broker="127.0.0.1:1"), 3, closing=NothingToClose(), skipped=no_skipped_batches
    )
    consumer = app.consumer
    for name in ("getmany", "track_message", "_add_gap", "callback", "wait_first", "_drain_messages", "ack",
                 "_get_active_partitions"):  # fmt: skip
        assert callable(getattr(consumer, name)), name
    for name in ("_read_offset", "_unacked_messages", "suspend_flow", "flow_active", "consumer_stopped_errors"):
        assert hasattr(consumer, name), name
    assert isinstance(app.consumer_generation_id, int) and callable(app.topics.acks_enabled_for)


async def test_a_fetch_waits_a_tenth_of_a_second_and_none_starts_while_every_partition_is_paused() -> None:
    """Faust's fetcher waits 1 s for the partitions active as it began, and sleeps 1 s when none is: a hand-over's
    new owner then sat idle for up to a second after its recovery resumed the drafts partitions (run X)."""
    consumer = FakeConsumer(messages("drafts", range(3)))
    consumer.paused = consumer.assignment()  # a rebalance's recovery under way
    lane = Lane()
    await drain_once(consumer, {"drafts": lane})
    assert consumer.timeouts == [] and lane.batches == []  # no fetch: the loop comes back after FETCH_TIMEOUT_S
    consumer.paused = set()  # resumed
    await drain_once(consumer, {"drafts": lane})
    assert consumer.timeouts == [transport.FETCH_TIMEOUT_S] and lane.batches == [[0, 1, 2]]
    assert transport.FETCH_TIMEOUT_S <= 0.1


async def test_commits_start_at_the_first_record_read_where_nothing_was_committed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="streams.runtime.transport")
    consumer = FakeConsumer(messages("drafts", range(7, 9)))
    consumer._committed_offset[TP("drafts", 1)] = 3  # another partition, committed before
    await drain_once(consumer, {"drafts": Lane()})
    assert consumer._committed_offset[TP("drafts", 0)] == 7  # the head: no commit passes 7 before it is acked
    assert consumer._committed_offset[TP("drafts", 1)] == 3
    assert "drafts[0]: nothing committed; commits start at offset 7" in caplog.text


def _faust_app(tmp_path: Any, **overrides: Any) -> Any:
    from engine.settings import Settings
    from streams.runtime.faust_app import faust_app
    from tests.streams.fakes import NothingToClose, no_skipped_batches

    settings = Settings(data_dir=tmp_path, broker="127.0.0.1:1", **overrides)
    return faust_app(settings, 3, closing=NothingToClose(), skipped=no_skipped_batches)


def test_no_commit_passes_a_record_still_being_handled(tmp_path: Any) -> None:
    """Faust's off-by-one (docs/known-issues.md): committed 10 (the next record to read) and 11, 12 acked while
    10 is still being judged made Faust commit 13; a graceful stop or a rebalance then gave 10 up for good."""
    from faust.types import TP as FaustTP

    consumer = _faust_app(tmp_path).consumer
    tp = FaustTP("drafts", 0)
    consumer._committed_offset[tp] = 10
    for offset in (11, 12):
        consumer._acked[tp].append(offset)
        consumer._acked_index[tp].add(offset)
    assert consumer._new_offset(tp) is None  # 10 is not handled yet
    consumer._acked[tp].append(10)
    consumer._acked_index[tp].add(10)
    assert consumer._new_offset(tp) == 13
    consumer._committed_offset[tp] = 20
    consumer._acked[tp].extend([21, 22])
    consumer._gap[tp].addi(20, 21)  # 20 never comes (a skipped batch): commits may pass it
    assert consumer._new_offset(tp) == 23


async def test_a_commit_during_a_revocation_does_not_pass_records_released_unhandled(tmp_path: Any) -> None:
    """Faust forgets a revoked partition's committed offset before the revocation's handlers, in which the lanes'
    last acks arrive. Committed 579 and 579-695 released unhandled, the acks of 696-699 made the commit made
    during the rebalance 700: the next owner started there (run M: 117 drafts never decided)."""
    from faust.types import TP as FaustTP

    consumer = _faust_app(tmp_path).consumer
    tp, other = FaustTP("drafts", 0), FaustTP("drafts", 1)
    consumer._committed_offset[tp] = 579
    consumer._committed_offset[other] = 40

    async def handlers(revoked: set[Any]) -> None:  # the app's: the lanes finish, their acks arrive
        for offset in (696, 697, 698, 699):
            consumer._acked[tp].append(offset)
            consumer._acked_index[tp].add(offset)
        consumer._acked[other].extend([40, 41])
        consumer._acked_index[other].update([40, 41])

    consumer._on_partitions_revoked = handlers
    await consumer.on_partitions_revoked({tp, other})
    assert consumer._committed_offset[tp] is None  # Faust forgot it
    assert consumer._new_offset(tp) is None  # 579-695 are not handled: no commit passes them
    assert consumer._new_offset(other) == 42  # acks that follow the committed offset are still committed


async def test_a_stopping_app_stops_its_consumer_rejoining_first(tmp_path: Any, monkeypatch: Any) -> None:
    import faust

    from streams.runtime import faust_private

    async def nothing(self: Any) -> None:
        return None

    monkeypatch.setattr(faust.App, "on_stop", nothing)  # Faust's own steps of the stop come after ours
    app = _faust_app(tmp_path)
    rejoins: list[str] = []
    coordinator = types.SimpleNamespace(request_rejoin=lambda: rejoins.append("rejoin"))
    faust_private.consumer_thread(app.consumer)._consumer = types.SimpleNamespace(_coordinator=coordinator)

    async def first_hook() -> None:
        coordinator.request_rejoin()  # a heartbeat that found the group rebalancing, as the stop began

    app.first_on_stop(first_hook)
    await app.on_stop()
    assert rejoins == []


def test_a_rebalance_reaching_a_stopping_worker_leaves_its_kafka_consumer_to_the_orderly_stop(tmp_path: Any) -> None:
    """Faust answers a rebalance during a stop with ``consumer.close()``, which marked aiokafka's consumer closed
    and closed its client and coordinator on the app's loop instead of the consumer thread's: the thread's own
    stop then skipped leaving the group and the worker never exited (docs/known-issues.md)."""
    from streams.runtime import faust_private

    app = _faust_app(tmp_path)
    scheduled: list[str] = []

    class Closing:
        def __init__(self, name: str) -> None:
            self.name = name

        async def close(self) -> None:
            scheduled.append(self.name)

    kafka = type("KafkaConsumer", (), {"_closed": False, "_client": Closing("client"),
                                        "_coordinator": Closing("coordinator")})()  # fmt: skip
    thread = faust_private.consumer_thread(app.consumer)
    thread._consumer = kafka
    loop = asyncio.new_event_loop()
    try:
        app.loop = loop
        app._on_rebalance_when_stopped()  # what Faust calls when a rebalance callback finds the app stopping
        loop.run_until_complete(asyncio.sleep(0.01))
    finally:
        loop.close()
    assert kafka._closed is False and scheduled == []  # the consumer thread's stop closes it, on its own loop


class StandInCoordinator:
    """aiokafka's group coordinator as the stop uses it: whether it led the latest join, and its LeaveGroup."""

    group_id, member_id = "drift-worker", "member-1"

    _group_instance_id = None

    def __init__(self, leader: bool, formed: bool = False, generation: int = 3) -> None:
        self._group_subscription = {"drafts"} if leader else None  # set by the leader's assignment
        self.generation = generation
        self.formed = formed  # a heartbeat of the generation is answered without an error
        self.left: list[int] = []  # the generations LeaveGroup was sent from
        self.aiokafka_left: list[int] = []  # the generations aiokafka's own leave ran at

    async def _send_req(self, request: Any) -> Any:
        if request.API_KEY == 13:  # LeaveGroup
            self.left.append(self.generation)
            return types.SimpleNamespace(error_code=0)
        assert (request.API_KEY, request._generation_id) == (12, self.generation)  # a Heartbeat of its generation
        return types.SimpleNamespace(error_code=0 if self.formed else 27)  # 27: REBALANCE_IN_PROGRESS

    async def _maybe_leave_group(self) -> None:  # aiokafka's: LeaveGroup from a generation above 0 only
        self.aiokafka_left.append(self.generation)
        if self.generation > 0:
            self.left.append(self.generation)

    def reset_generation(self) -> None:
        self.generation = -1


async def test_a_group_leader_leaves_only_a_formed_group_a_follower_always_leaves(tmp_path: Any) -> None:
    """The embedded broker keeps a leader that leaves a forming group as its leader for good: every later member
    is a follower waiting for it, and no worker becomes ready again (docs/known-issues.md). A leader of a group
    that is rebalancing therefore waits out its session; of a formed one, it leaves."""
    from streams.runtime import faust_private

    cases: tuple[tuple[bool, int, bool, list[int], bool], ...] = (
        (True, 2, False, [], False),
        (True, 2, True, [3], False),
        (False, 2, False, [3], False),
        (True, 1, False, [3], False),
        (True, 2, False, [3], True),
    )
    for leader, members, formed, left, leader_leaves in cases:  # leader_leaves: DRIFT_GROUP_LEADER_LEAVES (Kafka)
        coordinator = StandInCoordinator(leader, formed)

        class KafkaConsumer:
            _coordinator = coordinator

            async def stop(self) -> None:  # aiokafka's stop ends with the coordinator's LeaveGroup
                await self._coordinator._maybe_leave_group()

        app = _faust_app(tmp_path, group_leader_leaves=leader_leaves)
        app.assignor.changelog_distribution = {f"http://worker{n}": {} for n in range(members)}  # latest assignment
        thread = faust_private.consumer_thread(app.consumer)
        thread._consumer = KafkaConsumer()
        await thread.on_thread_stop()  # the consumer thread's orderly stop
        assert coordinator.left == left, f"leader={leader} members={members} formed={formed}"
        assert coordinator.generation == (3 if left else -1)  # alone, the leader leaves: its group cannot be forming


class FollowerOfAStoppingLeader(StandInCoordinator):
    """A follower's coordinator whose heartbeats say the group is formed until the leader's leave (the
    ``formed_for``-th answer), and what it sent, in order."""

    def __init__(self, formed_for: int) -> None:
        super().__init__(leader=False)
        self.formed_for = formed_for
        self.sent: list[str] = []

    async def _send_req(self, request: Any) -> Any:
        if request.API_KEY == 12:  # Heartbeat
            formed = sum(sent == "formed" for sent in self.sent) < self.formed_for
            self.sent.append("formed" if formed else "rebalancing")
            return types.SimpleNamespace(error_code=0 if formed else 27)
        return await super()._send_req(request)

    async def _maybe_leave_group(self) -> None:
        self.sent.append("leave")
        await super()._maybe_leave_group()


async def test_a_follower_whose_leader_stops_too_leaves_after_the_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both workers stopped at once: a follower that left first turned the group into a forming one, so the
    stopping leader let its session run out, and new workers joining before its eviction waited for it
    (docs/known-issues.md, "A simultaneous restart"). A follower whose leader stops too now waits, a bounded
    time, until its heartbeat says the group rebalances (the leader's leave); one whose leader goes on leaves
    at once."""
    from streams.runtime import faust_private
    from streams.runtime.faust_private import group

    monkeypatch.setattr(group, "FOLLOWER_ASKS_EVERY_S", 0.001)
    monkeypatch.setattr(group, "FOLLOWER_WAITS_S", 0.2)
    cases = ((False, 3, ["leave"]), (True, 3, ["formed"] * 3 + ["rebalancing", "leave"]), (True, 10**9, None))
    for leader_stops, formed_for, sent in cases:
        coordinator = FollowerOfAStoppingLeader(formed_for)
        consumer = types.SimpleNamespace(_coordinator=coordinator)
        stopping = functools.partial(bool, leader_stops)
        faust_private.leave_group_unless_leader(
            consumer, lambda: None, lambda: False, formed_after_s=0.3, leader_stopping=stopping
        )
        await coordinator._maybe_leave_group()  # what aiokafka's stop ends with
        if sent is not None:
            assert coordinator.sent == sent, f"leader stops: {leader_stops}"
        else:  # the leader never left: the follower leaves once the bound is over
            assert coordinator.sent[-1] == "leave" and set(coordinator.sent[:-1]) == {"formed"}
        assert coordinator.left == [3]


async def test_a_plain_group_consumers_leader_stops_without_leave_group_a_follower_leaves() -> None:
    """The sinks', the monitor's and the shadow lane's aiokafka groups get the same workaround, without a member
    count: their leader always waits out its session (a stuck sink group stopped `make chaos` rolling-restarts)."""
    from streams.runtime import faust_private

    for leader, left in ((True, []), (False, [3])):
        coordinator = StandInCoordinator(leader)

        class KafkaConsumer:
            _coordinator = coordinator

        faust_private.group_leader_stays(KafkaConsumer())
        await coordinator._maybe_leave_group()  # what aiokafka's stop ends with
        assert coordinator.left == left, f"leader={leader}"
        assert coordinator.generation == (3 if left else -1)


def test_a_leader_named_without_a_sync_for_the_bound_counts_as_departed_a_completed_rebalance_resets() -> None:
    from aiokafka.protocol.group import JoinGroupRequest, SyncGroupRequest

    from streams.runtime import faust_private

    now = [100.0]
    watch = faust_private.group._DepartedLeader(stuck_s=10.0, clock=lambda: now[0])
    join = JoinGroupRequest("g", 6000, 5000, "me", None, "consumer", [])
    sync = SyncGroupRequest("g", 3, "me", None, [])

    def joined(leader: str, at: float, error: int = 0) -> str:
        now[0] = at
        return watch.saw(join, types.SimpleNamespace(error_code=error, leader_id=leader, member_id="me"))

    assert [joined("old", t) for t in (100, 105, 109.9)] == ["", "", ""]
    assert joined("old", 110) == "old"  # named for 10 s without a sync
    assert joined("old", 115) == ""  # at most once per bound: the broker evicts the member held again meanwhile
    assert joined("old", 120) == "old"
    assert joined("other", 131) == ""  # a new leader starts its own count
    watch.saw(sync, types.SimpleNamespace(error_code=0))  # a completed rebalance
    assert joined("other", 140) == ""
    assert joined("other", 149) == ""
    assert joined("me", 200) == ""  # this member leads
    assert joined("other", 205, error=27) == ""  # failed joins name no leader


async def test_a_member_of_the_embedded_brokers_generation_0_sends_leave_group_itself() -> None:
    """aiokafka leaves only from a generation above 0; the embedded broker's first generation is 0, so two workers
    started together (or ``drift up`` alone) would leave by their sessions timing out."""
    from streams.runtime import faust_private

    for generation, left in ((0, [0]), (3, [3])):
        coordinator = StandInCoordinator(False, generation=generation)

        class KafkaConsumer:
            _coordinator = coordinator

        faust_private.group_leader_stays(KafkaConsumer())
        await coordinator._maybe_leave_group()
        assert (coordinator.left, coordinator.aiokafka_left) == (left, [generation])
