"""Every private name of Faust, mode and aiokafka this project touches, in one place.

The worker goes below Faust's public API in three spots, each for a measured reason (docs/gate-design.md):
the fast lanes (:mod:`streams.runtime.transport`) drive Faust's consumer bookkeeping themselves, undecodable
batches (:mod:`streams.runtime.undecodable`) are skipped inside aiokafka's fetcher, and the gate's tables
(:mod:`streams.runtime.tables`, :mod:`streams.worker.lanes`) write the in-memory store directly. Reads and
writes of private attributes go through the functions below; methods overridden by subclasses elsewhere are
listed in :data:`PRIVATE_NAMES` too. ``tests/streams/test_faust_private.py`` checks every entry against the
installed libraries, so an upgrade that moves one fails there, not in production; ``pyproject.toml`` pins
the upper bounds of faust-streaming, mode-streaming and aiokafka for the same reason.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from aiokafka import TopicPartition
from aiokafka.errors import KafkaError
from aiokafka.protocol.group import HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest, SyncGroupRequest
from faust.streams import _current_event
from faust.types import TP

log = logging.getLogger(__name__)
R = TypeVar("R")

#: (owner, name, kind): ``owner`` is ``module:Class``, ``module:Class.function`` or ``module``; ``kind`` is
#: ``method`` (defined on the class or a base), ``attribute`` (assigned as ``self.<name>`` in the class or a
#: base), ``local`` (a local variable of the function) or ``global`` (a module attribute).
PRIVATE_NAMES: tuple[tuple[str, str, str], ...] = (
    # overridden by streams.runtime.transport
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_fetch_records", "method"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_create_worker_consumer", "method"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_highwaters", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_new_consumer_thread", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_drain_messages", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_new_offset", "method"),
    # overridden by streams.worker.runner
    ("mode.worker:Worker", "_on_sigint", "method"),
    ("mode.worker:Worker", "_on_sigterm", "method"),
    ("mode.worker:Worker", "_gather_all", "method"),
    # overridden by streams.runtime.faust_app (TableManager.on_start without its fixed sleep, on_rebalance with
    # the tables side by side) and called there
    ("faust.tables.manager:TableManager", "_update_channels", "method"),
    ("faust.tables.manager:TableManager", "_recovery_started", "attribute"),
    ("faust.tables.manager:TableManager", "_recovery", "attribute"),
    ("faust.tables.recovery:Recovery", "_build_offsets", "method"),  # overridden by streams.runtime.readahead
    # read or written through the functions below
    ("faust.transport.drivers.aiokafka:Consumer", "_read_offset", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_unacked_messages", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_add_gap", "method"),
    ("faust.transport.drivers.aiokafka:Consumer", "_committed_offset", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_acked", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_gap", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_thread", "attribute"),
    ("faust.transport.drivers.aiokafka:Consumer", "_stopped", "attribute"),
    ("faust.transport.consumer:Consumer", "_get_active_partitions", "method"),
    ("faust.transport.consumer:Fetcher", "_stopped", "attribute"),
    ("faust.streams", "_current_event", "global"),
    ("faust.tables.base:Collection", "_store", "attribute"),
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_fetcher", "attribute"),
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_coordinator", "attribute"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_group_subscription", "attribute"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_maybe_leave_group", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_send_req", "method"),
    ("aiokafka.consumer.group_coordinator:GroupCoordinator", "_group_instance_id", "attribute"),
    ("aiokafka.consumer.group_coordinator:BaseCoordinator", "_client", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_group", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_session_timeout", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_rebalance_timeout", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_protocol_type", "attribute"),
    ("aiokafka.protocol.group:JoinGroupRequest", "_group_protocols", "attribute"),
    ("faust.transport.drivers.aiokafka:AIOKafkaConsumerThread", "_consumer", "attribute"),
    ("aiokafka.consumer.consumer:AIOKafkaConsumer", "_fetch_max_wait_ms", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_records", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_fetch_max_wait_ms", "attribute"),
    ("aiokafka.consumer.fetcher:Fetcher", "_proc_fetch_request", "method"),
    ("aiokafka.consumer.fetcher:FetchResult", "_partition_records", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_records_iterator", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_tp", "attribute"),
    ("aiokafka.consumer.fetcher:PartitionRecords", "_unpack_records", "method"),
    ("aiokafka.consumer.fetcher:PartitionRecords._unpack_records", "next_batch", "local"),
)

#: aiokafka's record generator and its local holding the batch being unpacked (found in a traceback).
UNPACK_FUNCTION = "_unpack_records"
UNPACK_BATCH_LOCAL = "next_batch"


# -- Faust's consumer (the fast lanes) -------------------------------------------------------------------


def read_offset(consumer: Any, tp: TP) -> int | None:
    """The offset Faust's consumer last read on ``tp`` (None before the first record)."""
    return cast("int | None", consumer._read_offset[tp])


def set_read_offset(consumer: Any, tp: TP, offset: int) -> None:
    consumer._read_offset[tp] = offset


async def add_gap(consumer: Any, tp: TP, first: int, last: int) -> None:
    """Let offset commits pass ``first..last``, offsets that will never be acked (absent or skipped)."""
    await consumer._add_gap(tp, first, last)


def committed_offset(consumer: Any, tp: TP) -> int | None:
    """The offset Faust's consumer last committed on ``tp``, i.e. the next one the group reads (None: none yet)."""
    return cast("int | None", consumer._committed_offset[tp])


def start_commits_at(consumer: Any, tp: TP, offset: int) -> None:
    """Where commits of ``tp`` start when nothing was committed yet: the first record read since the assignment."""
    if consumer._committed_offset[tp] is None:
        consumer._committed_offset[tp] = offset


def acked_offsets(consumer: Any, tp: TP) -> list[int]:
    """The offsets acked on ``tp`` and not committed yet."""
    return cast("list[int]", consumer._acked[tp])


def in_gap(consumer: Any, tp: TP, offset: int) -> bool:
    """True when ``offset`` of ``tp`` is a gap: an offset that will never be acked (absent or skipped)."""
    return bool(consumer._gap[tp].overlaps(offset))


def release(consumer: Any, message: Any) -> None:
    """Forget a tracked message that will not be handled here (fetched again after a rebalance)."""
    consumer._unacked_messages.discard(message)


def active_partitions(consumer: Any) -> set[TP]:
    """The assigned partitions Faust's consumer fetches now (not paused by a rebalance's recovery)."""
    return set(consumer._get_active_partitions())


def fetch_loop_stopped(consumer: Any, fetcher: Any) -> bool:
    return bool(consumer._stopped.is_set() or fetcher._stopped.is_set())


def consumer_thread(consumer: Any) -> Any:
    """The thread service behind Faust's consumer (None before it is created)."""
    return getattr(consumer, "_thread", None)


# -- aiokafka's consumer and fetcher (undecodable batches) ----------------------------------------------------


def kafka_fetcher(kafka_consumer: Any) -> Any:
    """aiokafka's fetcher of a consumer (None before the consumer starts)."""
    return kafka_consumer._fetcher


def kafka_consumer(thread: Any) -> Any:
    """The aiokafka consumer of Faust's consumer thread (None before it is created)."""
    return getattr(thread, "_consumer", None)


async def seek_to_committed(kafka_consumer: Any) -> dict[TP, int | None]:
    """aiokafka's ``seek_to_committed`` of every assigned partition, with one OffsetFetch request: aiokafka's asks
    once per partition, one after another (0.4 s for a worker's partitions on the embedded broker under a stream,
    in the resume of every rebalance: BENCHMARKS.md, run AA). None: nothing committed."""
    partitions = kafka_consumer.assignment()
    found = await kafka_consumer._coordinator.fetch_committed_offsets(list(partitions))
    committed: dict[TP, int | None] = {}
    for tp in partitions:
        offset = found[tp].offset if tp in found else -1
        committed[tp] = None if offset == -1 else offset
        if offset > 0:
            kafka_consumer.seek(tp, offset)
    return committed


def leave_group_unless_leader(
    kafka_consumer: Any, on_skip: Any, alone: Any, *, formed_after_s: float | None = None
) -> None:
    """On stop, the consumer sends LeaveGroup unless it was elected leader at its latest join and was not alone in
    the group then (``alone()``): such a leader's membership ends by its session timeout (``on_skip()``), as the
    embedded broker keeps a departed leader of a forming group for good (docs/known-issues.md). With
    ``formed_after_s``, it still leaves when a heartbeat of its generation that long after its stop began says the
    group is formed; a leave or join landing in between is healed by the others (:func:`heal_departed_leader`)."""
    coordinator = getattr(kafka_consumer, "_coordinator", None)
    if coordinator is None or not hasattr(coordinator, "_group_subscription"):
        return  # no group (a client-only consumer)
    leave = coordinator._maybe_leave_group

    async def maybe_leave() -> None:
        leads = coordinator._group_subscription is not None and not alone()  # set by the leader's assignment
        if leads and not (formed_after_s is not None and await _group_formed(coordinator, formed_after_s)):
            on_skip()
            coordinator.reset_generation()
            return
        await _leave_generation_zero(coordinator)
        await leave()

    coordinator._maybe_leave_group = maybe_leave


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
    request = HeartbeatRequest(coordinator.group_id, coordinator.generation, coordinator.member_id)
    try:
        response = await coordinator._send_req(request)
    except KafkaError:
        return False
    return bool(response.error_code == 0)


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


def set_fetch_max_wait(kafka_consumer: Any, wait_ms: int) -> None:
    """Faust hard-codes 1500 ms; the embedded broker answers faster with a shorter wait."""
    kafka_consumer._fetch_max_wait_ms = wait_ms


def fetch_max_wait(fetcher: Any) -> int:
    """The max wait (ms) the fetcher sends with each fetch request."""
    wait: int = fetcher._fetch_max_wait_ms
    return wait


_watched: weakref.WeakSet[Any] = weakref.WeakSet()


def on_fetch_responses(fetcher: Any, observe: Callable[[list[Any], set[Any]], int | None]) -> bool:
    """After each fetch response the fetcher handles, ``observe(asked, unread)`` gets the partitions the request
    asked for and those that came back without records though the broker reports records past the fetch
    offset; a wait it returns becomes the fetcher's max wait (streams.runtime.fetchwait). Installed once: False
    if an observer was already installed."""
    if fetcher in _watched:
        return False
    _watched.add(fetcher)
    handle = fetcher._proc_fetch_request

    async def handled(assignment: Any, node_id: Any, request: Any) -> Any:
        result = await handle(assignment, node_id, request)
        asked = [(TopicPartition(topic, p[0]), p[1]) for topic, partitions in request.topics for p in partitions]
        unread = {tp for tp, offset in asked if _unread(fetcher, assignment.state_value(tp), tp, offset)}
        if (wait := observe([tp for tp, _ in asked], unread)) is not None:
            fetcher._fetch_max_wait_ms = wait
        return result

    fetcher._proc_fetch_request = handled
    return True


def _unread(fetcher: Any, state: Any, tp: Any, offset: int) -> bool:
    """No records buffered for ``tp`` after a response to a fetch at ``offset``, which is still its position,
    while the broker's high watermark lies past it."""
    if state is None or tp in fetcher._records or not state.has_valid_position or state.position != offset:
        return False
    return state.highwater is not None and state.highwater > offset


def fetch_results(fetcher: Any) -> Any:
    """The fetcher's completed fetches (a dict of TP -> FetchResult)."""
    return fetcher._records


def replace_fetch_results(fetcher: Any, results: Any) -> None:
    fetcher._records = results


def partition_records(result: Any) -> Any:
    """A FetchResult's record iterator (None once consumed)."""
    return getattr(result, "_partition_records", None)


def records_iterator(records: Any) -> Any:
    return getattr(records, "_records_iterator", None)


def replace_records_iterator(records: Any, iterator: Any) -> None:
    records._records_iterator = iterator


def records_partition(records: Any) -> TP:
    tp: TP = records._tp
    return tp


# -- Faust's tables --------------------------------------------------------------------------------------


async def update_table_channels(manager: Any) -> None:
    """What Faust's TableManager does on start after its fixed one-second sleep: subscribe the tables'
    changelogs and start each table (then the caller starts the recovery service)."""
    await manager._update_channels()


def close_table_registration(manager: Any) -> None:
    """What Faust's TableManager does first in a rebalance: no table may be added from now on."""
    manager._recovery_started.set()


def table_recovery(manager: Any, kind: Callable[..., R]) -> R:
    """The table manager's recovery service, made with ``kind`` (Faust's property makes a plain ``Recovery``)."""
    if manager._recovery is None:
        manager._recovery = kind(manager.app, manager, beacon=manager.beacon, loop=manager.loop)
    return cast(R, manager._recovery)


def table_store_url(table: Any) -> str:
    """The store URL a Faust table uses: its own, or the app's default (``memory://``, ``rocksdb://``…)."""
    return str(table._store or table.app.conf.store)


def set_current_event(event: Any) -> None:
    """Make ``event`` Faust's current event: Faust's own table writes take their changelog partition from it."""
    _current_event.set(weakref.ref(event))
