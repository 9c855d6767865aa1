"""Textual and propositional preconditions and their evaluation against a judge.

Polarity (TinyTroupe ``Intervention``):
- textual: the judge's boolean check of the claim; true means the precondition holds;
- propositional with a threshold: holds when the (adjusted) score is **below** the threshold — a high score
  means the desired state is already reached, so there is nothing to correct;
- propositional without a threshold: holds when the check is true.
A proposition whose own named precondition is false is trivially true (score 9, check true) with no judge
call, as in offline scoring. An inverted proposition's check value is negated (the claim is an
anti-pattern), matching the ``9 - raw`` inversion of its score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from engine.errors import ConfigurationError
from engine.interventions.types import PreconditionKind, PreconditionResult, Scope, StepContext
from engine.judges.base import Claim, Judge, JudgeMode, JudgeRequest, JudgeResult
from engine.models import ZERO_USAGE, Persona
from engine.preconditions import get_precondition
from engine.propositions.models import Proposition, PropositionSet, Window
from engine.propositions.templates import render_claim
from engine.scoring import PERFECT, ScoringTarget, adjust, check_claim, score_dimension
from engine.windows import window_events

#: Interventions look at a wider window than the action gate (TinyTroupe's defaults).
INTERVENTION_WINDOW = Window(first_n=10, last_n=100)


@dataclass(frozen=True, slots=True)
class InlineProposition:
    """A proposition written inline in an intervention (not loaded from a proposition file)."""

    id: str
    claim: str
    inverted: bool = False
    include_persona: bool = True


PropositionLike = Union[Proposition, PropositionSet, InlineProposition]  # noqa: UP007 (runtime isinstance)


@dataclass(frozen=True, slots=True)
class TextualPrecondition:
    claim: str
    scope: Scope = Scope.AGENT
    include_persona: bool = False  # TinyTroupe judges textual preconditions without the persona


@dataclass(frozen=True, slots=True)
class PropositionalPrecondition:
    proposition: PropositionLike
    threshold: float | None = None
    scope: Scope = Scope.AGENT

    def label(self) -> str:
        prop = self.proposition
        name = f"{prop.dimension.value} set" if isinstance(prop, PropositionSet) else prop.id
        return name if self.threshold is None else f"{name} < {self.threshold:g}"


def scoring_target(context: StepContext, scope: Scope) -> ScoringTarget:
    """The judged target: the targets' own histories, or the channel trajectory (no persona)."""
    names = context.target_names()
    variables = {"agent_name": names, "channel_name": context.channel_label()}
    if scope is Scope.CHANNEL:
        label = f"the conversation in {context.channel}" if context.channel else "the conversation"
        return ScoringTarget(target_name=label, events=tuple(context.trajectory), variables=variables,
                             gap=context.gap)  # fmt: skip
    single = context.agent_ids[0] if len(context.agent_ids) == 1 else None
    return ScoringTarget(
        target_name=names,
        agent_id=single,
        persona=context.persona(single) if single else None,
        events=context.target_events(),
        variables=variables,
    )


def _result(
    kind: PreconditionKind, label: str, satisfied: bool, detail: str, results: list[JudgeResult]
) -> PreconditionResult:
    return PreconditionResult(
        kind=kind,
        label=label,
        satisfied=satisfied,
        detail=detail,
        judge_calls=sum(r.calls for r in results),
        usage=sum((r.usage for r in results), ZERO_USAGE),
    )


async def evaluate_textual(
    judge: Judge, pre: TextualPrecondition, context: StepContext, window: Window, claim_id: str = "textual"
) -> PreconditionResult:
    """Check the claim; its id (for judges and logs) is ``claim_id``, e.g. ``variety:textual``."""
    target = scoring_target(context, pre.scope)
    text = render_claim(pre.claim, target.variables)
    value, result = await check_claim(judge, Claim(claim_id, text), target, window, include_persona=pre.include_persona)
    reasoning = result.answers[0].reasoning
    return _result(PreconditionKind.TEXTUAL, text, value, reasoning, [result])


def _applies(prop: Proposition | InlineProposition, target: ScoringTarget) -> bool:
    name = getattr(prop, "precondition", None)
    if name is None:
        return True
    fn = get_precondition(name)
    if fn is None:
        raise ConfigurationError(f"proposition {prop.id}: unknown precondition {name!r}")
    return fn(target.events, target.context, target.variables)


def _request(
    mode: JudgeMode, claims: tuple[Claim, ...], target: ScoringTarget, window: Window, persona: Persona | None
) -> JudgeRequest:
    events, first_part, omitted = window_events(
        target.events, window.first_n, window.last_n, hopping=window.hopping, gap=target.gap
    )
    return JudgeRequest(
        mode=mode,
        claims=claims,
        target_name=target.target_name,
        agent_id=target.agent_id,
        persona=persona,
        trajectory=events,
        first_part=first_part,
        omitted=omitted,
    )


def _include_persona(prop: PropositionLike) -> bool:
    if isinstance(prop, PropositionSet):
        return bool(prop.include_personas)
    return prop.include_persona if isinstance(prop, InlineProposition) else True


async def _check_all(
    judge: Judge,
    props: list[Proposition | InlineProposition],
    target: ScoringTarget,
    window: Window,
    persona: bool,
) -> tuple[bool, str, list[JudgeResult]]:
    """One check request for every applicable proposition; true when each (inversion applied) holds."""
    judged = [p for p in props if _applies(p, target)]
    if not judged:
        return True, "no proposition applies: trivially true", []
    claims = tuple(Claim(p.id, render_claim(p.claim, target.variables)) for p in judged)
    request = _request(JudgeMode.CHECK, claims, target, window, target.persona if persona else None)
    result = await judge.evaluate(request)
    verdicts = [bool(result.answer_for(p.id).value) != p.inverted for p in judged]
    detail = " ".join(f"[{a.claim_id}] {a.reasoning}" for a in result.answers)
    return all(verdicts), detail, [result]


async def _score_one(
    judge: Judge, prop: Proposition | InlineProposition, target: ScoringTarget, window: Window, persona: bool
) -> tuple[float, str, list[JudgeResult]]:
    if not _applies(prop, target):
        return float(PERFECT), "precondition false: trivially true", []
    claim = Claim(prop.id, render_claim(prop.claim, target.variables))
    request = _request(JudgeMode.SCORE, (claim,), target, window, target.persona if persona else None)
    result = await judge.evaluate(request)
    answer = result.answers[0]
    return adjust(int(answer.value), inverted=prop.inverted, hard=False), answer.reasoning, [result]


async def evaluate_propositional(
    judge: Judge, pre: PropositionalPrecondition, context: StepContext, window: Window
) -> PreconditionResult:
    target = scoring_target(context, pre.scope)
    prop = pre.proposition
    persona = _include_persona(prop)
    kind, label = PreconditionKind.PROPOSITIONAL, pre.label()
    if pre.threshold is None:
        members: list[Proposition | InlineProposition] = (
            list(prop.propositions) if isinstance(prop, PropositionSet) else [prop]
        )
        holds, detail, results = await _check_all(judge, members, target, window, persona)
        return _result(kind, label, holds, detail, results)
    if isinstance(prop, PropositionSet):
        scored = await score_dimension(judge, prop, target, window_defaults=window)
        score, detail, calls, usage = scored.score, scored.reasoning(), scored.calls, scored.usage
    else:
        score, detail, results = await _score_one(judge, prop, target, window, persona)
        calls, usage = sum(r.calls for r in results), sum((r.usage for r in results), ZERO_USAGE)
    return PreconditionResult(
        kind=kind,
        label=label,
        satisfied=score < pre.threshold,
        detail=detail,
        score=score,
        threshold=pre.threshold,
        judge_calls=calls,
        usage=usage,
    )
