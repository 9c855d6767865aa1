"""The experiment runner (``drift experiment run``): both arms of a scenario through the service, scored and stored.

Sessions of both arms run on the same plans (identical agents, themes, seeds), interleaved treatment/control so
a budget-capped run stays balanced, at most ``concurrency`` at a time. Each finished session is scored
(:func:`engine.experiments.metrics.score_session`) and stored whole in one transaction
(:class:`streams.store.experiments.ExperimentStore`); a session that fails (simulation or judge error) is not
stored and is redone by ``--resume``, which skips every stored session. Before launching a session the
:class:`~engine.experiments.budget.Budget` must admit its estimate on top of what was spent and what the running
sessions may still spend; when it does not, no further session starts, running ones finish, and the
experiment is marked ``partial``.

Token use is metered per session through a context variable: the actor's and extractor's usage, the gate's
verdicts (``token_usage``) and the evaluation judge's, each priced with :mod:`engine.pricing`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.actors.base import Actor, ActRequest, ActResult
from engine.errors import DriftError
from engine.experiments.budget import Budget, CallEstimate
from engine.experiments.metrics import MetricSets, SessionInput, SessionScores, prepare_evidence, score_session
from engine.judges.base import Judge
from engine.llm.base import Completion, CompletionRequest, TextModel
from engine.models import ZERO_USAGE, TokenUsage
from engine.pricing import PriceTable
from engine.scoring import JudgeStrategy
from engine.simulation.plan import SessionPlan
from streams.client.simulate import ARMS, Service, SessionResult, Simulation
from streams.store.experiments import ExperimentStore, SessionRecord
from streams.wire.payloads import Directives, Message, Verdict

log = logging.getLogger(__name__)


@dataclass
class Meter:
    """LLM use of one session: calls, tokens and seconds, by the model that spent them."""

    actor: TokenUsage = ZERO_USAGE
    gate: TokenUsage = ZERO_USAGE
    judge: TokenUsage = ZERO_USAGE
    calls: int = 0


_METER: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("experiment_meter", default=None)


def _meter() -> Meter:
    return _METER.get() or Meter()


class MeteredActor:
    def __init__(self, actor: Actor) -> None:
        self.inner = actor

    @property
    def name(self) -> str:
        return self.inner.name

    async def act(self, request: ActRequest) -> ActResult:
        result = await self.inner.act(request)
        meter = _meter()
        meter.actor, meter.calls = meter.actor + result.usage, meter.calls + 1
        return result


class MeteredModel:
    def __init__(self, model: TextModel) -> None:
        self.inner = model

    @property
    def name(self) -> str:
        return self.inner.name

    async def complete(self, request: CompletionRequest) -> Completion:
        completion = await self.inner.complete(request)
        meter = _meter()
        meter.actor, meter.calls = meter.actor + completion.usage, meter.calls + 1
        return completion


class MeteredService:
    """The service, with the gate's judge usage of every verdict added to the session's meter."""

    def __init__(self, service: Service) -> None:
        self.inner = service

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None) -> Directives:
        return await self.inner.step(run_id=run_id, step=step, agent_ids=agent_ids, channel=channel)

    async def check(self, *, agent_id: str, text: str, **fields: Any) -> Verdict:
        verdict = await self.inner.check(agent_id=agent_id, text=text, **fields)
        usage = TokenUsage(**verdict.token_usage.model_dump())
        meter = _meter()
        meter.gate = meter.gate + usage
        meter.calls += 1 if verdict.scores else 0
        return verdict

    async def publish_message(self, message: Message) -> None:
        await self.inner.publish_message(message)

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None:
        await self.inner.publish_config(agent_id, config)


@dataclass
class Progress:
    """What the progress display shows; ``on_change`` is called after every session."""

    total: int
    done: int = 0
    failed: int = 0
    skipped: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    llm_calls: int = 0
    llm_s: float = 0.0
    wall_s: float = 0.0
    stopped_by_budget: bool = False
    interrupted: bool = False
    on_change: Callable[[Progress], None] = field(default=lambda _p: None, repr=False)


@dataclass
class ExperimentRun:
    experiment_id: str
    sim: Simulation
    judge: Judge
    sets: MetricSets
    store: ExperimentStore
    estimates: dict[str, CallEstimate]
    budget: Budget
    prices: PriceTable = field(default_factory=PriceTable)
    concurrency: int = 4
    strategy: JudgeStrategy = JudgeStrategy.INDIVIDUAL
    #: set (by a first Ctrl-C) to launch no further session; running ones finish and are stored
    stopping: asyncio.Event = field(default_factory=asyncio.Event)
    _unconfigured: set[tuple[str, str]] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.sim.on_consolidating is None:  # the scoring evidence is prepared while the rapporteur speaks
            self.sim.on_consolidating = self._prepare

    def cost(self, meter: Meter) -> float | None:
        parts = [self.prices.cost(self.sim.actor.name, meter.actor), self.prices.cost(self.judge.name, meter.judge),
                 self.prices.cost(self.judge.name, meter.gate)]  # fmt: skip
        return None if None in parts else sum(p for p in parts if p is not None)

    def estimate_cost(self, arm: str) -> float | None:
        return self.estimates[arm].cost(self.prices, self.sim.actor.name, self.judge.name)

    async def run(self, plans: Sequence[SessionPlan], progress: Progress) -> str:
        """Run every session not stored yet; returns the experiment's status (completed or partial)."""
        done = await self.store.finished(self.experiment_id)
        queue = [(p, arm) for p in plans for arm in ARMS if (arm, p.key) not in done]
        progress.skipped = progress.done = len(plans) * len(ARMS) - len(queue)
        progress.on_change(progress)
        # every session's agents configured at once, up front: no session waits for its configuration (one whose
        # configuration failed tries again when it starts, and fails there like any session)
        configured = await asyncio.gather(*(self._configure(plan, arm) for plan, arm in queue))
        self._unconfigured = {(arm, plan.key) for (plan, arm), ok in zip(queue, configured, strict=True) if not ok}
        slots, tasks = asyncio.Semaphore(self.concurrency), []
        for plan, arm in queue:
            await slots.acquire()
            if self.stopping.is_set():
                slots.release()
                progress.interrupted = True
                break
            key, estimate = f"{arm}/{plan.key}", self.estimates[arm]
            if not self.budget.admits(self.estimate_cost(arm), estimate.tokens):
                slots.release()
                progress.stopped_by_budget = True
                break
            self.budget.reserve(key, self.estimate_cost(arm), estimate.tokens)
            slot = _Slot(slots)
            task = asyncio.create_task(self._one(plan, arm, progress, slot), context=contextvars.copy_context())
            task.add_done_callback(slot.on_done)
            tasks.append(task)
        await asyncio.gather(*tasks)
        complete = not (progress.stopped_by_budget or progress.interrupted or progress.failed)
        status = "completed" if complete else "partial"
        await self.store.finish(self.experiment_id, status)
        return status

    async def _configure(self, plan: SessionPlan, arm: str) -> bool:
        try:
            await self.sim.configure(plan, arm)
        except (DriftError, TimeoutError):
            return False
        return True

    async def _one(self, plan: SessionPlan, arm: str, progress: Progress, slot: _Slot | None = None) -> None:
        meter = Meter()
        _METER.set(meter)
        started = time.perf_counter()
        result = await self.sim.run_session(plan, arm, configure=(arm, plan.key) in self._unconfigured)
        scores: SessionScores | None = None
        error = result.error
        if error is None:
            try:
                scores = await score_session(self.judge, self.sets, _session_input(self.sim, plan, result),
                                             self.strategy)  # fmt: skip
            except DriftError as exc:
                error = f"{type(exc).__name__}: {exc}"
        if scores is not None:
            meter.judge, meter.calls = meter.judge + scores.usage, meter.calls + scores.calls
        usage, cost = meter.actor + meter.gate + meter.judge, self.cost(meter)
        tokens = usage.input_tokens + usage.output_tokens
        self.budget.settle(f"{arm}/{plan.key}", cost, tokens)
        progress.tokens, progress.cost_usd = progress.tokens + tokens, progress.cost_usd + (cost or 0.0)
        progress.llm_calls += meter.calls
        progress.llm_s += result.actor_s + result.judge_s
        if error is None:
            extracted = len(result.extracted) if result.extracted is not None else None
            record = SessionRecord(arm, plan.key, result.run_id, f"g{plan.group}", extracted, None, meter.calls,
                                   usage, cost, time.perf_counter() - started)  # fmt: skip
            if slot is not None:
                slot.release()  # the next session starts while this one is written
            await self.store.save_session(self.experiment_id, record, scores)
            progress.done += 1
        else:
            progress.failed += 1
        progress.on_change(progress)

    async def _prepare(self, result: SessionResult) -> None:
        """While the rapporteur consolidates: the agents' fluency evidence, in a thread (the event loop keeps
        serving the other sessions). Best effort: scoring computes whatever this did not."""
        agents = {a.agent_id: (a.persona_id, self.sim.personas[a.persona_id]) for a in result.agents.values()}
        session = SessionInput(result.run_id, "", self.sim.scenario.channel, tuple(result.events), agents, None)
        try:
            await asyncio.to_thread(prepare_evidence, self.sets, session)
        except Exception:  # a bug here must not cost the session: its scoring recomputes the evidence
            log.exception("preparing the scoring evidence of %s failed", result.run_id)


class _Slot:
    """One session's concurrency slot, released once: when its scores are ready to store, or when it ends."""

    def __init__(self, slots: asyncio.Semaphore) -> None:
        self._slots: asyncio.Semaphore | None = slots

    def release(self) -> None:
        if self._slots is not None:
            self._slots.release()
            self._slots = None

    def on_done(self, _task: asyncio.Task[None]) -> None:
        self.release()


def _session_input(sim: Simulation, plan: SessionPlan, result: SessionResult) -> SessionInput:
    agents = {a.agent_id: (a.persona_id, sim.personas[a.persona_id]) for a in result.agents.values()}
    extracted = len(result.extracted) if result.extracted is not None else None
    return SessionInput(result.run_id, f"g{plan.group}", sim.scenario.channel, tuple(result.events), agents, extracted)
