"""Scoring: turn a proposition set and a target into a weighted 0–9 dimension score.

Rules (seed docs 000/001, FACTS.md):
- ``inverted`` → ``9 - raw``; ``hard`` → each score below 9 is multiplied by 0.8, after inversion;
- the dimension score is the weight-weighted mean of proposition scores (all weights 0 → configuration error);
- a false precondition makes the proposition trivially true: 9, and no judge call;
- ``double_check`` asks the judge to reconsider; its value replaces the first (the judge keeps both);
- self-consistency is only judged when the agent has at least one prior action, otherwise every
  proposition scores 9 (TinyTroupe's ActionGenerator);
- ideas quantity is a count (enumerate mode), not a 0–9 score.
Raw and adjusted values are kept for every proposition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from engine.errors import ConfigurationError
from engine.judges.base import Claim, Judge, JudgeMode, JudgeRequest, JudgeResult, claims_in_batches
from engine.models import ZERO_USAGE, Dimension, Event, EventKind, Persona, TokenUsage
from engine.preconditions import get_precondition
from engine.propositions import Proposition, PropositionSet, Window, render_claim
from engine.windows import Gap, window_events

PERFECT = 9
HARD_PENALTY = 0.8


class JudgeStrategy(StrEnum):
    INDIVIDUAL = "individual"  # one claim per call: experiment accuracy
    BATCH = "batch"  # up to 10 claims of one target per call: CI cost


@dataclass(frozen=True, slots=True)
class ScoringTarget:
    """What is judged. ``events`` is the full history (windowing happens here) or, with a ``gap``, the held
    events of a longer one (engine/windows.py); ``action`` the judged draft."""

    target_name: str
    agent_id: str | None = None
    persona: Persona | None = None
    events: tuple[Event, ...] = ()
    action: str | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    context: Mapping[str, str] = field(default_factory=dict)
    supplementary: str | None = None
    gap: Gap | None = None

    def has_prior_actions(self) -> bool:
        return any(e.kind is EventKind.ACTION and e.agent_id == self.agent_id for e in self.events)


@dataclass(frozen=True, slots=True)
class PropositionScore:
    id: str
    claim: str
    weight: float
    raw: int | None  # the judge's value (None when skipped)
    score: float  # after inversion and hard penalty
    skipped: bool
    reasoning: str
    first_raw: int | None = None  # before a double-check turn replaced it
    recommendations: str | None = None
    items: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DimensionScore:
    dimension: Dimension
    agent_id: str | None
    score: float
    propositions: tuple[PropositionScore, ...]
    judge: str
    usage: TokenUsage = ZERO_USAGE
    latency_ms: float = 0.0
    calls: int = 0

    def low_scoring(self, threshold: float) -> tuple[PropositionScore, ...]:
        return tuple(p for p in self.propositions if not p.skipped and p.score < threshold)

    def reasoning(self) -> str:
        return " ".join(f"[{p.id}] {p.reasoning}" for p in self.propositions if not p.skipped)


def adjust(raw: int, *, inverted: bool, hard: bool) -> float:
    """Inversion first, then the hard penalty on anything below a perfect 9."""
    value = float(PERFECT - raw if inverted else raw)
    if hard and value < PERFECT:
        value *= HARD_PENALTY
    return value


def weighted_mean(pairs: Sequence[tuple[float, float]]) -> float:
    """Mean of ``(score, weight)`` pairs weighted by weight. All weights 0 is a configuration error."""
    total_weight = sum(w for _, w in pairs)
    if not pairs:
        return float(PERFECT)
    if total_weight <= 0:
        raise ConfigurationError("every proposition weight is 0: the dimension score is undefined")
    return sum(s * w for s, w in pairs) / total_weight


def _variables(target: ScoringTarget) -> dict[str, str]:
    variables = {"agent_name": target.target_name, **target.variables}
    if target.action is not None:
        variables.setdefault("action", target.action)
    return variables


def _applies(prop: Proposition, target: ScoringTarget, variables: Mapping[str, str]) -> bool:
    if prop.precondition is None:
        return True
    fn = get_precondition(prop.precondition)
    if fn is None:
        raise ConfigurationError(f"proposition {prop.id}: unknown precondition {prop.precondition!r}")
    return fn(target.events, target.context, variables)


def _request(
    pset: PropositionSet,
    target: ScoringTarget,
    claims: tuple[Claim, ...],
    window: Window,
    double: bool,
    share: bool = False,
) -> JudgeRequest:
    events, first_part, omitted = window_events(
        target.events, window.first_n, window.last_n, hopping=window.hopping, gap=target.gap
    )
    mode = JudgeMode.ENUMERATE if pset.dimension is Dimension.IDEAS_QUANTITY else JudgeMode.SCORE
    return JudgeRequest(
        mode=mode,
        claims=claims,
        target_name=target.target_name,
        agent_id=target.agent_id,
        persona=target.persona if pset.include_personas else None,
        trajectory=events,
        first_part=first_part,
        omitted=omitted,
        action=target.action,
        supplementary=target.supplementary,
        double_check=double,
        share_history=share,
    )


def _plan_requests(
    pset: PropositionSet,
    target: ScoringTarget,
    judged: Sequence[tuple[Proposition, str]],
    window: Window,
    strategy: JudgeStrategy,
    share: bool = False,
) -> list[JudgeRequest]:
    size = 1 if strategy is JudgeStrategy.INDIVIDUAL else None
    requests: list[JudgeRequest] = []
    for double in (False, True):
        claims = [Claim(p.id, text) for p, text in judged if p.double_check is double]
        batches = claims_in_batches(claims, size) if size else claims_in_batches(claims)
        requests.extend(_request(pset, target, batch, window, double, share) for batch in batches)
    return requests


def _score_from_answer(prop: Proposition, text: str, result: JudgeResult, pset: PropositionSet) -> PropositionScore:
    """Adjusted score of one answer; ideas quantity is a count and is neither inverted nor penalised."""
    answer = result.answer_for(prop.id)
    raw = int(answer.value)
    is_count = pset.dimension is Dimension.IDEAS_QUANTITY
    first = None if answer.first_value is None else int(answer.first_value)
    return PropositionScore(
        id=prop.id,
        claim=text,
        weight=prop.weight,
        raw=raw,
        score=float(raw) if is_count else adjust(raw, inverted=prop.inverted, hard=pset.hard),
        skipped=False,
        reasoning=answer.reasoning,
        first_raw=first,
        recommendations=prop.recommendations_for_improvement,
        items=answer.items,
    )


def _skipped(prop: Proposition, text: str, why: str) -> PropositionScore:
    return PropositionScore(
        id=prop.id,
        claim=text,
        weight=prop.weight,
        raw=None,
        score=float(PERFECT),
        skipped=True,
        reasoning=why,
        recommendations=prop.recommendations_for_improvement,
    )


async def score_dimension(
    judge: Judge,
    pset: PropositionSet,
    target: ScoringTarget,
    *,
    window_defaults: Window,
    strategy: JudgeStrategy = JudgeStrategy.BATCH,
    share_history: bool = False,
) -> DimensionScore:
    """Judge every applicable proposition of ``pset`` on ``target`` and aggregate the dimension score
    (``share_history``: see :attr:`engine.judges.base.JudgeRequest.share_history`)."""
    variables = _variables(target)
    rendered = [(p, render_claim(p.claim, variables)) for p in pset.propositions]
    no_history = pset.dimension is Dimension.CONSISTENCY and not target.has_prior_actions()
    skipped: dict[str, PropositionScore] = {}
    judged: list[tuple[Proposition, str]] = []
    for prop, text in rendered:
        if no_history:
            skipped[prop.id] = _skipped(prop, text, "no prior action to compare with: trivially consistent")
        elif not _applies(prop, target, variables):
            skipped[prop.id] = _skipped(prop, text, f"precondition {prop.precondition} is false")
        else:
            judged.append((prop, text))
    requests = _plan_requests(pset, target, judged, pset.window(window_defaults), strategy, share_history)
    results = await asyncio.gather(*(judge.evaluate(r) for r in requests))
    by_claim = {claim.id: result for request, result in zip(requests, results, strict=True) for claim in request.claims}
    scores = tuple(
        skipped[p.id] if p.id in skipped else _score_from_answer(p, text, by_claim[p.id], pset) for p, text in rendered
    )
    usage = sum((r.usage for r in results), ZERO_USAGE)
    return DimensionScore(
        dimension=pset.dimension,
        agent_id=target.agent_id,
        score=weighted_mean([(s.score, s.weight) for s in scores]),
        propositions=scores,
        judge=results[0].judge if results else getattr(judge, "name", "judge"),
        usage=usage,
        latency_ms=max((r.latency_ms for r in results), default=0.0),
        calls=sum(r.calls for r in results),
    )


async def check_claim(
    judge: Judge, claim: Claim, target: ScoringTarget, window: Window, *, include_persona: bool = False
) -> tuple[bool, JudgeResult]:
    """A boolean check of one claim over ``target`` (textual preconditions of interventions).

    As in TinyTroupe, the judge sees no persona unless asked (``include_persona``)."""
    events, first_part, omitted = window_events(
        target.events, window.first_n, window.last_n, hopping=window.hopping, gap=target.gap
    )
    request = JudgeRequest(
        mode=JudgeMode.CHECK,
        claims=(claim,),
        target_name=target.target_name,
        agent_id=target.agent_id,
        persona=target.persona if include_persona else None,
        trajectory=events,
        first_part=first_part,
        omitted=omitted,
        action=target.action,
        supplementary=target.supplementary,
    )
    result = await judge.evaluate(request)
    return bool(result.answers[0].value), result
