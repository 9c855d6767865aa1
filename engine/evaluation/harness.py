"""The regression harness core: evaluate a cast of agents, with repeats and unit scores.

``drift eval run`` and ``drift eval baseline`` both call :func:`evaluate_cast`; the CLI only parses flags,
builds the judge and writes the output. ``repeats`` re-scores every trajectory K times (test-retest: the
reported score is the mean, the spread is their sd and range); unit scores are computed once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ConfigurationError
from engine.evaluation.hashing import combined_hash, content_hash
from engine.evaluation.run import AgentEvaluation, EvaluationRun, evaluate_agent, gather_all
from engine.evaluation.scorers import DEFAULT_OPTIONS, ChannelCache, ScoringOptions
from engine.evaluation.subjects import AgentSubject, acting_agents, agent_subject
from engine.evaluation.units import message_score, message_units
from engine.judges.base import Judge
from engine.models import Dimension, Event, Persona, TargetType
from engine.personas import load_persona
from engine.propositions import PropositionSet, load_set
from engine.scoring import DimensionScore

ProgressCallback = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class HarnessOptions:
    dimensions: tuple[Dimension, ...]
    propositions_dir: Path
    scoring: ScoringOptions = DEFAULT_OPTIONS
    repeats: int = 1
    unit_scores: bool = True


@dataclass(frozen=True, slots=True)
class Spread:
    """Test-retest spread of the repeated scores of one dimension."""

    scores: tuple[float, ...]
    sd: float
    range: float


@dataclass(frozen=True, slots=True)
class DimensionResult:
    dimension: Dimension
    score: float  # mean over repeats
    detail: DimensionScore  # the first repeat, with per-proposition detail
    pset: PropositionSet
    content_hash: str
    repeat_scores: tuple[float, ...]
    units: tuple[float, ...]  # per-message (agent level) or per-channel (environment level) scores

    @property
    def spread(self) -> Spread | None:
        if len(self.repeat_scores) < 2:
            return None
        from engine.statistics import sd  # numpy, here rather than in every worker's start (the alerts import us)

        values = self.repeat_scores
        return Spread(values, sd(values), max(values) - min(values))


@dataclass(frozen=True, slots=True)
class AgentResult:
    agent_id: str
    agent_name: str
    run: EvaluationRun  # the first repeat
    dimensions: tuple[DimensionResult, ...]

    @property
    def content_hash(self) -> str:
        return combined_hash([d.content_hash for d in self.dimensions])

    def get(self, dimension: Dimension) -> DimensionResult:
        for result in self.dimensions:
            if result.dimension is dimension:
                return result
        raise KeyError(dimension)


def select_agents(events: Sequence[Event], requested: Sequence[str] | None) -> tuple[str, ...]:
    """The requested agents (each must have acted), or every agent with a message."""
    acting = acting_agents(events)
    if not requested:
        if not acting:
            raise ConfigurationError("the conversation holds no agent message to evaluate")
        return acting
    missing = [a for a in requested if a not in acting]
    if missing:
        known = ", ".join(acting) or "none"
        raise ConfigurationError(f"no message from agent(s) {', '.join(missing)} in the input (agents: {known})")
    return tuple(dict.fromkeys(requested))


async def _units(
    judge: Judge,
    pset: PropositionSet,
    evaluation: AgentEvaluation,
    subject: AgentSubject,
    options: ScoringOptions,
) -> tuple[float, ...]:
    if pset.target_type is TargetType.ENVIRONMENT:
        return tuple(part.score.score for part in evaluation.channels.get(pset.dimension, ()))
    units = message_units(subject)
    return tuple(await gather_all([message_score(judge, pset, subject, u, options) for u in units]))


def _dimension_result(
    pset: PropositionSet, persona: Persona | None, evaluations: Sequence[AgentEvaluation], units: tuple[float, ...]
) -> DimensionResult:
    repeats = tuple(e.run.score(pset.dimension).score for e in evaluations)
    return DimensionResult(
        dimension=pset.dimension,
        score=sum(repeats) / len(repeats),
        detail=evaluations[0].run.score(pset.dimension),
        pset=pset,
        content_hash=content_hash(pset, persona),
        repeat_scores=repeats,
        units=units,
    )


async def evaluate_one(
    judge: Judge,
    events: Sequence[Event],
    agent_id: str,
    options: HarnessOptions,
    caches: Sequence[ChannelCache],
) -> AgentResult:
    """One agent: ``len(caches)`` repeats (one channel cache per repeat, shared across agents) + units."""
    directory = options.propositions_dir
    persona = load_persona(directory, agent_id)
    psets = {d: load_set(directory, d, agent_id) for d in options.dimensions}
    evaluations = [
        await evaluate_agent(
            judge,
            agent_id,
            events,
            options.dimensions,
            directory,
            persona=persona,
            options=options.scoring,
            cache=cache,
        )
        for cache in caches
    ]
    first = evaluations[0]
    subject = agent_subject(events, agent_id, persona)
    results = []
    for pset in psets.values():
        units = await _units(judge, pset, first, subject, options.scoring) if options.unit_scores else ()
        results.append(_dimension_result(pset, persona, evaluations, units))
    return AgentResult(agent_id, subject.agent_name, first.run, tuple(results))


async def evaluate_cast(
    judge: Judge,
    events: Sequence[Event],
    agent_ids: Sequence[str],
    options: HarnessOptions,
    progress: ProgressCallback | None = None,
) -> tuple[AgentResult, ...]:
    """Every agent in ``agent_ids`` on ``options.dimensions``; channel scores are shared between agents."""
    if options.repeats < 1:
        raise ConfigurationError(f"--repeats must be at least 1, not {options.repeats}")
    if not options.dimensions:
        raise ConfigurationError("no dimension to evaluate")
    caches = [ChannelCache() for _ in range(options.repeats)]
    results = []
    for agent_id in agent_ids:
        results.append(await evaluate_one(judge, events, agent_id, options, caches))
        if progress is not None:
            progress(agent_id)
    return tuple(results)
