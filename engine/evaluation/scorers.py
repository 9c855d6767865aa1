"""One scorer per evaluation dimension, all built on :func:`engine.scoring.score_dimension`.

| scorer | target | persona | supplementary evidence |
|---|---|---|---|
| :func:`score_adherence` | the agent trajectory | yes (``include_personas``) | — |
| :func:`score_consistency` | the agent trajectory | no | — |
| :func:`score_fluency` | the agent trajectory | no | n-gram overlap of the agent's messages |
| :func:`score_convergence` | one channel | no | vocabulary statistics per speaker |
| :func:`score_ideas_quantity` | one channel | no | — (the judge enumerates; the count is the score) |

Persona and window follow the proposition set (``include_personas``, ``first_n``/``last_n``; evaluation
defaults 10/100). Statistics are computed over the same window the judge sees.

**Environment-level dimensions for an agent** (:func:`score_for_agent`): each channel the agent posted in
is scored once (results are shared between agents through a :class:`ChannelCache`) and the channel scores
are reported for the agent — convergence as the mean over its channels weighted by the agent's number of
messages in each, ideas quantity as the *sum* of the channels' counts (distinct ideas in all the
conversations the agent took part in; still a whole number).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache

from engine.checks import ngram_stats, vocabulary_stats
from engine.errors import ConfigurationError
from engine.evaluation.hashing import content_hash
from engine.evaluation.subjects import AgentSubject, ChannelSubject
from engine.judges.base import Judge
from engine.models import ZERO_USAGE, Dimension, Event, EventKind, TargetType
from engine.propositions import EVALUATION_WINDOW_DEFAULTS, PropositionSet, Window
from engine.scoring import DimensionScore, JudgeStrategy, PropositionScore, ScoringTarget, score_dimension
from engine.windows import window_events

_Combiner = Callable[[Sequence[float]], float]


@dataclass(frozen=True, slots=True)
class ScoringOptions:
    window_defaults: Window = EVALUATION_WINDOW_DEFAULTS
    strategy: JudgeStrategy = JudgeStrategy.BATCH


DEFAULT_OPTIONS = ScoringOptions()


@dataclass(frozen=True, slots=True)
class ChannelScore:
    channel: str | None
    weight: int
    score: DimensionScore


@dataclass
class ChannelCache:
    """Channel scores by (dimension, channel, proposition content hash): each channel is judged once."""

    scores: dict[tuple[Dimension, str | None, str], DimensionScore] = field(default_factory=dict)


def _windowed(events: Sequence[Event], pset: PropositionSet, options: ScoringOptions) -> tuple[Event, ...]:
    window = pset.window(options.window_defaults)
    return window_events(events, window.first_n, window.last_n)[0]


def _agent_target(subject: AgentSubject, supplementary: str | None = None) -> ScoringTarget:
    return ScoringTarget(
        target_name=subject.agent_name,
        agent_id=subject.agent_id,
        persona=subject.persona,
        events=subject.trajectory,
        supplementary=supplementary,
    )


def _channel_target(subject: ChannelSubject, supplementary: str | None = None) -> ScoringTarget:
    name = f"the conversation in {subject.label}"
    variables = {"channel_name": subject.channel} if subject.channel else {}
    return ScoringTarget(target_name=name, events=subject.events, variables=variables, supplementary=supplementary)


async def _score(judge: Judge, pset: PropositionSet, target: ScoringTarget, options: ScoringOptions) -> DimensionScore:
    return await score_dimension(
        judge, pset, target, window_defaults=options.window_defaults, strategy=options.strategy
    )


def fluency_evidence(messages: Sequence[str]) -> str:
    """N-gram overlap statistics of an agent's messages (all of them, oldest first).

    Memoised on the messages (a pure function, CPU-bound on long repetitive trajectories): a caller that knows
    an agent's messages are final before scoring (the experiment runner, while the rapporteur consolidates) can
    compute it ahead with :func:`fluency_messages`, off the scoring's critical path."""
    return _fluency_evidence(tuple(messages))


@lru_cache(maxsize=1024)
def _fluency_evidence(messages: tuple[str, ...]) -> str:
    return ngram_stats(list(messages), window=None).render()


def fluency_messages(subject: AgentSubject, pset: PropositionSet, options: ScoringOptions) -> list[str]:
    """The agent's own messages in the set's window: what :func:`score_fluency` computes its evidence over."""
    window = _windowed(subject.trajectory, pset, options)
    return [e.text for e in window if e.kind is EventKind.ACTION and e.agent_id == subject.agent_id]


def convergence_evidence(events: Sequence[Event]) -> str:
    """Vocabulary statistics of a conversation, per speaker."""
    by_speaker: dict[str, list[str]] = {}
    for event in events:
        if event.kind is EventKind.ACTION:
            by_speaker.setdefault(event.agent_name, []).append(event.text)
    return vocabulary_stats(by_speaker).render()


def require_persona(pset: PropositionSet, subject: AgentSubject) -> None:
    """Adherence without a persona would be judged on nothing: a configuration error."""
    if pset.dimension is Dimension.ADHERENCE and pset.include_personas and subject.persona is None:
        raise ConfigurationError(
            f"agent {subject.agent_id!r} has no persona file (personas/{subject.agent_id}.yaml): "
            "adherence judges the agent against its persona"
        )


async def score_adherence(
    judge: Judge, pset: PropositionSet, subject: AgentSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """The agent's messages against its persona (the persona is required when the set shows it)."""
    require_persona(pset, subject)
    return await _score(judge, pset, _agent_target(subject), options)


async def score_consistency(
    judge: Judge, pset: PropositionSet, subject: AgentSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """The agent's later messages against its earlier ones.

    With fewer than two messages there is nothing to be consistent with: the target is given no history, so
    every proposition scores 9 without a judge call (as for a first action at the gate).
    """
    target = _agent_target(subject)
    if len(subject.own_actions()) < 2:
        target = replace(target, events=())
    return await _score(judge, pset, target, options)


async def score_fluency(
    judge: Judge, pset: PropositionSet, subject: AgentSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """The judge primary; n-gram overlap of the agent's windowed messages as supplementary evidence."""
    own = fluency_messages(subject, pset, options)
    return await _score(judge, pset, _agent_target(subject, fluency_evidence(own)), options)


async def score_convergence(
    judge: Judge, pset: PropositionSet, subject: ChannelSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """Voice divergence of one channel (higher = distinct voices), vocabulary statistics as evidence."""
    evidence = convergence_evidence(_windowed(subject.events, pset, options))
    return await _score(judge, pset, _channel_target(subject, evidence), options)


async def score_ideas_quantity(
    judge: Judge, pset: PropositionSet, subject: ChannelSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """The number of distinct ideas the judge enumerates in one channel (a count, not a 0-9 score)."""
    return await _score(judge, pset, _channel_target(subject), options)


AGENT_SCORERS = {
    Dimension.ADHERENCE: score_adherence,
    Dimension.CONSISTENCY: score_consistency,
    Dimension.FLUENCY: score_fluency,
}
CHANNEL_SCORERS = {
    Dimension.CONVERGENCE: score_convergence,
    Dimension.IDEAS_QUANTITY: score_ideas_quantity,
}


async def score_channel(
    judge: Judge,
    pset: PropositionSet,
    subject: ChannelSubject,
    options: ScoringOptions = DEFAULT_OPTIONS,
    cache: ChannelCache | None = None,
) -> DimensionScore:
    """One channel on an environment-level dimension, judged at most once per cache."""
    key = (pset.dimension, subject.channel, content_hash(pset, None))
    if cache is not None and key in cache.scores:
        return cache.scores[key]
    scorer = CHANNEL_SCORERS.get(pset.dimension, score_convergence_like)
    result = await scorer(judge, pset, subject, options)
    if cache is not None:
        cache.scores[key] = result
    return result


async def score_convergence_like(
    judge: Judge, pset: PropositionSet, subject: ChannelSubject, options: ScoringOptions = DEFAULT_OPTIONS
) -> DimensionScore:
    """A channel on any other dimension whose set says ``target_type: environment``."""
    return await _score(judge, pset, _channel_target(subject), options)


async def score_for_agent(
    judge: Judge,
    pset: PropositionSet,
    agent: AgentSubject,
    channels: Sequence[ChannelSubject],
    *,
    options: ScoringOptions = DEFAULT_OPTIONS,
    cache: ChannelCache | None = None,
) -> tuple[DimensionScore, tuple[ChannelScore, ...]]:
    """The agent's score on ``pset``'s dimension, and the channel scores behind it (environment sets)."""
    if pset.target_type is TargetType.AGENT:
        scorer = AGENT_SCORERS.get(pset.dimension, score_consistency)
        return await scorer(judge, pset, agent, options), ()
    if not channels:
        raise ConfigurationError(f"agent {agent.agent_id!r} posted no message: no channel to judge")
    parts = [ChannelScore(s.channel, s.weight, await score_channel(judge, pset, s, options, cache)) for s in channels]
    return combine_channels(pset.dimension, agent.agent_id, parts), tuple(parts)


def combine_channels(dimension: Dimension, agent_id: str, parts: Sequence[ChannelScore]) -> DimensionScore:
    """An agent's environment-level score from its channels (weighted mean; ideas quantity: the sum)."""
    if len(parts) == 1:
        return replace(parts[0].score, agent_id=agent_id)
    counting = dimension is Dimension.IDEAS_QUANTITY
    weights = [1.0 if counting else float(max(p.weight, 1)) for p in parts]
    total = sum(weights)

    def combine(values: Sequence[float]) -> float:
        if counting:
            return float(sum(values))
        return sum(v * w for v, w in zip(values, weights, strict=True)) / total

    propositions = tuple(
        _combine_proposition([p.score.propositions[i] for p in parts], [p.channel for p in parts], combine)
        for i in range(len(parts[0].score.propositions))
    )
    first = parts[0].score
    return DimensionScore(
        dimension=dimension,
        agent_id=agent_id,
        score=combine([p.score.score for p in parts]),
        propositions=propositions,
        judge=first.judge,
        usage=sum((p.score.usage for p in parts), ZERO_USAGE),
        latency_ms=sum(p.score.latency_ms for p in parts),
        calls=sum(p.score.calls for p in parts),
    )


def _combine_proposition(
    scores: Sequence[PropositionScore], channels: Sequence[str | None], combine: _Combiner
) -> PropositionScore:
    raws = [s.raw for s in scores]
    reasoning = " | ".join(f"{c or '(no channel)'}: {s.reasoning}" for s, c in zip(scores, channels, strict=True))
    return replace(
        scores[0],
        raw=None if None in raws else round(combine([float(r or 0) for r in raws])),
        score=combine([s.score for s in scores]),
        skipped=all(s.skipped for s in scores),
        reasoning=reasoning,
        first_raw=None,
        items=tuple(item for s in scores for item in s.items),
    )
