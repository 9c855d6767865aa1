"""A per-worker view of recent committed events, fed by a group-less consumer of every ``messages`` partition.

**Why a per-worker view, not a Faust GlobalTable.** Steps are keyed by run id and the gate's
``recent-messages`` table by agent id, so a step's worker may not own its agents' partitions. A
``GlobalTable`` tried on the embedded broker (faust-streaming 0.15.3, Tansu 0.6.0, two workers) had its
changelog created, written and assigned to every worker as standby, yet no worker applied what another
wrote: each saw only its own partitions (the open upstream bug faust-streaming/faust#283). A per-channel
key would also have several writers (each agent's messages arrive on that agent's partition) and lose
updates. So every worker keeps a :class:`HistoryView` fed by a group-less consumer of every ``messages``
partition (:class:`HistoryFeed`), replayed from the beginning at start; the end-offset wait gives
read-your-writes for events published before the step.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from mode import Service

from engine.errors import DriftError, PayloadError
from engine.models import Event, EventKind
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying
from engine.settings import Settings
from engine.stepped_log import Held, SteppedLog, merge_logs
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import start_with_retry
from streams.wire.payloads import Message, decode
from streams.wire.topics import Topics

log = logging.getLogger(__name__)
#: the history feed reconnecting after a failure: 0.5 s doubling to 5 s, jittered
HISTORY_BACKOFF = Backoff(0.5, 5.0)

#: Events kept per agent (its actions, stimuli it received: the intervention window's last_n) and per
#: (run, channel); the least recently written agents and channels beyond MAX_* are forgotten.
AGENT_KEPT, CHANNEL_KEPT, MAX_AGENTS, MAX_CHANNELS = 100, 100, 20_000, 5_000
#: A channel past CHANNEL_KEPT events keeps its first CHANNEL_HEAD (the judge windows' first part: 5 at the
#: gate, 10 for interventions) and forgets the CHANNEL_STEP oldest after them at once (engine/stepped_log.py),
#: so it holds 71 to 90 recent events and what the gate's judge sees grows append-only across the cap.
CHANNEL_HEAD, CHANNEL_STEP = 10, 20

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def record_key(raw: Any) -> str | None:
    """A record key as text (keys are UTF-8 strings on every topic)."""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


@dataclass(frozen=True, slots=True)
class _Stored:
    seq: int
    message_id: str
    run_id: str | None
    event: Event


def event_of(message: Message) -> Event:
    """The engine's view of a committed message (a stimulus names its recipient as ``agent_id``)."""
    name, kind = message.agent_name or message.agent_id, EventKind(message.kind)
    return Event(message.agent_id, name, message.text, kind, message.channel, message.source, message.ts)


def _in_run(stored: _Stored, run_id: str | None) -> bool:
    return stored.run_id is None or stored.run_id == run_id


def lru_touch(buffers: OrderedDict[K, V], key: K, make: Callable[[], V], cap: int) -> V:
    """The buffer for ``key``, created on first use; the least recently used one goes beyond ``cap``."""
    buffer = buffers.get(key)
    if buffer is None:
        buffer = buffers[key] = make()
        if len(buffers) > cap:
            buffers.popitem(last=False)
    else:
        buffers.move_to_end(key)
    return buffer


class _Events(deque[_Stored]):
    """A bounded buffer of events and the time of its newest one (epoch seconds, for idle eviction)."""

    def __init__(self, maxlen: int) -> None:
        super().__init__(maxlen=maxlen)
        self.newest = 0.0

    def stamp(self, at: float) -> None:
        self.newest = max(self.newest, at)


class _ChannelEvents(SteppedLog[_Stored]):
    """A channel's first events and its recent ones, dropped in steps, and the time of its newest event."""

    __slots__ = ("newest",)

    def __init__(self, cap: int, head: int, step: int) -> None:
        super().__init__(cap, head, step)
        self.newest = 0.0

    def stamp(self, at: float) -> None:
        self.newest = max(self.newest, at)


class _AgentEvents(_Events):
    """An agent's bounded recent events plus the set of their message ids, for an O(1) duplicate check."""

    def __init__(self, maxlen: int) -> None:
        super().__init__(maxlen)
        self.ids: set[str] = set()

    def add(self, stored: _Stored) -> None:
        if len(self) == self.maxlen:
            self.ids.discard(self[0].message_id)  # about to be evicted by append
        self.append(stored)
        self.ids.add(stored.message_id)


class HistoryView:
    """Recent committed events in arrival order, per agent and per (run, channel); events without a run id
    belong to every run. A message id seen again for its agent is ignored (at-least-once delivery); a stimulus
    broadcast to several recipients of a channel appears once in the channel's trajectory. A channel keeps at
    most ``channel_kept`` events: its first ``channel_head`` and its recent ones, the oldest of which it forgets
    ``channel_step`` at a time (:meth:`conversation` says where and how many). With ``max_age_s``,
    an event dated (``ts``) more than that long ago is not recorded: a replay of old history (a worker starting)
    does not fill the view with agents the idle eviction would drop anyway."""

    def __init__(
        self, *, agent_kept: int = AGENT_KEPT, channel_kept: int = CHANNEL_KEPT,
        max_agents: int = MAX_AGENTS, max_channels: int = MAX_CHANNELS, max_age_s: float | None = None,
        channel_head: int = CHANNEL_HEAD, channel_step: int = CHANNEL_STEP,
    ) -> None:  # fmt: skip
        self.agent_kept, self.channel_kept = agent_kept, channel_kept
        self.channel_head = min(channel_head, channel_kept - 1)  # (a small view, in tests)
        self.channel_step = max(min(channel_step, channel_kept - self.channel_head), 1)
        self.max_agents, self.max_channels = max_agents, max_channels
        self.max_age_s = max_age_s
        self._agents: OrderedDict[str, _AgentEvents] = OrderedDict()
        self._channels: OrderedDict[tuple[str | None, str], _ChannelEvents] = OrderedDict()
        self._seq = 0

    def apply(self, message: Message) -> bool:
        """Record ``message``; False when it was already recorded."""
        return self.record(message.message_id, message.run_id, event_of(message))

    def record(self, message_id: str, run_id: str | None, event: Event) -> bool:
        """Record one committed event (the gate records its commits at once: read-your-writes on this worker;
        the feed brings the same message again later and it is ignored). False when already recorded or too
        old (see ``max_age_s``)."""
        now = time.time()
        at = min(event.ts.timestamp(), now) if event.ts is not None else now  # a clock ahead counts as now
        if self.max_age_s is not None and at < now - self.max_age_s:
            return False
        own = lru_touch(self._agents, event.agent_id, lambda: _AgentEvents(self.agent_kept), self.max_agents)
        if message_id in own.ids:
            return False
        self._seq += 1
        stored = _Stored(self._seq, message_id, run_id, event)
        own.add(stored)
        own.stamp(at)
        if event.channel is not None:
            key = (run_id, event.channel)
            shared = lru_touch(self._channels, key, self._channel_events, self.max_channels)
            shared.stamp(at)
            if not _broadcast_copy(shared, stored.event):
                shared.append(stored)
        return True

    def knows(self, agent_id: str, message_id: str) -> bool:
        """The agent's recorded events include ``message_id`` (read-only: the view's recency is not touched)."""
        own = self._agents.get(agent_id)
        return own is not None and message_id in own.ids

    def _channel_events(self) -> _ChannelEvents:
        return _ChannelEvents(self.channel_kept, self.channel_head, self.channel_step)

    def drop_idle(self, before: float) -> int:
        """Forget the agents and channels whose newest event is older than ``before`` (epoch seconds; events are
        dated by their ``ts``, so a replay of old messages does not bring idle agents back). Returns how many
        agents were forgotten."""
        agents = [a for a, events in self._agents.items() if events.newest < before]
        for agent_id in agents:
            del self._agents[agent_id]
        for key in [k for k, events in self._channels.items() if events.newest < before]:
            del self._channels[key]
        return len(agents)

    def agents(self) -> set[str]:
        """The agents with events in the view."""
        return set(self._agents)

    def history(self, agent_id: str, run_id: str) -> list[Event]:
        """The agent's own events of ``run_id`` (and of no run), oldest first."""
        return [s.event for s in self._agents.get(agent_id, ()) if _in_run(s, run_id)]

    def trajectory(
        self, run_id: str | None, channel: str | None, agent_ids: Sequence[str], *, exclude: str | None = None
    ) -> list[Event]:
        """The channel's last events in ``run_id`` (and of no run), at most ``channel_kept``: past the first
        forgotten one, those after it (contiguous); without a channel, the agents' direct events. ``exclude``: a
        message id left out (a redelivered draft never sees its own commit)."""
        if channel is None:
            parts = [
                [s for s in self._agents.get(a, ()) if s.event.channel is None and _in_run(s, run_id)]
                for a in dict.fromkeys(agent_ids)
            ]
            merged = [s for s in heapq.merge(*parts, key=lambda s: s.seq) if s.message_id != exclude]
            return [s.event for s in merged[-self.channel_kept :]]
        held = self._channel(run_id, channel, exclude).after_gap()
        return [s.event for s in held[-self.channel_kept :]]

    def conversation(self, run_id: str | None, channel: str, *, exclude: str | None = None) -> Held[Event]:
        """The channel's events in ``run_id`` (and of no run) that the view holds, with the gap of those it
        has forgotten (engine/windows.py windows over the whole conversation with it); ``exclude`` as above."""
        held = self._channel(run_id, channel, exclude)
        return Held(tuple(s.event for s in held.items), held.gap)

    def _channel(self, run_id: str | None, channel: str, exclude: str | None) -> Held[_Stored]:
        keys = dict.fromkeys([(run_id, channel), (None, channel)])  # once when run_id is None
        logs = [log for key in keys if (log := self._channels.get(key)) is not None]
        held = merge_logs(logs, lambda s: s.seq)
        return held.keep(lambda s: s.message_id != exclude) if exclude is not None else held


def _broadcast_copy(buffer: _ChannelEvents, event: Event) -> bool:
    """Whether ``event`` is a stimulus already recorded since the channel's last action (a broadcast)."""
    if event.kind is not EventKind.STIMULUS:
        return False
    for stored in reversed(buffer):
        if stored.event.kind is EventKind.ACTION:
            return False
        if (stored.event.source, stored.event.text) == (event.source, event.text):
            return True
    return False


class HistoryFeed:
    """A group-less consumer of every ``messages`` partition that keeps a :class:`HistoryView` current.

    End offsets are asked for on a second connection: on the reading one the request would queue behind the
    fetch long-poll (about 11 ms per step on the embedded broker instead of 0.4 ms).
    """

    def __init__(self, settings: Settings, view: HistoryView, on_retry: RetryCounter = no_count) -> None:
        self.settings = settings
        self._on_retry = on_retry
        self.topic = Topics(settings.topic_prefix).messages
        self.view = view
        self._offsets: AIOKafkaConsumer | None = None
        self._positions: dict[TopicPartition, int] = {}
        self._started = asyncio.Event()
        self._progress = asyncio.Condition()

    async def run_forever(self) -> None:
        """Follow the topic until cancelled; after a failure, reconnect (the one retry policy, jittered, no
        deadline) and go on where it stopped."""
        policy = RetryPolicy("history_feed", lambda exc: isinstance(exc, KafkaError | OSError | DriftError),
                             HISTORY_BACKOFF, level=logging.WARNING)  # fmt: skip
        while True:  # run() only ends by failing; a run that ends anyway starts again
            await retrying(self.run, policy, self._on_retry)

    async def run(self) -> None:
        """Read the topic from the last applied positions (the beginning at first), then follow it."""
        reader = kafka_consumer(self.settings, enable_auto_commit=False, brisk=True)
        offsets = kafka_consumer(self.settings, enable_auto_commit=False)
        try:
            for client in (reader, offsets):
                await start_with_retry(client, self.settings.broker, 30.0, self._on_retry)
            partitions = await self._partitions(reader)
            reader.assign(partitions)
            fresh = [tp for tp in partitions if tp not in self._positions]
            if fresh:  # (no argument would mean every assigned partition)
                await reader.seek_to_beginning(*fresh)
            for tp in partitions:
                if tp in fresh:
                    self._positions[tp] = await reader.position(tp)
                else:
                    reader.seek(tp, self._positions[tp])
            self._offsets = offsets
            self._started.set()
            await self._follow(reader)
        finally:
            self._started.clear()
            self._offsets = None
            await asyncio.gather(reader.stop(), offsets.stop(), return_exceptions=True)

    async def _follow(self, reader: AIOKafkaConsumer) -> None:
        while True:
            batch = await reader.getmany(timeout_ms=1000, max_records=5000)
            for tp, records in batch.items():
                for record in records:
                    self._apply(record.key, record.value)
                self._positions[tp] = records[-1].offset + 1
            async with self._progress:
                self._progress.notify_all()

    async def _partitions(self, consumer: AIOKafkaConsumer) -> list[TopicPartition]:
        while True:
            found = consumer.partitions_for_topic(self.topic) or (
                self.topic in await consumer.topics() and consumer.partitions_for_topic(self.topic)
            )
            if found:
                return [TopicPartition(self.topic, p) for p in sorted(found)]
            log.warning("topic %s does not exist yet: run 'drift topics create'", self.topic)
            await asyncio.sleep(1.0)

    def _apply(self, key: Any, value: bytes | None) -> None:
        if self._recorded(key, value):  # the worker's own commit: the gate recorded it when it decided it
            return
        try:
            message = decode(Message, value)
        except PayloadError:
            return  # the message-state agent dead-letters it
        if record_key(key) == message.agent_id:
            self.view.apply(message)

    def _recorded(self, key: Any, value: bytes | None) -> bool:
        """The view already has this message, found without validating it (a plain JSON read is a fraction of
        the model's validation, and most messages a gate worker reads back are its own)."""
        try:
            data = orjson.loads(value) if value else None
        except orjson.JSONDecodeError:
            return False
        if not isinstance(data, dict):
            return False
        agent_id, message_id = data.get("agent_id"), data.get("message_id")
        return (isinstance(agent_id, str) and isinstance(message_id, str) and record_key(key) == agent_id
                and self.view.knows(agent_id, message_id))  # fmt: skip

    async def caught_up(self, timeout_s: float) -> bool:
        """Wait until every record on the topic now has been applied; False when ``timeout_s`` passes first."""
        try:
            async with asyncio.timeout(timeout_s):
                await self._started.wait()
                if (offsets := self._offsets) is None:
                    return False  # reconnecting
                ends: dict[TopicPartition, int] = await offsets.end_offsets(list(self._positions))
                async with self._progress:
                    await self._progress.wait_for(lambda: all(self._positions[tp] >= n for tp, n in ends.items()))
            return True
        except (TimeoutError, KafkaError) as exc:
            log.warning("history of %s not caught up (%r) after %.2fs; using what it has", self.topic, exc, timeout_s)
            return False


class Following(Service):
    """Runs a :class:`HistoryFeed` with the app from the app's own start (a dependency of it), so the feed's
    replay of ``messages`` falls in the worker's group join. A Faust app task starts only after the first
    rebalance's recovery: a joining worker then replayed the whole topic on the event loop of its first batches
    (0.6 s of validation on a loaded host, BENCHMARKS.md run AD) while the drafts of its new partitions waited."""

    def __init__(self, feed: HistoryFeed) -> None:
        super().__init__()
        self.feed = feed

    @Service.task
    async def _follow(self) -> None:
        await self.feed.run_forever()
