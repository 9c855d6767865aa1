"""aiokafka's group coordinator: how a worker leaves its group, and how the others end a departed leader the
embedded broker keeps (docs/known-issues.md). The coordinator is the consumer's ``_coordinator``, listed in
:mod:`streams.runtime.faust_private.consumer`."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiokafka.errors import KafkaError, RebalanceInProgressError, UnknownMemberIdError
from aiokafka.protocol.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest

log = logging.getLogger(__name__)

#: The private names reached below (part of :data:`streams.runtime.faust_private.PRIVATE_NAMES`).
NAMES: tuple[tuple[str, str, str], ...] = (
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_group_subscription", "attribute"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_maybe_leave_group", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_send_req", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_group_instance_id", "attribute"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_heartbeat_task", "attribute"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_pending_exception", "attribute"),
    ("aiokafka.consumer.group_coordinator:BaseCoordinator", "_client", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_group", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_session_timeout", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_rebalance_timeout", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_protocol_type", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_group_protocols", "attribute"),
)


#: A follower whose group's leader stops with it waits at most this long for the leader's LeaveGroup before it
#: sends its own (:func:`leave_group_unless_leader`): what a stopping worker spends before its consumer leaves
#: varies by about a second between two workers stopped at the same moment.
FOLLOWER_WAITS_S = 2.0
#: How often that follower asks the broker (a heartbeat) whether the leader has left.
FOLLOWER_ASKS_EVERY_S = 0.1


def leave_group_unless_leader(
    kafka_consumer: Any,
    on_skip: Any,
    alone: Any,
    *,
    formed_after_s: float | None = None,
    leader_stopping: Callable[[], bool] | None = None,
) -> None:
    """On stop, the consumer sends LeaveGroup unless it was elected leader at its latest join and was not alone in
    the group then (``alone()``): such a leader's membership ends by its session timeout (``on_skip()``), as the
    embedded broker keeps a departed leader of a forming group for good (docs/known-issues.md). With
    ``formed_after_s``, it still leaves when a heartbeat of its generation that long after its stop began says the
    group is formed; a leave or join landing in between is healed by the others (:func:`heal_departed_leader`).
    A follower for which ``leader_stopping()`` is true (its leader is stopping too) first waits, up to
    :data:`FOLLOWER_WAITS_S`, until its heartbeat says the group rebalances: the leader then leaves a formed
    group, and the group is empty for the workers that replace them, instead of led by a departed leader."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None or not hasattr(coordinator, "_group_subscription"):
        return  # no group (a client-only consumer)
    leave = coordinator._maybe_leave_group

    async def maybe_leave() -> None:
        leads = _leads(coordinator) and not alone()
        if leads and not (formed_after_s is not None and await _group_formed(coordinator, formed_after_s)):
            on_skip()
            coordinator.reset_generation()
            return
        if not leads and leader_stopping is not None and leader_stopping():
            await _leader_gone(coordinator, FOLLOWER_WAITS_S)
        await _leave_generation_zero(coordinator)
        await leave()

    coordinator._maybe_leave_group = maybe_leave


async def _leader_gone(coordinator: Any, bound_s: float) -> None:
    """Ask every :data:`FOLLOWER_ASKS_EVERY_S`, for at most ``bound_s``, until a heartbeat of the member's
    generation is no longer answered as formed (the leader left: the group rebalances)."""
    deadline = time.monotonic() + bound_s
    while await _heartbeat_error(coordinator) == 0:
        if time.monotonic() >= deadline:
            log.info("the group's leader did not leave within %.1f s: this follower leaves now", bound_s)
            return
        await asyncio.sleep(FOLLOWER_ASKS_EVERY_S)


def leads_group(kafka_consumer: Any) -> bool:
    """The consumer was elected its group's leader at its latest join."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    return coordinator is not None and _leads(coordinator)


def _leads(coordinator: Any) -> bool:
    """aiokafka keeps the group's subscription only in the member its latest join elected leader (set by the
    leader's assignment)."""
    return getattr(coordinator, "_group_subscription", None) is not None


async def _leave_generation_zero(coordinator: Any) -> None:
    """aiokafka sends LeaveGroup only from a generation above 0 (Kafka's first is 1); the embedded broker numbers a
    group's first generation 0, so a member that never saw a second one (two workers started together, ``drift
    up`` alone) would leave by its session timing out. Send it here; aiokafka's own leave then only resets."""
    if coordinator.generation != 0 or coordinator._group_instance_id is not None:
        return
    try:
        await coordinator._send_req(LeaveGroupRequest(coordinator.group_id, coordinator.member_id))
    except KafkaError as exc:
        log.warning("LeaveGroup of generation 0 failed: %r", exc)


async def _group_formed(coordinator: Any, after_s: float) -> bool:
    """A heartbeat of the member's generation, sent ``after_s`` from now, is answered: its group is formed."""
    await asyncio.sleep(after_s)
    return await _heartbeat_error(coordinator) == 0


async def _heartbeat_error(coordinator: Any) -> int | None:
    """The error code of a heartbeat of the member's generation sent now (None: no answer)."""
    request = HeartbeatRequest(coordinator.group_id, coordinator.generation, coordinator.member_id)
    try:
        response = await coordinator._send_req(request)
    except KafkaError:
        return None
    return int(response.error_code)


def group_of(kafka_consumer: Any) -> str | None:
    """The group id of a group consumer (before it has a member id too), else None."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    return str(coordinator.group_id) if coordinator is not None and coordinator.group_id else None


def group_generation(kafka_consumer: Any) -> int | None:
    """The generation of the consumer's latest join (-1 before its first; None without a group)."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    generation = getattr(coordinator, "generation", None)
    return generation if isinstance(generation, int) else None


def group_member(kafka_consumer: Any) -> tuple[str, str] | None:
    """(group id, member id) of a group consumer the broker has given a member id, else None."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    member_id = getattr(coordinator, "member_id", "")
    return (str(coordinator.group_id), str(member_id)) if coordinator is not None and member_id else None


def join_refusal(kafka_consumer: Any) -> BaseException | None:
    """The error the broker answered the consumer's JoinGroup with, when aiokafka holds it for the consumer's
    caller (an invalid session timeout, a group it may not join): its group routine waits until a ``getmany``
    raises it, which Faust never calls, so the worker stays joining for good. None: no such error."""
    error = getattr(getattr(kafka_consumer, "_coordinator", None), "_pending_exception", None)
    return error if isinstance(error, BaseException) else None


async def end_member(kafka_consumer: Any, member_id: str, *, formed_first: bool) -> bool:
    """Send LeaveGroup for another member of the consumer's group (a worker that died without a word, see
    :mod:`streams.worker.peers`): True once the broker has no such member, False to try again later. With
    ``formed_first``, only while a heartbeat of the consumer's generation says the group is formed: the embedded
    broker keeps a leader that leaves a forming group as its leader for good (docs/known-issues.md). When the
    leave started a rebalance, the consumer rejoins at once instead of at its next heartbeat, with
    :func:`rejoin_if_rebalancing`'s guards: not while it is joining already (a rejoin asked for during its sync
    would cost the group one more rebalance)."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None or (formed_first and await _heartbeat_error(coordinator) != 0):
        return False
    try:
        response = await coordinator._send_req(LeaveGroupRequest(coordinator.group_id, member_id))
    except KafkaError:
        return False
    if response.error_code not in (0, UnknownMemberIdError.errno):
        return False
    await rejoin_if_rebalancing(kafka_consumer)
    return True


async def rejoin_if_rebalancing(kafka_consumer: Any) -> bool | None:
    """Send the consumer's next heartbeat now, and act on it as aiokafka's own heartbeat would: when the group is
    rebalancing, ask to rejoin (True). False: the group is stable (a peer's join or leave has not reached the
    broker yet: ask again). None: nothing to do, because the consumer is joining already (its heartbeats are
    stopped until the join ends; a rejoin asked for during its sync would cost the group one more rebalance), has
    no group, or got another answer, which its own heartbeat will handle."""
    if (coordinator := _between_rebalances(kafka_consumer)) is None:
        return None
    generation = coordinator.generation
    error = await _heartbeat_error(coordinator)
    if error == 0:
        return False
    if error == RebalanceInProgressError.errno and coordinator.generation == generation and _beating(coordinator):
        coordinator.request_rejoin()
        return True
    return None


async def rejoin_now(kafka_consumer: Any) -> bool:
    """Ask the consumer to rejoin its group now, if it is between rebalances (True): a peer is about to join, and
    a member whose JoinGroup reaches the broker first gets its partitions a second sooner on the embedded broker."""
    if (coordinator := _between_rebalances(kafka_consumer)) is None:
        return False
    coordinator.request_rejoin()
    return True


def stop_rejoining(kafka_consumer: Any) -> bool:
    """A stopping worker's consumer no longer rejoins its group when a heartbeat says the group rebalances (True;
    False: no coordinator yet). aiokafka answers that heartbeat by rejoining; on the embedded broker the stop then
    waits out the 3 s join phase, and the worker joins a generation the others must rebalance again without it
    (docs/known-issues.md, "A stopping worker rejoined its group"). It leaves as it stops instead, or, a leader of
    a rebalancing group, lets its session run out (:func:`leave_group_unless_leader`)."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None:
        return False
    coordinator.request_rejoin = _no_rejoin  # the instance's, over the class's method
    return True


def _no_rejoin() -> None:
    log.debug("a rebalance reached the stopping worker: its consumer does not rejoin, it leaves as it stops")


def _between_rebalances(kafka_consumer: Any) -> Any:
    """The consumer's group coordinator if the member is between rebalances, else None."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    return coordinator if coordinator is not None and _beating(coordinator) else None


def _beating(coordinator: Any) -> bool:
    """The member is between rebalances: aiokafka runs its heartbeat task only then."""
    task = getattr(coordinator, "_heartbeat_task", None)
    return task is not None and not task.done()


class _DepartedLeader:
    """Follows one member's JoinGroup and SyncGroup answers: the same other member named leader for ``stuck_s``
    without a sync in between is a departed leader the broker kept (docs/known-issues.md)."""

    def __init__(self, stuck_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stuck_s = stuck_s
        self.clock = clock
        self.leader = ""
        self.since = 0.0
        self.tasks: set[asyncio.Task[Any]] = set()

    def saw(self, request: Any, response: Any) -> str:
        """The departed leader to end, or ""."""
        api, ok = getattr(request, "API_KEY", None), getattr(response, "error_code", None) == 0
        if api == SyncGroupRequest.API_KEY and ok:
            self.leader = ""
        elif api == JoinGroupRequest.API_KEY and ok:
            leader, now = response.leader_id, self.clock()
            if leader == response.member_id:
                self.leader = ""
            elif leader != self.leader:
                self.leader, self.since = leader, now
            elif now - self.since >= self.stuck_s:
                self.since = now  # at most once per stuck_s
                return str(leader)
        return ""


def heal_departed_leader(kafka_consumer: Any, stuck_s: float, on_heal: Callable[[str], None]) -> None:
    """Once the consumer has started: when its group names the same other member leader for ``stuck_s`` without
    completing a rebalance, join once as that member (on a connection of its own) and send nothing more. The
    broker then holds the departed leader as a member again, evicts it when its session runs out, and clears the
    leader with it; the next join elects a live member. A live leader named that long only has its join
    metadata replaced until its own next join: one more generation, nothing lost."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None or not hasattr(coordinator, "_send_req"):
        return
    send, watch = coordinator._send_req, _DepartedLeader(stuck_s)

    async def observed(request: Any) -> Any:
        response = await send(request)
        if leader := watch.saw(request, response):
            on_heal(leader)
            task = asyncio.ensure_future(_join_as(coordinator, request, leader))
            watch.tasks.add(task)
            task.add_done_callback(watch.tasks.discard)
        return response

    coordinator._send_req = observed


async def _join_as(coordinator: Any, request: Any, member_id: str) -> None:
    join = JoinGroupRequest(request._group, request._session_timeout, request._rebalance_timeout, member_id, None,
                            request._protocol_type, request._group_protocols)  # fmt: skip
    try:
        await coordinator._client.send(coordinator.coordinator_id, join)
    except KafkaError as exc:
        log.warning("joining as the departed leader %s failed: %r (tried again later)", member_id, exc)


def group_leader_stays(kafka_consumer: Any) -> None:
    """For a plain aiokafka group consumer (the sinks, the monitor, the shadow lane), once started: as
    :func:`leave_group_unless_leader`, without a member count, so a leader never sends LeaveGroup and its
    session times out instead (these groups are beside the verdict path: a few seconds' wait is harmless, a
    group that never forms again stops the sink for good; seen in ``make chaos`` rolling-restarts)."""
    leave_group_unless_leader(kafka_consumer, _leader_waits_out_its_session, lambda: False)


def _leader_waits_out_its_session() -> None:
    log.info("a consumer leading its group stops without LeaveGroup: its session times out instead")
