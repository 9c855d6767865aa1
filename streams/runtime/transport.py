"""Faust's aiokafka transport, adjusted for the embedded broker.

It also carries the worker's *fast lanes*: records of a hot topic (drafts, messages) go from Faust's consumer
straight to a batch handler, instead of one task group, event and stream hop per record. Faust still owns
the consumer group, the partition assignment (so the tables stay co-partitioned with these topics), table
recovery, flow control during rebalances and offset commits: a handler acks each record on the consumer once
its effects are durable, exactly as a stream would.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import IllegalStateError, RecordTooLargeError
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP

from engine.settings import Settings
from streams.runtime import faust_private as private
from streams.runtime import fetchwait
from streams.runtime.commits import HeadOfLineCommits
from streams.runtime.stopping import mark_stop
from streams.runtime.undecodable import SkippedBatch, guard_fetcher, unfetchable
from streams.wire.kafka import client_kwargs, start_once, true_end_offsets

log = logging.getLogger(__name__)


def transport_class(settings: Settings) -> type[faust_aiokafka.Transport]:
    """Faust's aiokafka transport with two fixes for the embedded broker (FACTS.md): a configurable fetch wait
    (Faust hard-codes 1500 ms) and table-recovery end offsets that count whole batches (Tansu reports the last
    batch's base offset + 1; see :func:`streams.wire.kafka.true_end_offsets`)."""

    class ConsumerThread(OrderlyClose, faust_aiokafka.AIOKafkaConsumerThread):
        _probe: AIOKafkaConsumer | None = None
        fetch_wait: fetchwait.FetchWait | None = None  # the worker consumer's (its /health reads it)
        leader_leaves = settings.group_leader_leaves
        brisk_wait_ms = settings.fetch_brisk_wait_ms
        heal_after_s = departed_after_s(settings)
        skipped: collections.deque[SkippedBatch]  # undecodable batches, reported by FastLanes (thread-safe)

        async def _fetch_records(self, consumer: Any, active_partitions: Any, *args: Any, **kwargs: Any) -> Any:
            wanted = requested_partitions(active_partitions)
            if wanted is not None and not wanted:
                return {}  # nothing is active: aiokafka would read an empty request as "every partition"
            install_guards(self, consumer)
            try:
                request = active_partitions if wanted is None else wanted
                return await super()._fetch_records(consumer, request, *args, **kwargs)
            except RecordTooLargeError as exc:
                if (skipped := unfetchable(exc)) is None:
                    raise
                self.skipped.append(skipped)
                return {}

        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            private.set_fetch_max_wait(consumer, settings.fetch_max_wait_ms)
            return consumer

        async def _highwaters(self, partitions: list[Any]) -> Any:
            reported = dict(await super()._highwaters(partitions))
            if self._probe is None:  # kept only once started: a failed start is closed, the next call tries again
                probe = AIOKafkaConsumer(**client_kwargs(settings), enable_auto_commit=False)
                await start_once(probe)
                self._probe = probe
            return await true_end_offsets(self._probe, reported)

        async def seek_to_committed(self) -> Any:
            """Every partition's committed offset in one request (aiokafka asks once per partition)."""
            return await self.call_thread(private.seek_to_committed, private.kafka_consumer(self))

        async def on_thread_stop(self) -> None:
            if self._probe is not None:
                await self._probe.stop()
            await super().on_thread_stop()

    class Consumer(HeadOfLineCommits, FastLanes, faust_aiokafka.Consumer):
        def _new_consumer_thread(self) -> ConsumerThread:
            thread = ConsumerThread(self, loop=self.loop, beacon=self.beacon)
            thread.skipped = collections.deque()
            return thread

    class Transport(faust_aiokafka.Transport):
        pass

    Transport.Consumer = Consumer
    return Transport


def install_guards(thread: Any, consumer: Any) -> None:
    """The worker consumer's fetcher guards, installed once it exists: a bad batch is skipped, never raised
    (streams.runtime.undecodable), and a fetch wait grows when the broker cannot list a partition in time
    (streams.runtime.fetchwait; ``thread.fetch_wait``, which ``/health`` reads)."""
    if (fetcher := private.kafka_fetcher(consumer)) is not None:
        guard_fetcher(fetcher, thread.skipped)
        if thread.fetch_wait is None and (wait := fetchwait.watch(consumer, thread.brisk_wait_ms)) is not None:
            thread.fetch_wait = wait  # once: this runs on every fetch


class OrderlyClose:
    """Mixin for Faust's consumer thread: a rebalance that reaches a stopping worker leaves the Kafka consumer to
    the worker's orderly stop (docs/known-issues.md, "A rebalance during a graceful stop").

    Faust answers a rebalance callback of a stopping app with ``consumer.close()``, which marks aiokafka's
    consumer closed and runs its client's and coordinator's ``close()`` on the app's event loop, not on the
    consumer thread's own loop. The coordinator's close then fails half-way (it awaits a task of the other loop),
    its heartbeat task is never stopped, the client's connections are closed under it ("marking coordinator
    dead"), and the thread's own ``consumer.stop()`` returns at once because the consumer is marked closed: the
    worker never leaves the group and its process never exits (its web server and sinks go on). Both workers
    stopped at the same moment hit it: the first to leave starts a rebalance for the other, still stopping.
    Doing nothing here is safe: the callback has returned (the app stops), and the thread's stop stops the
    consumer on its own loop, which leaves the group."""

    leader_leaves = False  # settings.group_leader_leaves
    heal_after_s = 0.0  # departed_after_s(settings)

    async def on_start(self) -> None:
        """Once the Kafka consumer has started, it heals a group whose leader departed while it formed."""
        await super().on_start()  # type: ignore[misc]
        app: Any = getattr(self, "app", None)
        if not self.leader_leaves and (consumer := private.kafka_consumer(self)) is not None:
            private.heal_departed_leader(consumer, self.heal_after_s, _departed_leader)
        if (claims := getattr(app, "partition_claims", None)) is not None:  # it judges through joins (claims.py)
            private.run_through_joins(private.kafka_consumer(self), claims, lambda: bool(app.should_stop))

    def close(self) -> None:
        log.info("a rebalance reached the stopping worker: its consumer leaves the group as it stops")

    async def on_thread_stop(self) -> None:
        """The orderly stop: a group leader with other members sends LeaveGroup only while a heartbeat says its
        group is formed (docs/known-issues.md, "A leader that leaves a forming group"); during a rebalance its
        session times out instead, and the group forms again without it. A leader alone in its group at its latest
        assignment (``drift up``) leaves at once: its group is formed, and a formed group's leave clears the
        leader. A follower whose leader stops too (``app.leader_stopping``) waits for the leader's leave first.
        With ``DRIFT_GROUP_LEADER_LEAVES`` every worker leaves at once."""
        app: Any = getattr(self, "app", None)
        mark_stop(app, "agents")
        stays = not self.leader_leaves  # DRIFT_GROUP_LEADER_LEAVES: a broker without the bug (Kafka)
        if stays and (consumer := private.kafka_consumer(self)) is not None and app is not None:
            alone, stopping = (lambda: members_seen(app) == 1), app.leader_stopping
            private.leave_group_unless_leader(
                consumer, _leader_stays, alone, formed_after_s=LEADER_LEAVE_AFTER_S, leader_stopping=stopping
            )
        await super().on_thread_stop()  # type: ignore[misc]
        mark_stop(app, "group leave")
        if (claims := getattr(app, "partition_claims", None)) is not None:
            await claims.unclaim()  # it left: its partitions' next owners need not wait until its connection closes


#: A stopping leader asks whether its group is formed this long after its consumer stopped: a follower stopped at
#: the same moment (``docker compose restart``) has sent its LeaveGroup by then, so the leader sees the group
#: rebalancing and stays, instead of leaving in the same millisecond (seen in ``ops.restart_loop --mode both``).
LEADER_LEAVE_AFTER_S = 0.3


def members_seen(app: Any) -> int:
    """How many workers the latest assignment spread the changelog partitions over (Faust's assignor)."""
    return len(app.assignor.changelog_distribution or {})


def _leader_stays() -> None:
    log.info("this worker leads its consumer group, which is rebalancing: it does not send LeaveGroup, its session "
             "times out instead")  # fmt: skip


def departed_after_s(settings: Settings) -> float:
    """How long the group may name another member leader without a completed rebalance before that leader counts
    as departed: a live leader rejoins within a session and its revocation, and a departed one the broker holds
    again (:func:`streams.runtime.faust_private.heal_departed_leader`) must be evicted (half a session of join,
    one session) before it is named again."""
    return 2 * settings.group_session_timeout_s + settings.group_rebalance_timeout_s


def _departed_leader(leader: str) -> None:
    log.warning(
        "the consumer group has named %s leader without completing a rebalance: the embedded broker keeps "
        "a departed leader (docs/known-issues.md); joining once as that member so its session ends",
        leader,
    )


def requested_partitions(active: AbstractSet[TP] | None) -> set[TP] | None:
    """The partitions one fetch asks aiokafka for: a snapshot of those Faust's consumer has active (None: all,
    a client-only consumer).

    Faust hands aiokafka's ``fetched_records`` its *live* set of active partitions, which aiokafka reads again
    each time it wakes up while the fetch waits, and it reads an empty set as "every assigned partition". When a
    table restore ends, Faust pauses the changelog partitions (the set is empty for a moment) before it resumes
    the stream partitions: a fetch waiting just then returned the records aiokafka had already buffered for the
    still-paused drafts, Faust's ``getmany`` dropped them (not active), and aiokafka's position had moved past
    them. Faust's seek back to the committed offsets does nothing for a partition that has none yet, so those
    drafts were never handed to the gate until the next rebalance reset the positions. A bounded restore ends
    within milliseconds of its start, while that first fetch is still waiting, which made this likely.
    """
    return None if active is None else set(active)


FastLane = Callable[[list[Any]], Awaitable[None]]
LANE_BATCH = 512
#: A fetch's wait for records of the partitions active as it began (Faust's: 1 s): what a rebalance's new owner
#: may idle after ``Worker ready`` (BENCHMARKS.md run X), not a draft's latency (a record ends the wait at once).
FETCH_TIMEOUT_S = 0.1


class FastLanes:
    """Mixin for Faust's consumer: its fetch loop, with the app's ``fast_lanes`` (topic -> batch handler)."""

    async def _drain_messages(self, fetcher: Any) -> None:
        consumer: Any = self
        lanes: Mapping[str, FastLane] = getattr(consumer.app, "fast_lanes", None) or {}
        if not lanes:
            await super()._drain_messages(fetcher)  # type: ignore[misc]
            return
        try:
            while not private.fetch_loop_stopped(consumer, fetcher):
                await drain_once(consumer, lanes)
                await report_skipped(consumer)
                await asyncio.sleep(0)
        except (*consumer.consumer_stopped_errors, asyncio.CancelledError):
            if not consumer.transport.app.should_stop:
                raise

    async def perform_seek(self) -> None:
        """Faust's seek of every partition to its committed offset (after each rebalance), and a line saying
        where each fast-lane partition resumes: the place to look when records are read twice or not at all."""
        await super().perform_seek()  # type: ignore[misc]
        consumer: Any = self
        lanes = getattr(consumer.app, "fast_lanes", None) or {}
        tps = sorted(tp for tp in consumer.assignment() if tp.topic in lanes)
        if tps:
            log.info("fast lanes resume at the committed offsets: %s", ", ".join(
                f"{tp.topic}[{tp.partition}] {private.read_offset(consumer, tp)}" for tp in tps))  # fmt: skip


async def drain_once(consumer: Any, lanes: Mapping[str, FastLane]) -> None:
    """One fetch: records of fast-lane topics are tracked and handed over in batches (at most
    :data:`LANE_BATCH`); every other record takes Faust's usual route to its streams."""
    if not private.active_partitions(consumer):  # paused by a rebalance: Faust's getmany would sleep for 1 s
        await asyncio.sleep(FETCH_TIMEOUT_S)
        return
    batches: dict[str, list[Any]] = {}
    generation: int | None = None  # read at the first record: getmany may first wait out a whole rebalance
    async for tp, message in consumer.getmany(timeout=FETCH_TIMEOUT_S):
        if generation is None:
            generation = consumer.app.consumer_generation_id  # Faust's own for this fetch (it checks each record)
        read = private.read_offset(consumer, tp)
        if read is None and consumer.app.topics.acks_enabled_for(tp.topic):
            _start_commits(consumer, tp, message.offset)
        if read is not None and message.offset < read:
            continue  # already seen before a seek
        if (
            read is not None
            and consumer.app.topics.acks_enabled_for(tp.topic)
            and await passed_over(consumer, tp, read, message.offset)
        ):
            continue  # read again from the first record passed over
        private.set_read_offset(consumer, tp, message.offset)
        lane = lanes.get(tp.topic)
        if lane is None:
            await consumer.wait_first(consumer.callback(message), consumer.suspend_flow.wait())
            continue
        consumer.track_message(message)
        batch = batches.setdefault(tp.topic, [])
        batch.append(message)
        if len(batch) >= LANE_BATCH:
            await _hand_over(consumer, lanes[tp.topic], batches.pop(tp.topic), generation)
    for topic, batch in batches.items():
        await _hand_over(consumer, lanes[topic], batch, generation)


async def passed_over(consumer: Any, tp: TP, read: int, offset: int) -> bool:
    """True when the record at ``offset`` must wait: records between the last one read (``read``) and it were
    fetched and never handed here, so the partition is sought back to the first of them and read again.

    Faust's ``getmany`` drops records it has already taken from aiokafka (whose position then lies past them)
    when a rebalance or a recovery changes the generation, the flow or the active partitions while it hands
    them out; a seek back to the committed offsets undoes that only when it comes later. Those offsets used to
    be declared a gap, which let commits pass drafts no worker ever decided (BENCHMARKS.md, run J: 120 drafts
    of one partition, sent while the group re-formed). Offsets that truly never come (a batch the fetcher
    skipped as undecodable, compaction, transaction markers) show again after the seek back: then they are a
    gap, and commits may pass them."""
    refetch: dict[TP, tuple[int, int, int]] = consumer.__dict__.setdefault("_drift_refetch", {})
    generation = consumer.app.consumer_generation_id
    if (pending := refetch.pop(tp, None)) is not None and pending[2] == generation:
        first, target, _ = pending
        if offset > target:
            refetch[tp] = pending
            return True  # a record of the fetch from before the seek back
        if offset == target:  # the same offsets are missing again: they never come
            await _gap(consumer, tp, first, target)
            return False
        if offset == first:
            return False
    # no seek back pending (or another seek or a rebalance since): the usual check
    if offset - read <= 1:
        return False
    if _skipped(consumer, tp, read + 1):
        await _gap(consumer, tp, read + 1, offset)
        return False
    log.warning("%s[%d]: offsets %d..%d were fetched and not handed over; reading them again", tp.topic,
                tp.partition, read + 1, offset - 1)  # fmt: skip
    refetch[tp] = (read + 1, offset, generation)
    await consumer.seek(tp, read + 1)
    return True


async def _gap(consumer: Any, tp: TP, first: int, target: int) -> None:
    log.warning("%s[%d]: offsets %d..%d never came before %d; commits may pass them", tp.topic, tp.partition,
                first, target - 1, target)  # fmt: skip
    await private.add_gap(consumer, tp, first, target - 1)


def _skipped(consumer: Any, tp: TP, offset: int) -> bool:
    """The fetcher skipped ``offset`` of ``tp`` as undecodable (its dead letter is pending)."""
    skipped = getattr(private.consumer_thread(consumer), "skipped", None) or ()
    return any((b.topic, b.partition) == (tp.topic, tp.partition) and b.first <= offset <= b.last for b in skipped)


def _start_commits(consumer: Any, tp: TP, offset: int) -> None:
    """Nothing read on ``tp`` since the assignment: where nothing was committed either, its commits start at this
    first record (a line says so: offsets before it are never read here)."""
    if private.committed_offset(consumer, tp) is None:
        log.info("%s[%d]: nothing committed; commits start at offset %d, the first record read", tp.topic,
                 tp.partition, offset)  # fmt: skip
    private.start_commits_at(consumer, tp, offset)


async def _hand_over(consumer: Any, lane: FastLane, batch: list[Any], generation: int | None) -> None:
    """Run the lane's handler, unless a rebalance began since the fetch: then the records are released and
    fetched again from the committed offsets (:func:`fetch_again`).

    A lane with a ``wait_ready`` coroutine (the gate: its agent configurations) is awaited first; the fetch
    loop waits with it, and the generation is checked after the wait."""
    wait_ready = getattr(lane, "wait_ready", None)
    if wait_ready is not None:
        await wait_ready()
    if consumer.flow_active and consumer.app.consumer_generation_id == generation:
        await lane(batch)
        return
    for message in batch:
        private.release(consumer, message)
    await fetch_again(consumer, batch)


async def fetch_again(consumer: Any, released: list[Any]) -> None:
    """Make sure records released after a rebalance are fetched again from the committed offsets.

    While the flow is stopped the rebalance is under way, and its recovery ends with a seek of every stream
    partition to its committed offset: nothing to do. Once the flow runs again that seek has come and gone —
    the batch waited out the whole rebalance (a slow lane, the gate's configurations) — and the fetch moved
    the position past the released records, so each partition still assigned here is sought back to its
    committed offset. Without it those records were never read again until the next rebalance, and commits
    of later records could pass them."""
    if not consumer.flow_active:
        return
    assigned = consumer.assignment()
    firsts: dict[TP, int] = {}
    for message in released:
        firsts.setdefault(message.tp, message.offset)
    for tp, first in firsts.items():
        if tp not in assigned:
            continue
        committed = private.committed_offset(consumer, tp)
        target = first if committed is None else min(first, committed)
        log.warning("%s[%d]: records from offset %d were released after a rebalance; reading them again from %d",
                    tp.topic, tp.partition, first, target)  # fmt: skip
        try:
            await consumer.seek(tp, target)
        except IllegalStateError:  # revoked meanwhile: its next owner reads from the committed offset
            log.info("%s[%d] was revoked before the seek back", tp.topic, tp.partition)


async def report_skipped(consumer: Any) -> None:
    """Dead-letter the batches the fetcher skipped (see :mod:`streams.runtime.undecodable`), then let offset commits
    pass them: the dead letter is on the broker before the offsets it stands for can be committed."""
    skipped: collections.deque[SkippedBatch] | None = getattr(private.consumer_thread(consumer), "skipped", None)
    letter = getattr(consumer.app, "skipped", None)  # DriftApp's dead-letter path of skipped batches
    while skipped and letter is not None:
        batch = skipped[0]
        try:
            await letter(batch.topic, batch.partition, batch.first, batch.last, batch.reason)
        except Exception:  # the broker is away: try again after the next fetch
            log.exception("dead letter for %s[%d] %d..%d not sent yet", batch.topic, batch.partition,
                          batch.first, batch.last)  # fmt: skip
            return
        skipped.popleft()
        tp = TP(batch.topic, batch.partition)
        read = private.read_offset(consumer, tp)
        if read is None or read < batch.last:
            private.set_read_offset(consumer, tp, batch.last)
        if consumer.app.topics.acks_enabled_for(batch.topic):
            await private.add_gap(consumer, tp, batch.first, batch.last)
