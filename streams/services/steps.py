"""Orchestrator steps: one ``directives`` record for every ``steps`` record, computed before the agents act.

Per step (key ``run_id``; one run's steps in order, runs concurrently via a
:class:`~streams.runtime.dispatch.KeyedDispatcher`): decode (bad records go to the DLQ), wait until this worker's
history view has read ``messages`` up to its end offsets at receipt (bounded), run
:func:`engine.interventions.directives_for_step` within ``settings.step_deadline_s`` (unfinished
interventions become ``timed_out`` directives), send the record, ack. Directives are transient: nothing
here writes to ``messages`` or to any history.

The history this needs comes from :mod:`streams.runtime.history` (a per-worker view; why not a Faust table is
explained there).
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.errors import ConfigurationError, PayloadError
from engine.interventions import Intervention, InterventionSpec, StepResult, build_all, directives_for_step
from engine.interventions import load_interventions as load_intervention_specs
from engine.judges.base import Judge
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Persona
from engine.settings import Settings
from engine.stepped_log import Held
from streams.runtime.dispatch import KeyedDispatcher
from streams.runtime.faust_app import DriftApp, decoded_events, raw_topic
from streams.runtime.history import Following, HistoryFeed, HistoryView, lru_touch, record_key
from streams.services.configs import ConfigCache
from streams.services.context import DeadLetter
from streams.services.gate import Sender
from streams.services.stats import GateStats
from streams.wire.payloads import DirectiveOut, Directives, Step, decode, encode
from streams.wire.topics import Topics

log = logging.getLogger(__name__)

#: A step waits for the history view at most this share of its deadline, and never more than CATCH_UP_MAX_S.
CATCH_UP_SHARE, CATCH_UP_MAX_S = 0.25, 2.0
BUILT_CACHE = 256  # custom interventions built, cached per set of acting agents


def decode_step(key: Any, value: bytes | None) -> Step:
    """A valid ``steps`` record whose key equals its run id, else :class:`PayloadError`."""
    step = decode(Step, value)
    if record_key(key) != step.run_id:
        raise PayloadError(f"record key {record_key(key)!r} must equal run_id {step.run_id!r}")
    return step


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
            lru_touch(self._built, key, lambda: built, BUILT_CACHE)
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
        await self.configs.wait_loaded()  # never the defaults for an agent the store knows
        await self.feed.caught_up(min(deadline_s * CATCH_UP_SHARE, CATCH_UP_MAX_S))
        agents = list(dict.fromkeys(step.agent_ids))
        if len(agents) < len(step.agent_ids):
            step = step.model_copy(update={"agent_ids": agents})  # an agent named twice acts once
        await self.configs.ensure(agents)
        configs: dict[str, AgentConfig] = {a: self.configs.get(a) for a in agents}
        histories = {a: self.view.history(a, step.run_id) for a in agents}
        if step.channel is not None:  # a long channel's first events and recent ones, with the gap between
            held = self.view.conversation(step.run_id, step.channel)
        else:
            held = Held(tuple(self.view.trajectory(step.run_id, None, agents)))
        remaining = max(deadline_s - (time.monotonic() - received), 0.0)
        result = await directives_for_step(
            self.judge, step, configs, histories, held.items, self._personas(agents),
            self.custom.for_agents(agents), remaining, held.gap,
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


def _handler(
    topic: str, processor: StepProcessor, send: Sender, dead_letter: DeadLetter
) -> Callable[[tuple[Any, Step, float]], Awaitable[None]]:
    """Compute and send one step's record to ``topic``, then ack; an internal failure is dead-lettered, the
    record still sent."""

    async def handle(item: tuple[Any, Step, float]) -> None:
        event, step, received = item
        try:
            record = await processor.directives(step, received)
        except Exception as exc:
            log.exception("step %s#%d failed", step.run_id, step.step)
            await dead_letter(event, f"internal error while computing directives: {exc}")
            record = Directives(run_id=step.run_id, channel=step.channel, step=step.step)
        try:
            await send(topic, step.run_id.encode(), encode(record))
        finally:
            event.ack()

    return handle


class StepService:
    """The ``steps`` agent and the history feed it waits on (the feed's view is the processor's)."""

    def __init__(
        self, settings: Settings, processor: StepProcessor, feed: HistoryFeed, send: Sender, dead_letter: DeadLetter
    ) -> None:
        self.topics = Topics(settings.topic_prefix)
        self.processor = processor
        self.feed = feed
        self.dead_letter = dead_letter
        handle = _handler(self.topics.directives, processor, send, dead_letter)
        self.dispatcher: KeyedDispatcher[tuple[Any, Step, float]] = KeyedDispatcher(handle)

    def install(self, app: DriftApp) -> None:
        """Subscribe ``app`` to ``steps`` and run the history feed from the app's start."""
        app.close_before_output(self.dispatcher.close)

        @app.agent(raw_topic(app, self.topics.steps), name="steps")
        async def steps(stream: Any) -> None:
            async for event, step, received in decoded_events(self.dead_letter, stream, decode_step):
                await self.dispatcher.submit(step.run_id, (event, step, received))

        app.add_dependency(Following(self.feed))
