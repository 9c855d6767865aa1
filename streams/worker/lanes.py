"""The worker's two hot topics as fast lanes (see :mod:`streams.runtime.transport`): drafts into the gate, committed
messages into the gate's state. Handlers get batches of Faust messages, never raise for bad input (it is
dead-lettered) and ack every record on Faust's consumer once its effects are durable.

Each lane receives the narrow ports it uses (see :mod:`streams.services.context`): the gate's dependencies, the
consumer it acks on, a factory of output batches, the dead-letter path; never the worker as a whole.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from aiokafka.errors import KafkaError
from faust.events import Event

from engine.errors import PayloadError
from streams.runtime import faust_private
from streams.runtime.dispatch import KeyedDispatcher
from streams.runtime.history import record_key
from streams.runtime.output import OutputBatch, all_delivered
from streams.services.context import DeadLetter
from streams.services.gate import (
    GateDeps,
    Sender,
    TableWrites,
    earlier_attempts_restoring,
    process_draft,
    remember_commit,
)
from streams.wire.payloads import Draft, EvaluationRequest, Message, decode, encode

log = logging.getLogger(__name__)
Keyed = TypeVar("Keyed", Draft, Message)
#: (message, draft, received, the chain link that was last when the draft was queued, if any)
Item = tuple[Any, Draft, float, "asyncio.Future[None] | None"]


def keyed(record: Any, model: type[Keyed]) -> Keyed:
    """Decode ``record`` as ``model``; its key must be the payload's agent id (per-agent ordering)."""
    payload = decode(model, record.value)
    key = record_key(record.key)
    if key != payload.agent_id:
        raise PayloadError(f"record key {key!r} must equal agent_id {payload.agent_id!r}")
    return payload


class LaneConsumer(Protocol):
    """Faust's consumer as the lanes use it."""

    def ack(self, message: Any) -> None:
        """The message is handled: its offset may be committed."""

    def release(self, message: Any) -> None:
        """Forget a fetched message that is not handled here (its partition was revoked)."""


class GateLane:
    """Drafts: decode, dead-letter bad input, decide per agent in order, ack after the records are delivered.

    A draft that needs no judge call (gate off, or similarity only) for an agent with nothing queued is decided
    inline, with no task: the batch's records go out as whole Kafka batches (:class:`OutputBatch`) with one
    changelog record per key, and one countdown acks them all. Every other draft goes to its agent's queue in
    the :class:`KeyedDispatcher`, so a slow judge call never holds up other agents.

    The inline drafts' verdict records are shipped at once, but their outputs wait for the broker to have them
    (a verdict never goes out without its record). That wait is not the lane's: each batch's rest — await its
    verdict records, flush its table writes, ship its outputs, ack — is a link of a chain (:meth:`_finish`),
    started after the previous batch's link, while the lane decides the next batch. Links run in batch order,
    so per-key order holds across batches; a judged draft waits for the link last when it was queued (its
    records then follow the inline ones of its agent); a revocation waits for the chain to run out.

    A judged draft's records go out as single sends through the producer's accumulator (its verdict record
    first, acknowledged, then its outputs and table writes), so the records of many judged drafts share one
    Kafka batch per partition and broker round trip. A Kafka batch of its own per judged draft queued one batch
    per draft behind each partition's one in-flight request: under load that queue outgrew aiokafka's wait and
    drafts were left unanswered (docs/known-issues.md, "Judged drafts left unanswered under load").
    """

    def __init__(
        self, gate: GateDeps, consumer: LaneConsumer, batch: Callable[[], OutputBatch], dead_letter: DeadLetter
    ) -> None:
        self.gate = gate
        self.consumer = consumer
        self.batch = batch  # a new output batch (streams.runtime.output.Output.batch)
        self.dead_letter = dead_letter
        self.dispatcher: KeyedDispatcher[Item] = KeyedDispatcher(self._handle)
        self._batches = 0  # lane batches being handled
        self._no_batch = asyncio.Event()
        self._no_batch.set()
        self._tail: asyncio.Future[None] | None = None  # the last link of the chain of batch flushes

    async def on_revoked(self, revoked: set[Any]) -> None:
        """Partitions are taken away (a rebalance): give up their drafts that have not started — they are not
        acked, so the next owner fetches them again — and wait for the ones being judged, whose verdict records
        are then on the broker before the next owner restores the table. So no draft is judged by two workers.
        """

        def unwanted(item: Item) -> bool:
            return bool(item[0].tp in revoked)

        withdrawn = await self.dispatcher.withdraw(unwanted)  # frees slots a batch's submit may be waiting for
        await self._no_batch.wait()  # a batch fetched before the rebalance may still be submitting
        await self.flushed()  # and the verdict records of the batches decided so far are on the broker
        withdrawn += await self.dispatcher.withdraw(unwanted)
        for message, *_ in withdrawn:
            self.consumer.release(message)
        if withdrawn:
            log.info("rebalance: %d queued draft(s) of revoked partitions left to their next owner", len(withdrawn))

    def ack(self, message: Any) -> None:
        self.consumer.ack(message)

    async def flushed(self) -> None:
        """Wait until every link of the chain of batch flushes started so far has run (whatever its outcome)."""
        while (tail := self._tail) is not None:
            await asyncio.wait([tail])
            if self._tail is tail:
                self._tail = None

    async def wait_ready(self) -> None:
        """No draft is decided before the stored agent configurations are loaded (see
        :mod:`streams.services.configs`)."""
        await self.gate.configs.wait_loaded()

    async def _judge(self, item: Item, batch: OutputBatch | None = None) -> list[asyncio.Future[Any]] | None:
        """The draft's delivery futures; None when it failed and was dead-lettered (and acked). In a ``batch``,
        its records and table writes wait for the batch's flush (and its verdict record for the caller's)."""
        message, draft, received, _ = item
        try:
            if batch is None:
                return await process_draft(self.gate, draft, received, partition=message.partition)
            return await process_draft(
                self.gate, draft, received, partition=message.partition, flush=False, send=batch.send
            )
        except KafkaError:  # the broker refused a record or the output is closing (a stop): not the draft's fault
            raise
        except Exception as exc:
            log.exception("draft %s failed", draft.draft_id)
            await self.dead_letter(message, f"internal error while judging: {exc}")
            self.ack(message)
            return None

    async def _handle(self, item: Item) -> None:
        if (before := item[3]) is not None:  # the agent's inline drafts of earlier batches send their records first
            await asyncio.wait([before])  # that link only: later ones hold no draft of this agent (queued here)
        try:
            deliveries = await self._judge(item)  # single sends (see the class docstring)
        except KafkaError as exc:  # neither dead-lettered nor acked: fetched again after a restart or rebalance
            log.warning("draft %s: its records were not sent (%r); it stays unacked", item[1].draft_id, exc)
            return
        if deliveries is not None:
            ack_when_delivered(self.ack, [item[0]], deliveries)

    def _queued(self, draft: Draft, partition: int) -> bool:
        """Does ``draft`` go to its agent's queue rather than inline: the agent has drafts queued, needs the
        judge, or this is a later attempt whose earlier ones are still being restored (it waits, not the lane)."""
        if self.dispatcher.busy(draft.agent_id):
            return True
        if self.gate.configs.get(draft.agent_id, draft.agent_name).needs_judge:
            return True
        return draft.attempt > 1 and earlier_attempts_restoring(self.gate.pending, partition)

    async def _decode(self, message: Any) -> Draft | None:
        try:
            return keyed(message, Draft)
        except PayloadError as exc:
            await self.dead_letter(message, str(exc))
            self.ack(message)
            return None

    async def __call__(self, messages: list[Any]) -> None:
        self._batches += 1  # counted at once: a revocation waits for this batch from now on
        self._no_batch.clear()
        try:
            await self.wait_ready()  # the transport awaits it before the hand-over too; this guards direct callers
            await self._batch(messages)
        finally:
            self._batches -= 1
            if not self._batches:
                self._no_batch.set()

    async def _batch(self, messages: list[Any]) -> None:
        received = time.monotonic()
        inline: list[Any] = []
        deliveries: set[asyncio.Future[Any]] = set()  # one future per Kafka batch, shared by its records
        written: set[str] = set()
        decided: list[str] = []  # draft ids, whose verdict records go out before their verdicts
        batch = self.batch()
        configs = self.gate.configs
        drafts = [(message, draft) for message in messages if (draft := await self._decode(message)) is not None]
        if drafts:  # agents not in memory (new, or back after eviction): their stored configurations, one query
            await configs.ensure({draft.agent_id for _, draft in drafts})
        try:
            for message, draft in drafts:
                item = (message, draft, received, self._tail)
                if self._queued(draft, message.partition):
                    await self.dispatcher.submit(draft.agent_id, item)
                elif (sent := await self._judge(item, batch)) is not None:
                    inline.append(message)
                    deliveries.update(sent)
                    written.update((draft.agent_id, draft.draft_id))
                    decided.append(draft.draft_id)
            if not inline:
                return
            records = self.batch()  # the verdict records, shipped now and acknowledged before the verdicts
            shipped = await self.gate.ship_verdicts(decided, records.send, records.flush)
        except Exception:  # the broker refused or timed out: nothing is acked, nothing is lost
            log.exception("the records of %d draft(s) were not sent; they stay unacked and come back after a "
                          "restart or rebalance", len(inline))  # fmt: skip
            return
        self._tail = asyncio.ensure_future(self._finish(self._tail, shipped, written, batch, inline, deliveries))

    async def _finish(
        self,
        previous: asyncio.Future[None] | None,
        shipped: list[asyncio.Future[Any]],
        written: set[str],
        batch: OutputBatch,
        inline: list[Any],
        deliveries: set[asyncio.Future[Any]],
    ) -> None:
        """One batch's link of the chain: after the previous link, once its verdict records are on the broker,
        flush its table writes and ship its outputs; ack its drafts once all of it is delivered."""
        if previous is not None:
            await asyncio.wait([previous])
        try:
            await all_delivered(shipped)
            deliveries.update(await self.gate.flush_tables(written, batch.send))
            await batch.flush()
        except Exception:  # the broker refused or timed out: nothing is acked, nothing is lost
            log.exception("the records of %d draft(s) were not sent; they stay unacked and come back after a "
                          "restart or rebalance", len(inline))  # fmt: skip
            return
        ack_when_delivered(self.ack, inline, list(deliveries))


def ack_when_delivered(ack: Callable[[Any], Any], messages: list[Any], deliveries: list[asyncio.Future[Any]]) -> None:
    """At-least-once: ack the messages only once every record they caused is on the broker (a countdown on the
    delivery futures: lighter than a gather for the hundreds of records of a batch)."""
    left = [len(deliveries), False]  # futures still pending, a failure seen

    def settled(delivery: asyncio.Future[Any]) -> None:
        if delivery.cancelled() or delivery.exception() is not None:
            if not left[1]:
                log.error("records of %d draft(s) were not delivered; they will be redelivered", len(messages))
            left[1] = True
        left[0] -= 1
        if left[0] == 0 and not left[1]:
            for message in messages:
                ack(message)

    for delivery in deliveries:
        delivery.add_done_callback(settled)
    if not deliveries:
        for message in messages:
            ack(message)


COUNT_FLUSH_S = 0.2


def bind_record(app: Any, record: Any) -> Event:
    """Make ``record`` Faust's current event of ``app``: Faust's own table writes (the windowed counts) take
    their changelog partition from it. Faust holds the event weakly: keep the returned event while writing."""
    event = Event(app, record.key, record.value, record.headers, record)
    faust_private.set_current_event(event)
    return event


class StateLane:
    """Committed messages: external actions enter the recent-messages table; actions are counted per agent in a
    windowed Faust table, and crossing the threshold requests an offline evaluation.

    Counts are added to the table at most every :data:`COUNT_FLUSH_S` (one write per agent instead of one per
    batch: a windowed write is costly in Faust), and the messages are acked only after their counts are in:
    an evaluation request may come up to that much later, never lost.

    ``counts`` is the windowed table, ``bind`` makes a record the current event of its writes
    (:func:`bind_record`), ``requests`` the ``evaluation-requests`` topic, ``threshold`` the actions per window
    that request an evaluation.
    """

    def __init__(
        self,
        gate: GateDeps,
        counts: Any,
        consumer: LaneConsumer,
        dead_letter: DeadLetter,
        send: Sender,
        *,
        bind: Callable[[Any], Any],
        requests: str,
        threshold: int,
    ) -> None:
        self.gate = gate
        self.counts = counts
        self.consumer = consumer
        self.dead_letter = dead_letter
        self.send = send
        self.bind = bind
        self.requests = requests
        self.threshold = threshold
        self._added: dict[str, tuple[Any, int, Message]] = {}  # agent -> (last record, actions, last message)
        self._unacked: list[Any] = []
        self._flushed_at = time.monotonic()

    async def __call__(self, messages: list[Any]) -> None:
        per_agent = await self._absorb(messages)
        try:  # external actions entered the recent table: their changelog records first
            await all_delivered(await self.gate.flush_tables())
        except Exception:  # not counted, not acked: they come back after a restart or rebalance
            log.exception("recent-messages changelog not written; %d message(s) stay unacked", len(messages))
            return
        for agent_id, (record, added, last) in per_agent.items():
            _, before, _ = self._added.get(agent_id, (None, 0, None))
            self._added[agent_id] = (record, before + added, last)
        self._unacked.extend(messages)
        if self.due():
            await self.flush_counts()

    def due(self) -> bool:
        """Messages are waiting and the last flush is at least :data:`COUNT_FLUSH_S` old."""
        return bool(self._unacked) and time.monotonic() - self._flushed_at >= COUNT_FLUSH_S

    async def flush_counts(self) -> None:
        """Add the counted actions to the windowed table, request evaluations, ack the messages."""
        added, self._added = self._added, {}
        unacked, self._unacked = self._unacked, []
        self._flushed_at = time.monotonic()
        for record, count, last in added.values():
            await self._count(record, count, last)
        for message in unacked:
            self.consumer.ack(message)

    async def _count(self, record: Any, added: int, last: Message) -> None:
        event = self.bind(record)  # Faust's table writes follow this record's partition (while event lives)
        before = self.counts[last.agent_id].current()
        self.counts[last.agent_id] += added
        del event
        if before < self.threshold <= before + added:
            await self.request_evaluation(last)

    async def _absorb(self, records: list[Any]) -> dict[str, tuple[Any, int, Message]]:
        """Validate a batch of committed messages, remember external actions, count actions per agent."""
        per_agent: dict[str, tuple[Any, int, Message]] = {}
        for record in records:
            try:
                message = keyed(record, Message)
            except PayloadError as exc:
                await self.dead_letter(record, str(exc))
                continue
            self.gate.configs.note_agent(message.agent_id, message.agent_name)
            if message.kind != "action":
                continue
            if message.origin != "gate":
                recent = TableWrites(self.gate, record.partition).recent  # the changelog partition of this record
                remember_commit(recent, message.agent_id, message.message_id, message.text, message.channel)
            _, seen, _ = per_agent.get(message.agent_id, (None, 0, message))
            per_agent[message.agent_id] = (record, seen + 1, message)
        return per_agent

    async def request_evaluation(self, message: Message) -> None:
        digest = hashlib.sha256(f"{message.agent_id}\0{message.message_id}".encode()).hexdigest()[:32]
        request = EvaluationRequest(
            request_id="threshold-" + digest,
            agent_id=message.agent_id,
            reason="threshold",
            message_count=self.threshold,
        )
        await self.send(self.requests, message.agent_id.encode(), encode(request))
