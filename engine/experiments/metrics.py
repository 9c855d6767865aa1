"""Scoring one finished session of an experiment: Table 1's metrics through the proposition engine.

* **Agent metrics**, one value per (agent, session): persona adherence (``hard_persona_adherence`` when the
  scenario's ``evaluation.hard_adherence`` says so, else ``persona_adherence``), ``self_consistency`` and
  ``fluency`` — the ``adherence``, ``consistency`` and ``fluency`` dimensions judged on the agent's trajectory.
* **Environment metrics**, one value per session: ``divergence`` (our ``convergence`` dimension: higher =
  distinct voices), and the quantity of ideas (brainstorming) or opinions (debate) — the count of the
  rapporteur's extracted list (``ideas_qty`` / ``opinions_qty``, the paper's measure) and, for ideas, the
  judge's enumeration beside it (``ideas_qty_judge``).

Every proposition gets the scenario's ``double_check`` setting. Each subject (agent, or the session for the
environment) becomes one :class:`~engine.evaluation.run.EvaluationRun` with its per-proposition rows, which the
store keeps in ``evaluation_runs``/``evaluation_scores``. Values are clustered by persona id (agent metrics:
the same persona takes part in many sessions) or by group (environment metrics).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.evaluation.run import EvaluationRun, RunStatus, ScoreRow, gather_all, overall_score, score_rows
from engine.evaluation.scorers import (
    AGENT_SCORERS,
    ScoringOptions,
    convergence_evidence,
    fluency_evidence,
    fluency_messages,
)
from engine.evaluation.subjects import agent_subject, channel_trajectory
from engine.judges.base import Judge
from engine.models import ZERO_USAGE, Dimension, Event, EventKind, Persona, TokenUsage
from engine.propositions import EVALUATION_WINDOW_DEFAULTS, PropositionSet, load_set
from engine.scoring import DimensionScore, JudgeStrategy, ScoringTarget, score_dimension
from engine.simulation.scenario import Scenario
from engine.windows import window_events

AGENT_METRICS = {Dimension.CONSISTENCY: "self_consistency", Dimension.FLUENCY: "fluency"}


@dataclass(frozen=True, slots=True)
class MetricSets:
    """The proposition sets an experiment scores with, adjusted to the scenario's evaluation settings."""

    agent: Mapping[Dimension, PropositionSet]
    environment: Mapping[Dimension, PropositionSet]
    adherence_metric: str
    items: str  # "ideas" | "opinions"

    def metric(self, dimension: Dimension) -> str:
        if dimension is Dimension.ADHERENCE:
            return self.adherence_metric
        if dimension is Dimension.CONVERGENCE:
            return "divergence"
        if dimension is Dimension.IDEAS_QUANTITY:
            return "ideas_qty_judge"
        return AGENT_METRICS[dimension]

    @property
    def count_metric(self) -> str:
        return f"{self.items}_qty"

    def metric_names(self) -> list[str]:
        names = [self.metric(d) for d in (*self.agent, *self.environment)]
        return [*names, self.count_metric]


def _adjusted(pset: PropositionSet, *, double_check: bool, hard: bool | None = None) -> PropositionSet:
    props = tuple(p.model_copy(update={"double_check": double_check}) for p in pset.propositions)
    return pset.model_copy(update={"propositions": props, "hard": pset.hard if hard is None else hard})


def metric_sets(scenario: Scenario, propositions_dir: Path) -> MetricSets:
    """The default sets of ``propositions_dir`` (every session agent is new, so no per-agent files apply)."""
    spec = scenario.evaluation
    agent = {
        d: _adjusted(load_set(propositions_dir, d, None), double_check=spec.double_check,
                     hard=spec.hard_adherence if d is Dimension.ADHERENCE else None)
        for d in (Dimension.ADHERENCE, Dimension.CONSISTENCY, Dimension.FLUENCY)
    }  # fmt: skip
    env_dims = [Dimension.CONVERGENCE] + ([Dimension.IDEAS_QUANTITY] if scenario.extraction.items == "ideas" else [])
    environment = {d: _adjusted(load_set(propositions_dir, d, None), double_check=spec.double_check) for d in env_dims}
    adherence = "hard_persona_adherence" if spec.hard_adherence else "persona_adherence"
    return MetricSets(agent, environment, adherence, scenario.extraction.items)


@dataclass(frozen=True, slots=True)
class SessionInput:
    """A finished session as the scorer needs it (built from the runner's session result)."""

    run_id: str
    group: str
    channel: str
    events: tuple[Event, ...]
    #: session agent id → (persona id, persona)
    agents: Mapping[str, tuple[str, Persona]]
    extracted: int | None


@dataclass(frozen=True, slots=True)
class MetricValue:
    metric: str
    subject: str  # the session agent id, or the session's run id for environment metrics
    cluster: str  # the persona id, or the group for environment metrics
    value: float


@dataclass(frozen=True, slots=True)
class SubjectEvaluation:
    subject: str
    name: str
    run: EvaluationRun
    rows: tuple[ScoreRow, ...]


@dataclass(frozen=True, slots=True)
class SessionScores:
    values: tuple[MetricValue, ...]
    evaluations: tuple[SubjectEvaluation, ...]
    usage: TokenUsage
    calls: int


def _run(subject: str, scores: Sequence[DimensionScore], events: Sequence[Event]) -> EvaluationRun:
    stamps = [e.ts for e in events if e.ts is not None]
    return EvaluationRun(
        agent_id=subject, dimensions=tuple(s.dimension for s in scores), status=RunStatus.COMPLETED,
        window_start=min(stamps, default=None), window_end=max(stamps, default=None),
        sample_size=sum(1 for e in events if e.kind is EventKind.ACTION), overall_score=overall_score(scores),
        token_usage=sum((s.usage for s in scores), ZERO_USAGE), dimension_scores=tuple(scores),
    )  # fmt: skip


async def _score_agent(
    judge: Judge, sets: MetricSets, session: SessionInput, agent_id: str, options: ScoringOptions
) -> tuple[list[MetricValue], SubjectEvaluation]:
    persona_id, persona = session.agents[agent_id]
    subject = agent_subject(session.events, agent_id, persona)
    scores = await gather_all([AGENT_SCORERS[d](judge, p, subject, options) for d, p in sets.agent.items()])
    values = [MetricValue(sets.metric(s.dimension), agent_id, persona_id, s.score) for s in scores]
    run = _run(agent_id, scores, subject.own_actions())
    return values, SubjectEvaluation(agent_id, persona.name, run, tuple(score_rows(scores, {})))


async def _score_environment(
    judge: Judge, sets: MetricSets, session: SessionInput, options: ScoringOptions
) -> tuple[list[MetricValue], SubjectEvaluation]:
    events = channel_trajectory(session.events, session.channel)
    name = f"the conversation of session {session.run_id} in {session.channel}"

    def target(pset: PropositionSet) -> ScoringTarget:
        window = pset.window(options.window_defaults)
        evidence = None
        if pset.dimension is Dimension.CONVERGENCE:
            evidence = convergence_evidence(window_events(events, window.first_n, window.last_n)[0])
        return ScoringTarget(target_name=name, events=events, variables={"channel_name": session.channel},
                             supplementary=evidence)  # fmt: skip

    scores = await gather_all([
        score_dimension(judge, p, target(p), window_defaults=options.window_defaults, strategy=options.strategy)
        for p in sets.environment.values()
    ])  # fmt: skip
    values = [MetricValue(sets.metric(s.dimension), session.run_id, session.group, s.score) for s in scores]
    if session.extracted is not None:
        values.append(MetricValue(sets.count_metric, session.run_id, session.group, float(session.extracted)))
    run = _run(session.run_id, scores, events)
    return values, SubjectEvaluation(session.run_id, "session environment", run, tuple(score_rows(scores, {})))


def prepare_evidence(sets: MetricSets, session: SessionInput) -> int:
    """Compute ahead (memoised, see :func:`engine.evaluation.scorers.fluency_evidence`) the agents' fluency
    evidence over the conversation so far; :func:`score_session` then finds it for every agent whose windowed
    messages did not change. Pure CPU, no judge call; returns the number of agents prepared."""
    pset = sets.agent.get(Dimension.FLUENCY)
    if pset is None:
        return 0
    options = ScoringOptions(window_defaults=EVALUATION_WINDOW_DEFAULTS)
    for agent_id, (_, persona) in session.agents.items():
        fluency_evidence(fluency_messages(agent_subject(session.events, agent_id, persona), pset, options))
    return len(session.agents)


async def score_session(
    judge: Judge, sets: MetricSets, session: SessionInput, strategy: JudgeStrategy = JudgeStrategy.INDIVIDUAL
) -> SessionScores:
    """Every metric of one session; raises on a judge failure (the session is then redone, never half-stored)."""
    options = ScoringOptions(window_defaults=EVALUATION_WINDOW_DEFAULTS, strategy=strategy)
    parts = await gather_all([
        *(_score_agent(judge, sets, session, agent_id, options) for agent_id in session.agents),
        _score_environment(judge, sets, session, options),
    ])  # fmt: skip
    values = tuple(v for part_values, _ in parts for v in part_values)
    evaluations = tuple(evaluation for _, evaluation in parts)
    scores = [s for e in evaluations for s in e.run.dimension_scores]
    usage = sum((s.usage for s in scores), ZERO_USAGE)
    return SessionScores(values, evaluations, usage, sum(s.calls for s in scores))
