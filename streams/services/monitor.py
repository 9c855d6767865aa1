"""The drift monitor's consumer: scores in, anytime-valid alerts out, beside the verdict path.

It reads the gate's ``correction-logs`` (first attempts only: a retry's score was selected by the gate) and
the ``evaluations`` summaries, as two separate streams per (agent, dimension), through a plain aiokafka
consumer group of its own (``<app id>-monitor``): nothing the gate waits for. Each batch is applied in one
PostgreSQL transaction (:mod:`streams.store.monitor`) — the detectors' states, the offsets consumed and the
alerts raised together — and a new partition owner resumes from the stored offsets, so a restart or a
rebalance neither loses nor double-counts an observation: an alert comes at the same observation as it would
without the restart. The worker keeps no per-agent monitor state in memory between batches (the states live
in PostgreSQL), so the monitor adds nothing to what idle eviction has to drop.

Alerts go to the ``alerts`` topic before the transaction commits (a crash in between re-sends the same
deterministic alert id, which the alert table ignores), then to the optional webhook.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener

from engine.errors import PayloadError
from engine.models import Dimension
from engine.monitor.attribution import AttributionPolicy, Cause, cause_of
from engine.monitor.policy import alert_id
from engine.monitor.stream import (
    Source,
    StreamPolicy,
    StreamState,
    acknowledged,
    from_json,
    observe,
    opened,
    to_json,
)
from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.beside import BesideGroups
from streams.runtime.fetchwait import kafka_consumer
from streams.services.gate import Sender
from streams.store import Store
from streams.store.monitor import MonitorBatch, StreamKey
from streams.wire.kafka import start_with_retry
from streams.wire.payloads import Alert, CorrectionLog, EvaluationSummary, decode, encode
from streams.wire.topics import Topics, app_id

log = logging.getLogger(__name__)
BATCH = 500
#: Dimensions on the 0–9 scale (ideas_quantity is a count: not monitored).
MONITORED = frozenset(d.value for d in Dimension if d is not Dimension.IDEAS_QUANTITY)

Policies = Callable[[str, str], Awaitable[StreamPolicy | None]]  # (agent, dimension) -> policy, None: off


@dataclass(frozen=True, slots=True)
class Observation:
    """One score of one stream, with where it was read (for the stored offsets)."""

    agent_id: str
    dimension: str
    source: Source
    score: float
    at: datetime
    topic: str
    partition: int
    offset: int
    record: str = ""  # the applied record (draft:<id> / run:<id>): a redelivered copy is not observed again

    @property
    def key(self) -> StreamKey:
        return (self.agent_id, self.dimension, self.source.value)


def observations(topic: str, partition: int, offset: int, value: bytes | None, logs_topic: str) -> list[Observation]:
    """The monitored scores in one record (none for a retry, a skip, a failed run or an unreadable record)."""
    try:
        if topic == logs_topic:
            if not _may_hold_scores(value):
                return []
            entry = decode(CorrectionLog, value)
            if entry.attempt_number != 1:
                return []
            scores = {d: s.get("score") for d, s in entry.dimension_scores.items() if not s.get("error")}
            agent, at, source, record = entry.agent_id, entry.created_at, Source.GATE, f"draft:{entry.draft_id}"
        else:
            run = decode(EvaluationSummary, value)
            if run.status != "completed":
                return []
            scores, agent, at, source = dict(run.dimensions), run.agent_id, run.completed_at, Source.EVALUATION
            record = f"run:{run.evaluation_run_id}"
    except PayloadError as exc:  # the sinks dead-letter it; the monitor only skips it
        log.debug("monitor: skipped an unreadable record of %s: %s", topic, exc)
        return []
    return [
        Observation(agent, d, source, float(s), at, topic, partition, offset, record)
        for d, s in sorted(scores.items())
        if d in MONITORED and isinstance(s, int | float)
    ]


def _may_hold_scores(value: bytes | None) -> bool:
    """False for a correction log the monitor would skip whatever else it holds: a later attempt, or no score of
    a monitored dimension (similarity only). Read with orjson, so that the full validation is spent on the logs
    the monitor uses: at the algorithmic gate's throughput, validating every log cost about a twentieth of the
    worker's event loop. Anything unexpected is left to the validation (True)."""
    try:
        raw = orjson.loads(value or b"")
    except orjson.JSONDecodeError:
        return True
    if not isinstance(raw, dict) or not isinstance(scores := raw.get("dimension_scores", {}), dict):
        return True
    return raw.get("attempt_number") in (1, None) and any(d in MONITORED for d in scores)


def monitor_group(settings: Settings) -> str:
    return f"{app_id(settings)}-monitor"


class MonitorService:
    """Apply batches of observations and publish the alerts they raise."""

    def __init__(
        self,
        settings: Settings,
        store: Callable[[], Awaitable[Store]],
        policies: Policies,
        send: Sender,
        on_alert: Callable[[Alert], None] = lambda alert: None,
    ) -> None:
        self.settings, self.store, self.policies, self.send, self.on_alert = settings, store, policies, send, on_alert
        self.topics = Topics(settings.topic_prefix)
        self.group = monitor_group(settings)
        self.attribution = AttributionPolicy(settings.monitor_guard_s, settings.monitor_cast_share)

    async def apply(self, found: Sequence[Observation]) -> list[Alert]:
        """Apply ``found`` in one transaction; the alerts raised (and revised), already on the broker."""
        store = await self.store()
        async with store.pool.acquire() as conn, conn.transaction():
            batch = MonitorBatch(conn, self.group)
            fresh, offsets = await _unapplied(batch, found)
            stored = await batch.streams(sorted({o.key for o in fresh}))
            states: dict[StreamKey, StreamState] = {}
            policies: dict[tuple[str, str], StreamPolicy | None] = {}
            alerts: list[Alert] = []
            for o in fresh:
                if (o.agent_id, o.dimension) not in policies:
                    policies[o.agent_id, o.dimension] = await self.policies(o.agent_id, o.dimension)
                policy = policies[o.agent_id, o.dimension]
                if policy is None:
                    continue
                state = states.get(o.key) or _loaded(stored.get(o.key), policy)
                states[o.key] = await self._observe(batch, o, policy, state, alerts)
            await batch.write({k: to_json(s) for k, s in states.items()}, offsets, [])
            for alert in alerts:
                await (await self.send(self.topics.alerts, alert.agent_id.encode(), encode(alert)))
        for alert in alerts:
            self.on_alert(alert)
        return alerts

    async def _observe(
        self, batch: MonitorBatch, o: Observation, policy: StreamPolicy, state: StreamState, alerts: list[Alert]
    ) -> StreamState:
        seen = observe(policy, state, o.score)
        if not seen.fired:
            return seen.state
        assert seen.state.reference is not None
        since = o.at - timedelta(seconds=self.attribution.guard_s)
        anchor_at, agents, cast, anchors = await batch.attribution_inputs(o.dimension, since, o.agent_id)
        anchor_s = None if anchor_at is None else anchor_at.timestamp()
        cause = cause_of(self.attribution, o.at.timestamp(), anchors, anchor_s, agents, max(cast, agents))
        if o.source is Source.ANCHOR:  # the judge moved on items that did not
            cause = Cause.JUDGE
        alert = build_alert(self.group, o, policy, seen.state, cause)
        if cause is Cause.JUDGE:
            alerts.extend(revised_alert(r) for r in await batch.revise(o.dimension, since))
        await batch.write({}, {}, [_row(alert)])
        alerts.append(alert)
        return opened(seen.state, alert.alert_id)


async def _unapplied(
    batch: MonitorBatch, found: Sequence[Observation]
) -> tuple[list[Observation], dict[tuple[str, int], int]]:
    """The observations not yet applied (by the stored offsets), and the offsets after this batch."""
    by_topic: dict[str, set[int]] = {}
    for o in found:
        if o.topic:  # an anchor re-score is read from no topic
            by_topic.setdefault(o.topic, set()).add(o.partition)
    stored = {(t, p): off for t, ps in by_topic.items() for p, off in (await batch.offsets(t, ps)).items()}
    fresh = [o for o in found if not o.topic or o.offset >= stored.get((o.topic, o.partition), 0)]
    new = await batch.first_sight(sorted({o.record for o in fresh if o.record}))
    once: set[tuple[str, str]] = set()  # two copies of one record in one batch: the first counts
    fresh = [o for o in fresh if not o.record or (o.record in new and not _again(once, (o.record, o.dimension)))]
    after: dict[tuple[str, int], int] = {}
    for o in found:
        if not o.topic:
            continue
        where = (o.topic, o.partition)
        after[where] = max(after.get(where, stored.get(where, 0)), o.offset + 1)
    return fresh, after


def _again(seen: set[tuple[str, str]], key: tuple[str, str]) -> bool:
    if key in seen:
        return True
    seen.add(key)
    return False


def _loaded(stored: Any, policy: StreamPolicy) -> StreamState:
    if stored is None:
        return StreamState.start(policy)
    state = from_json(stored.state)
    if stored.acknowledged and state.open_alert is not None:
        return acknowledged(state)
    return state


def build_alert(scope: str, o: Observation, policy: StreamPolicy, state: StreamState, cause: Cause) -> Alert:
    assert state.reference is not None
    return Alert(
        alert_id=alert_id(scope, o.agent_id, o.dimension, o.source, state.observations),
        agent_id=o.agent_id,
        dimension=o.dimension,
        source=o.source.value,
        cause=cause.value,
        direction=state.detector.direction,
        reference=state.reference,
        recent_mean=state.recent,
        evidence=state.detector.evidence,
        alpha=policy.alpha,
        min_shift=policy.min_shift,
        observation=state.observations,
        created_at=o.at,
    )


def revised_alert(row: dict[str, Any]) -> Alert:
    """An alert re-published with its revised cause (``revised: true``)."""
    fields = {k: v for k, v in row.items() if k not in {"id", "acknowledged_at"}}
    return Alert(alert_id=row["id"], revised=True, **fields)


def _row(alert: Alert) -> dict[str, Any]:
    data = alert.model_dump()
    data["id"] = data.pop("alert_id")
    return data


class OffsetOwner(Protocol):
    """A consumer group that stores its offsets in PostgreSQL (``monitor_offsets``): the monitor, the shadows."""

    group: str
    store: Callable[[], Awaitable[Store]]


class SeekStored(ConsumerRebalanceListener):  # type: ignore[misc]
    """On assignment, start every partition at the offset the stored states reflect.

    aiokafka logs a listener's exception and goes on consuming from the group's committed offsets (none here:
    the offsets live in PostgreSQL), so a failed read of the stored offsets (the database away) would start
    the partitions from the beginning. Instead the assigned partitions are paused and :meth:`check`, called
    by the consumer loop, raises the failure: the job restarts and seeks again."""

    def __init__(self, consumer: AIOKafkaConsumer, service: OffsetOwner) -> None:
        self.consumer, self.service = consumer, service
        self.failed: Exception | None = None

    async def on_partitions_revoked(self, revoked: Any) -> None:
        return None

    async def on_partitions_assigned(self, assigned: Any) -> None:
        try:
            store = await self.service.store()
            for topic in {tp.topic for tp in assigned}:
                stored = await store.stored_offsets(self.service.group, topic)
                for tp in assigned:
                    if tp.topic == topic:
                        await self._seek(tp, stored.get(tp.partition))
        except Exception as exc:  # raised from the consumer loop by check()
            self.consumer.pause(*assigned)
            self.failed = exc

    def check(self) -> None:
        """Raise the failure of the last assignment's seek, if it failed."""
        if self.failed is not None:
            raise self.failed

    async def _seek(self, tp: Any, offset: int | None) -> None:
        if offset is None:
            await self.consumer.seek_to_beginning(tp)  # a coroutine in aiokafka
        else:
            self.consumer.seek(tp, offset)


async def consume_from_stored(settings: Settings, owner: OffsetOwner, topics: list[str], batch: int,
                              handle: Callable[[list[Any]], Awaitable[None]],
                              groups: BesideGroups | None = None) -> None:  # fmt: skip
    """Consume ``topics`` in ``owner``'s group, each partition from its offset stored in PostgreSQL
    (:class:`SeekStored`), handing every non-empty fetch (aiokafka records) to ``handle`` until cancelled: the
    loop of the monitor and of the shadow lane (in a worker, the consumer joins its ``groups``)."""
    consumer = kafka_consumer(settings, group_id=owner.group, enable_auto_commit=False,
                                auto_offset_reset="earliest", max_poll_records=batch, session_timeout_ms=6000,
                                heartbeat_interval_ms=1000,
                                fetch_max_wait_ms=settings.beside_fetch_max_wait_ms)  # fmt: skip
    try:
        await start_with_retry(consumer, settings.broker, max(30.0, settings.connect_timeout_s))
        if not settings.group_leader_leaves:
            faust_private.group_leader_stays(consumer)
        if groups is not None:
            groups.add(consumer)
        listener = SeekStored(consumer, owner)
        consumer.subscribe(topics, listener=listener)
        while True:
            fetched = await consumer.getmany(timeout_ms=500, max_records=batch)
            listener.check()
            if records := [r for batch_records in fetched.values() for r in batch_records]:
                await handle(records)
    finally:
        await consumer.stop()


async def run_monitor(service: MonitorService, groups: BesideGroups | None = None) -> None:
    """Consume scores until cancelled (a worker task)."""
    topics = service.topics

    async def handle(records: list[Any]) -> None:
        found = [o for r in records for o in observations(r.topic, r.partition, r.offset, r.value,
                                                          topics.correction_logs)]  # fmt: skip
        if found:
            await service.apply(found)

    topics_read = [topics.correction_logs, topics.evaluations]
    await consume_from_stored(service.settings, service, topics_read, BATCH, handle, groups)
