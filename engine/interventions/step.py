"""One evaluation pass per orchestrator step, before the agents act.

:func:`directives_for_step` is what the streaming layer calls for each step request: repetition suppression
first (algorithmic, instant), then the built-in interventions the agents' configurations enable, then the
custom interventions, each evaluated once, sequentially, in declaration order, within one deadline. When
the deadline passes, the directives computed so far are returned and every intervention still missing is
reported in ``timed_out``. No Kafka, no I/O besides the judge.

Within a pass, identical judge requests are answered once (the anti-convergence check of the channel is the
same for every agent): later users get the shared answer with zero calls and zero usage attributed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Protocol

from engine.errors import JudgeError, JudgeTimeout
from engine.interventions.builtins import builtin_interventions
from engine.interventions.intervention import Intervention
from engine.interventions.repetition import repetition_directive
from engine.interventions.types import StepContext, StepResult
from engine.judges.base import Judge, JudgeRequest, JudgeResult
from engine.models import ZERO_USAGE, AgentConfig, Event, Persona, TokenUsage
from engine.windows import Gap


class StepRequestLike(Protocol):
    """The fields of a ``drift.steps`` record this module needs: who is about to act, where and when."""

    @property
    def run_id(self) -> str: ...

    @property
    def channel(self) -> str | None: ...

    @property
    def step(self) -> int: ...

    @property
    def agent_ids(self) -> Sequence[str]: ...


class SharedJudge:
    """A judge for one pass: identical requests share one call; counts the calls and usage really spent."""

    def __init__(self, judge: Judge) -> None:
        self._judge = judge
        self._tasks: dict[JudgeRequest, asyncio.Future[JudgeResult]] = {}
        self.calls = 0
        self.usage: TokenUsage = ZERO_USAGE

    @property
    def name(self) -> str:
        return self._judge.name

    async def _call(self, request: JudgeRequest) -> JudgeResult:
        result = await self._judge.evaluate(request)
        self.calls += result.calls
        self.usage = self.usage + result.usage
        return result

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        try:
            task = self._tasks.get(request)
        except TypeError:  # an unhashable extension field: no sharing, still counted
            return await self._call(request)
        if task is not None and task.done() and (task.cancelled() or task.exception() is not None):
            task = None  # a failed or abandoned call is retried, not replayed
        if task is None:
            task = asyncio.ensure_future(self._call(request))
            self._tasks[request] = task
            return await task
        result = await asyncio.shield(task)
        return replace(result, calls=0, usage=ZERO_USAGE)

    def cancel_pending(self) -> None:
        for task in self._tasks.values():
            task.cancel()


def _acting(intervention: Intervention, context: StepContext) -> list[str]:
    return [t for t in intervention.targets if t in context.agent_ids]


async def _evaluate_one(intervention: Intervention, judge: Judge, context: StepContext, remaining: float) -> StepResult:
    """One intervention's share of the pass: its outcome, or the targets it timed out or failed for."""
    acting = _acting(intervention, context)
    if not acting:
        return StepResult()
    if remaining <= 0:
        return StepResult(timed_out=tuple((a, intervention.name) for a in acting))
    try:
        async with asyncio.timeout(remaining):
            outcome = await intervention.evaluate(judge, context)
    except (TimeoutError, JudgeTimeout):
        return StepResult(timed_out=tuple((a, intervention.name) for a in acting))
    except JudgeError as exc:
        return StepResult(errors=tuple((a, intervention.name, str(exc)) for a in acting))
    return StepResult(directives=outcome.directives, outcomes=(outcome,))


async def evaluate_step(
    judge: Judge, interventions: Sequence[Intervention], context: StepContext, deadline_s: float
) -> StepResult:
    """Evaluate ``interventions`` once, in order, for the agents of ``context``; stop at the deadline.

    Interventions whose targets do not act at this step are skipped. Every one not finished before the
    deadline is listed in ``timed_out`` as ``(agent_id, intervention name)``, as is one whose judge call hit
    its own per-call timeout; any other judge failure lands in ``errors`` and the intervention does not fire.
    ``judge_calls`` and ``usage`` count the calls that completed (shared answers once).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + deadline_s
    shared = SharedJudge(judge)
    result = StepResult()
    try:
        for intervention in interventions:
            part = await _evaluate_one(intervention, shared, context, deadline - loop.time())
            result = result.merged(part)
    finally:
        shared.cancel_pending()
    return replace(result, judge_calls=shared.calls, usage=shared.usage)


def repetition_pass(context: StepContext) -> StepResult:
    """Repetition directives for the acting agents whose configuration enables suppression (no judge)."""
    directives = []
    for agent_id in context.agent_ids:
        config = context.config(agent_id)
        if not config.repetition_suppression_enabled:
            continue
        recent = context.recent_messages(agent_id)
        found = repetition_directive(agent_id, context.agent_name(agent_id), recent, config.repetition_threshold)
        if found is not None:
            directives.append(found)
    return StepResult(directives=tuple(directives))


async def directives_for_step(
    judge: Judge,
    step: StepRequestLike,
    configs: Mapping[str, AgentConfig],
    histories: Mapping[str, Sequence[Event]],
    channel_trajectory: Sequence[Event],
    personas: Mapping[str, Persona],
    custom_interventions: Sequence[Intervention],
    deadline_s: float,
    channel_gap: Gap | None = None,
) -> StepResult:
    """Every directive for the agents about to act at ``step`` (see the module docstring for the order).

    ``histories`` maps agent ids to their own events, ``channel_trajectory`` is the channel's events in
    order (``channel_gap``: the held events of a longer channel, engine/windows.py), ``custom_interventions``
    are built once per run (:func:`engine.interventions.build`); those whose
    targets do not act at this step are skipped. Agents without a config get :class:`AgentConfig` defaults
    (every correction off).
    """
    context = StepContext(
        run_id=str(step.run_id),
        channel=step.channel,
        step=step.step,
        agent_ids=tuple(step.agent_ids),
        personas=personas,
        histories=histories,
        trajectory=tuple(channel_trajectory),
        configs=configs,
        gap=channel_gap,
    )
    repeated = repetition_pass(context)
    interventions = [*builtin_interventions(context.agent_ids, configs), *custom_interventions]
    evaluated = await evaluate_step(judge, interventions, context, deadline_s)
    return repeated.merged(evaluated)
