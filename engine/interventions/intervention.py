"""The :class:`Intervention`: AND-ed preconditions and an effect, with TinyTroupe's fluent setters.

Evaluation order: the cheap functional precondition first, then the textual one, then the propositional
one. A false precondition stops the evaluation: no further judge call is made. With ``concurrent=True``
the textual and propositional judge calls run at the same time (lower latency); the first false answer
cancels the other call. Unset preconditions count as true; an intervention with none fires every step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence

from engine.interventions.effects import Effect, as_effect
from engine.interventions.functional import FunctionalPrecondition
from engine.interventions.preconditions import (
    INTERVENTION_WINDOW,
    PropositionalPrecondition,
    PropositionLike,
    TextualPrecondition,
    evaluate_propositional,
    evaluate_textual,
)
from engine.interventions.types import (
    Directive,
    InterventionOutcome,
    PreconditionKind,
    PreconditionResult,
    Scope,
    StepContext,
)
from engine.judges.base import Judge
from engine.models import ZERO_USAGE, TargetType
from engine.propositions.models import PropositionSet, Window

JudgedStep = tuple[PreconditionKind, str, Callable[[], Awaitable[PreconditionResult]]]


def _default_scope(proposition: PropositionLike) -> Scope:
    if isinstance(proposition, PropositionSet) and proposition.target_type is TargetType.ENVIRONMENT:
        return Scope.CHANNEL
    return Scope.AGENT


def _skipped(kind: PreconditionKind, label: str) -> PreconditionResult:
    return PreconditionResult(kind=kind, label=label, satisfied=None, detail="not evaluated")


def _evidence(results: Sequence[PreconditionResult]) -> str:
    if not results:
        return "no preconditions: fires at every step"
    parts = []
    for r in results:
        verdict = {True: "true", False: "false", None: "not evaluated"}[r.satisfied]
        score = f" (score {r.score:.2f}, threshold {r.threshold:g})" if r.score is not None else ""
        detail = f" — {r.detail}" if r.detail and r.satisfied is not None else ""
        parts.append(f"{r.kind.value} {r.label}: {verdict}{score}{detail}")
    return "; ".join(parts)


class Intervention:
    """One intervention over ``targets`` (agent ids). Setters return the intervention for chaining."""

    def __init__(
        self,
        targets: str | Sequence[str],
        *,
        name: str = "intervention",
        window: Window = INTERVENTION_WINDOW,
        concurrent: bool = False,
    ) -> None:
        self.targets: tuple[str, ...] = (targets,) if isinstance(targets, str) else tuple(targets)
        self.name = name
        self.window = window
        self.concurrent = concurrent
        self.functional: FunctionalPrecondition | None = None
        self.textual: TextualPrecondition | None = None
        self.propositional: PropositionalPrecondition | None = None
        self.effect: Effect | None = None

    def __repr__(self) -> str:
        return f"Intervention(name={self.name!r}, targets={list(self.targets)!r})"

    def set_textual_precondition(
        self, claim: str, *, scope: Scope = Scope.AGENT, include_persona: bool = False
    ) -> Intervention:
        self.textual = TextualPrecondition(claim, scope, include_persona)
        return self

    def set_functional_precondition(self, fn: FunctionalPrecondition) -> Intervention:
        self.functional = fn
        return self

    def set_propositional_precondition(
        self, proposition: PropositionLike, threshold: float | None = None, *, scope: Scope | None = None
    ) -> Intervention:
        chosen = scope if scope is not None else _default_scope(proposition)
        self.propositional = PropositionalPrecondition(proposition, threshold, chosen)
        return self

    def set_effect(self, effect: Effect | str) -> Intervention:
        self.effect = as_effect(effect)
        return self

    @classmethod
    def create_for_each(
        cls,
        agents: Sequence[str],
        *,
        name: str = "intervention",
        window: Window = INTERVENTION_WINDOW,
        concurrent: bool = False,
    ) -> InterventionBatch:
        """One intervention per agent, wrapped in a batch whose setters fan out to every member."""
        return InterventionBatch([cls(agent, name=name, window=window, concurrent=concurrent) for agent in agents])

    def _judged_steps(self, judge: Judge, context: StepContext) -> list[JudgedStep]:
        steps: list[JudgedStep] = []
        if (textual := self.textual) is not None:
            steps.append(
                (
                    PreconditionKind.TEXTUAL,
                    textual.claim,
                    lambda: evaluate_textual(judge, textual, context, self.window, f"{self.name}:textual"),
                )
            )
        if (prop := self.propositional) is not None:
            steps.append(
                (
                    PreconditionKind.PROPOSITIONAL,
                    prop.label(),
                    lambda: evaluate_propositional(judge, prop, context, self.window),
                )
            )
        return steps

    async def _run_judged(self, steps: list[JudgedStep]) -> list[PreconditionResult]:
        if not self.concurrent or len(steps) < 2:
            results: list[PreconditionResult] = []
            for kind, label, make in steps:
                if results and not results[-1].satisfied:
                    results.append(_skipped(kind, label))
                else:
                    results.append(await make())
            return results
        return await _run_concurrently(steps)

    def _functional_result(self, context: StepContext) -> PreconditionResult | None:
        if self.functional is None:
            return None
        label = getattr(self.functional, "label", getattr(self.functional, "__name__", "function"))
        return PreconditionResult(PreconditionKind.FUNCTIONAL, str(label), bool(self.functional(context)))

    async def evaluate(self, judge: Judge, context: StepContext) -> InterventionOutcome:
        """Evaluate the preconditions for the targets acting at this step; render the effect if all hold."""
        acting = [t for t in self.targets if t in context.agent_ids]
        ctx = context.narrow(acting)
        if not acting:
            return InterventionOutcome(self.name, (), False, (), "no target acts at this step", ())
        results: list[PreconditionResult] = []
        functional = self._functional_result(ctx)
        judged = self._judged_steps(judge, ctx)
        if functional is not None:
            results.append(functional)
        if functional is not None and not functional.satisfied:
            results.extend(_skipped(kind, label) for kind, label, _ in judged)
        else:
            results.extend(await self._run_judged(judged))
        fired = all(r.satisfied for r in results)
        evidence = _evidence(results)
        directives: tuple[Directive, ...] = ()
        if fired and self.effect is not None:
            effect = self.effect
            directives = tuple(Directive(a, self.name, effect.render(a, ctx), evidence) for a in acting)
        return InterventionOutcome(
            name=self.name,
            agent_ids=tuple(acting),
            fired=fired,
            directives=directives,
            evidence=evidence,
            preconditions=tuple(results),
            judge_calls=sum(r.judge_calls for r in results),
            usage=sum((r.usage for r in results), ZERO_USAGE),
        )


async def _run_concurrently(steps: list[JudgedStep]) -> list[PreconditionResult]:
    """Run every judged precondition at once; the first false answer cancels the calls still running."""
    tasks = [asyncio.ensure_future(make()) for _, _, make in steps]
    try:
        for next_done in asyncio.as_completed(tasks):
            if not (await next_done).satisfied:
                break
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return [
        task.result() if task.done() and not task.cancelled() and task.exception() is None else _skipped(kind, label)
        for task, (kind, label, _) in zip(tasks, steps, strict=True)
    ]


class InterventionBatch:
    """Interventions made by :meth:`Intervention.create_for_each`; each setter applies to every member."""

    def __init__(self, interventions: Sequence[Intervention]) -> None:
        self.interventions: tuple[Intervention, ...] = tuple(interventions)

    def __iter__(self) -> Iterator[Intervention]:
        return iter(self.interventions)

    def __len__(self) -> int:
        return len(self.interventions)

    def __getitem__(self, index: int) -> Intervention:
        return self.interventions[index]

    def __repr__(self) -> str:
        return f"InterventionBatch({list(self.interventions)!r})"

    def set_textual_precondition(self, claim: str, *, scope: Scope = Scope.AGENT) -> InterventionBatch:
        for member in self.interventions:
            member.set_textual_precondition(claim, scope=scope)
        return self

    def set_functional_precondition(self, fn: FunctionalPrecondition) -> InterventionBatch:
        for member in self.interventions:
            member.set_functional_precondition(fn)
        return self

    def set_propositional_precondition(
        self, proposition: PropositionLike, threshold: float | None = None, *, scope: Scope | None = None
    ) -> InterventionBatch:
        for member in self.interventions:
            member.set_propositional_precondition(proposition, threshold, scope=scope)
        return self

    def set_effect(self, effect: Effect | str) -> InterventionBatch:
        for member in self.interventions:
            member.set_effect(effect)
        return self
