"""Orchestrator steps: one ``directives`` record for every ``steps`` record, computed before the agents act.

Per step (key ``run_id``; one run's steps in order, runs concurrently via a
:class:`~streams.dispatch.KeyedDispatcher`): decode (bad records go to the DLQ), wait until this worker's
history view has read ``messages`` up to its end offsets at receipt (bounded), run
:func:`engine.interventions.directives_for_step` within ``settings.step_deadline_s`` (unfinished
interventions become ``timed_out`` directives), send the record, ack. Directives are transient: nothing
here writes to ``messages`` or to any history.

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
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from engine.errors import ConfigurationError, DriftError, PayloadError
from engine.interventions import Intervention, InterventionSpec, StepResult, build_all, directives_for_step
from engine.interventions import load_interventions as load_intervention_specs
from engine.judges.base import Judge
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Event, EventKind, Persona
from engine.settings import Settings
from streams.configs import ConfigCache
from streams.dispatch import KeyedDispatcher
from streams.kafka import consumer_kwargs, start_with_retry
from streams.payloads import DirectiveOut, Directives, Message, Step, decode, encode
from streams.stats import GateStats
from streams.topics import Topics

if TYPE_CHECKING:
    from streams.app import DriftApp, Runtime

log = logging.getLogger(__name__)

#: Events kept per agent (its actions, stimuli it received: the intervention window's last_n) and per
#: (run, channel); the least recently written agents and channels beyond MAX_* are forgotten.
AGENT_KEPT, CHANNEL_KEPT, MAX_AGENTS, MAX_CHANNELS = 100, 100, 20_000, 5_000
#: A step waits for the history view at most this share of its deadline, and never more than CATCH_UP_MAX_S.
CATCH_UP_SHARE, CATCH_UP_MAX_S = 0.25, 2.0
BUILT_CACHE = 256  # custom interventions built, cached per set of acting agents

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


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


def _in_run(stored: _Stored, run_id: str) -> bool:
    return stored.run_id is None or stored.run_id == run_id


def _touch(buffers: OrderedDict[K, V], key: K, make: Callable[[], V], cap: int) -> V:
    """The buffer for ``key``, created on first use; the least recently used one goes beyond ``cap``."""
    buffer = buffers.get(key)
    if buffer is None:
        buffer = buffers[key] = make()
        if len(buffers) > cap:
            buffers.popitem(last=False)
    else:
        buffers.move_to_end(key)
    return buffer


class HistoryView:
    """Recent committed events in arrival order, per agent and per (run, channel); events without a run id
    belong to every run. A message id seen again for its agent is ignored (at-least-once delivery); a stimulus
    broadcast to several recipients of a channel appears once in the channel's trajectory."""

    def __init__(
        self, *, agent_kept: int = AGENT_KEPT, channel_kept: int = CHANNEL_KEPT,
        max_agents: int = MAX_AGENTS, max_channels: int = MAX_CHANNELS,
    ) -> None:  # fmt: skip
        self.agent_kept, self.channel_kept = agent_kept, channel_kept
        self.max_agents, self.max_channels = max_agents, max_channels
        self._agents: OrderedDict[str, deque[_Stored]] = OrderedDict()
        self._channels: OrderedDict[tuple[str | None, str], deque[_Stored]] = OrderedDict()
        self._seq = 0

    def apply(self, message: Message) -> bool:
        """Record ``message``; False when it was already recorded."""
        own = _touch(self._agents, message.agent_id, lambda: deque(maxlen=self.agent_kept), self.max_agents)
        if any(s.message_id == message.message_id for s in own):
            return False
        self._seq += 1
        stored = _Stored(self._seq, message.message_id, message.run_id, event_of(message))
        own.append(stored)
        if message.channel is not None:
            key = (message.run_id, message.channel)
            shared = _touch(self._channels, key, lambda: deque(maxlen=self.channel_kept), self.max_channels)
            if not _broadcast_copy(shared, stored.event):
                shared.append(stored)
        return True

    def history(self, agent_id: str, run_id: str) -> list[Event]:
        """The agent's own events of ``run_id`` (and of no run), oldest first."""
        return [s.event for s in self._agents.get(agent_id, ()) if _in_run(s, run_id)]

    def trajectory(self, run_id: str, channel: str | None, agent_ids: Sequence[str]) -> list[Event]:
        """The channel's last events in ``run_id``; without a channel, the acting agents' direct events."""
        if channel is None:
            parts = [
                [s for s in self._agents.get(a, ()) if s.event.channel is None and _in_run(s, run_id)]
                for a in dict.fromkeys(agent_ids)
            ]
        else:
            parts = [list(self._channels.get((run_id, channel), ())), list(self._channels.get((None, channel), ()))]
        merged = list(heapq.merge(*parts, key=lambda s: s.seq))
        return [s.event for s in merged[-self.channel_kept :]]


def _broadcast_copy(buffer: deque[_Stored], event: Event) -> bool:
    """Whether ``event`` is a stimulus already recorded since the channel's last action (a broadcast)."""
    if event.kind is not EventKind.STIMULUS:
        return False
    for stored in reversed(buffer):
        if stored.event.kind is EventKind.ACTION:
            return False
        if (stored.event.source, stored.event.text) == (event.source, event.text):
            return True
    return False


def _record_key(raw: Any) -> str | None:
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


def decode_step(key: Any, value: bytes | None) -> Step:
    """A valid ``steps`` record whose key equals its run id, else :class:`PayloadError`."""
    step = decode(Step, value)
    if _record_key(key) != step.run_id:
        raise PayloadError(f"record key {_record_key(key)!r} must equal run_id {step.run_id!r}")
    return step


class HistoryFeed:
    """A group-less consumer of every ``messages`` partition that keeps a :class:`HistoryView` current.

    End offsets are asked for on a second connection: on the reading one the request would queue behind the
    fetch long-poll (about 11 ms per step on the embedded broker instead of 0.4 ms).
    """

    def __init__(self, settings: Settings, view: HistoryView) -> None:
        self.settings = settings
        self.topic = Topics(settings.topic_prefix).messages
        self.view = view
        self._offsets: AIOKafkaConsumer | None = None
        self._positions: dict[TopicPartition, int] = {}
        self._started = asyncio.Event()
        self._progress = asyncio.Condition()

    async def run_forever(self) -> None:
        """Follow the topic until cancelled; after a failure, reconnect and go on where it stopped."""
        while True:
            try:
                await self.run()
            except (KafkaError, OSError, DriftError) as exc:
                log.warning("history feed of %s failed (%s); reconnecting", self.topic, exc)
                await asyncio.sleep(1.0)

    async def run(self) -> None:
        """Read the topic from the last applied positions (the beginning at first), then follow it."""
        reader = AIOKafkaConsumer(**consumer_kwargs(self.settings), enable_auto_commit=False)
        offsets = AIOKafkaConsumer(**consumer_kwargs(self.settings), enable_auto_commit=False)
        try:
            for client in (reader, offsets):
                await start_with_retry(client, self.settings.broker, 30.0)
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
        try:
            message = decode(Message, value)
        except PayloadError:
            return  # the message-state agent dead-letters it
        if _record_key(key) == message.agent_id:
            self.view.apply(message)

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


class Barrier(Protocol):
    async def caught_up(self, timeout_s: float) -> bool: ...


def load_custom(propositions_dir: Path) -> tuple[InterventionSpec, ...]:
    """The custom interventions of ``<propositions_dir>/interventions`` (none when the folder is missing)."""
    folder = propositions_dir / "interventions"
    return load_intervention_specs(folder, propositions_dir) if folder.is_dir() else ()


class CustomInterventions:
    """Custom interventions built for the acting agents, cached per set of agents."""

    def __init__(self, specs: Sequence[InterventionSpec]) -> None:
        self.specs = tuple(s for s in specs if s.enabled)
        self._built: OrderedDict[tuple[str, ...], list[Intervention]] = OrderedDict()

    def for_agents(self, agent_ids: Sequence[str]) -> list[Intervention]:
        if not self.specs:
            return []
        key = tuple(agent_ids)
        if key not in self._built:
            built = build_all(self.specs, key)
            _touch(self._built, key, lambda: built, BUILT_CACHE)
        return self._built[key]


def directive_records(result: StepResult, deadline_s: float) -> list[DirectiveOut]:
    """The wire directives: those computed, then one ``timed_out`` entry per unfinished intervention."""
    done = [DirectiveOut(agent_id=d.agent_id, kind=d.kind, text=d.text, evidence=d.evidence) for d in result.directives]
    late = "The {} check for {} did not finish within the {:g}s step deadline; no directive from it at this step."
    missing = [DirectiveOut(agent_id=a, kind=k, text=late.format(k, a, deadline_s), timed_out=True)
               for a, k in result.timed_out]  # fmt: skip
    return done + missing


@dataclass
class StepProcessor:
    """Turns one step into its directives record (no Kafka: ``feed`` is only waited on)."""

    settings: Settings
    judge: Judge
    configs: ConfigCache
    library: PropositionLibrary
    view: HistoryView
    feed: Barrier
    custom: CustomInterventions
    stats: GateStats | None = None

    def _personas(self, agent_ids: Sequence[str]) -> dict[str, Persona]:
        personas: dict[str, Persona] = {}
        for agent_id in agent_ids:
            try:
                persona = self.library.persona(agent_id)
            except ConfigurationError as exc:
                log.warning("no persona for %s: %s", agent_id, exc)
                continue
            if persona is not None:
                personas[agent_id] = persona
        return personas

    async def directives(self, step: Step, received: float) -> Directives:
        deadline_s = self.settings.step_deadline_s
        await self.feed.caught_up(min(deadline_s * CATCH_UP_SHARE, CATCH_UP_MAX_S))
        agents = list(dict.fromkeys(step.agent_ids))
        if len(agents) < len(step.agent_ids):
            step = step.model_copy(update={"agent_ids": agents})  # an agent named twice acts once
        configs: dict[str, AgentConfig] = {a: self.configs.get(a) for a in agents}
        histories = {a: self.view.history(a, step.run_id) for a in agents}
        trajectory = self.view.trajectory(step.run_id, step.channel, agents)
        remaining = max(deadline_s - (time.monotonic() - received), 0.0)
        result = await directives_for_step(
            self.judge, step, configs, histories, trajectory, self._personas(agents),
            self.custom.for_agents(agents), remaining,
        )  # fmt: skip
        for agent_id, kind, error in result.errors:
            log.warning("step %s#%d: %s for %s failed: %s", step.run_id, step.step, kind, agent_id, error)
        if self.stats is not None:
            self.stats.judge_calls += result.judge_calls
            self.stats.usage = self.stats.usage + result.usage
        return Directives(
            run_id=step.run_id,
            channel=step.channel,
            step=step.step,
            directives=directive_records(result, deadline_s),
            latency_ms=(time.monotonic() - received) * 1000.0,
        )


def _handler(rt: Runtime, processor: StepProcessor) -> Callable[[tuple[Any, Step, float]], Awaitable[None]]:
    """Compute and send one step's record, then ack; an internal failure is dead-lettered, the record still sent."""
    topic = Topics(rt.settings.topic_prefix).directives

    async def handle(item: tuple[Any, Step, float]) -> None:
        event, step, received = item
        try:
            record = await processor.directives(step, received)
        except Exception as exc:
            log.exception("step %s#%d failed", step.run_id, step.step)
            await rt.dead_letter(event, f"internal error while computing directives: {exc}")
            record = Directives(run_id=step.run_id, channel=step.channel, step=step.step)
        try:
            await rt.send(topic, step.run_id.encode(), encode(record))
        finally:
            event.ack()

    return handle


def install_steps(app: DriftApp, rt: Runtime) -> StepProcessor:
    """Add the history feed and the step agent to the gate ``app`` of runtime ``rt``; returns the processor."""
    from streams.app import raw_topic  # streams.app imports this module

    settings, deps = rt.settings, rt.deps
    feed = HistoryFeed(settings, HistoryView())
    processor = StepProcessor(settings, deps.judge, deps.configs, deps.library, feed.view, feed,
                              CustomInterventions(load_custom(settings.propositions_dir)), deps.stats)  # fmt: skip
    dispatcher: KeyedDispatcher[tuple[Any, Step, float]] = KeyedDispatcher(_handler(rt, processor))

    @app.agent(raw_topic(app, Topics(settings.topic_prefix).steps), name="steps")
    async def steps(stream: Any) -> None:
        async for event in stream.noack().events():
            received = time.monotonic()
            try:
                step = decode_step(event.key, event.value)
            except PayloadError as exc:
                await rt.dead_letter(event, str(exc))
                event.ack()
                continue
            await dispatcher.submit(step.run_id, (event, step, received))

    @app.task  # type: ignore[untyped-decorator]
    async def history_feed() -> None:
        await feed.run_forever()

    return processor
