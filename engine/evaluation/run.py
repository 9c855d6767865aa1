"""Evaluation runs: the frozen result, the persistence contract and the run lifecycle.

A run goes ``pending`` (``EvaluationStore.create_run``) → ``running`` (``mark_running``) → ``completed``
(``complete_run``, with one :class:`ScoreRow` per proposition) or ``failed`` (``fail_run``, with the
reason). A judge failure fails the whole run: no
partial score is ever stored. The Postgres store (``evaluation_runs`` / ``evaluation_scores`` of seed doc 001)
implements :class:`EvaluationStore`; tests use an in-memory fake.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from engine.errors import JudgeError, JudgeTimeout
from engine.evaluation.scorers import (
    DEFAULT_OPTIONS,
    ChannelCache,
    ChannelScore,
    ScoringOptions,
    score_for_agent,
)
from engine.evaluation.subjects import agent_subject, channel_subjects
from engine.judges.base import Judge
from engine.models import ZERO_USAGE, Dimension, Event, Persona, TokenUsage
from engine.personas import load_persona
from engine.propositions import load_set
from engine.scoring import DimensionScore

#: Longest context snippet stored per score row.
SNIPPET_CHARS = 280


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class ScoreRow(NamedTuple):
    """One ``evaluation_scores`` row (seed doc 001): a proposition's score within a run."""

    dimension: str
    proposition_id: str
    score: float
    reasoning: str
    context_snippet: str | None


@dataclass(frozen=True, slots=True)
class EvaluationRun:
    """The result of evaluating one agent. ``overall_score`` is the mean of the 0-9 dimensions only."""

    agent_id: str
    dimensions: tuple[Dimension, ...]
    status: RunStatus
    window_start: datetime | None = None
    window_end: datetime | None = None
    sample_size: int = 0
    overall_score: float | None = None
    token_usage: TokenUsage = ZERO_USAGE
    dimension_scores: tuple[DimensionScore, ...] = ()
    error: str | None = None

    def score(self, dimension: Dimension) -> DimensionScore:
        for item in self.dimension_scores:
            if item.dimension is dimension:
                return item
        raise KeyError(dimension)


@runtime_checkable
class EvaluationStore(Protocol):
    """Where runs are persisted (Postgres in the service)."""

    async def create_run(self, agent_id: str, dimensions: Sequence[Dimension], is_baseline: bool) -> str: ...

    async def mark_running(self, run_id: str) -> None: ...

    async def complete_run(self, run_id: str, run: EvaluationRun, rows: list[ScoreRow]) -> None: ...

    async def fail_run(self, run_id: str, reason: str) -> None: ...


def overall_score(scores: Sequence[DimensionScore]) -> float | None:
    """Mean of the 0-9 dimension scores; ideas quantity (a count) is left out. None when nothing is left."""
    values = [s.score for s in scores if s.dimension is not Dimension.IDEAS_QUANTITY]
    return sum(values) / len(values) if values else None


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def score_rows(scores: Sequence[DimensionScore], snippets: dict[Dimension, str | None]) -> list[ScoreRow]:
    """One row per proposition; ideas quantity rows carry the enumerated ideas as their snippet."""
    rows: list[ScoreRow] = []
    for item in scores:
        for prop in item.propositions:
            snippet = snippets.get(item.dimension)
            if prop.items:
                snippet = _snippet("; ".join(prop.items))
            rows.append(ScoreRow(item.dimension.value, prop.id, prop.score, prop.reasoning, snippet))
    return rows


T = TypeVar("T")


async def gather_all(coroutines: Sequence[Coroutine[Any, Any, T]]) -> list[T]:
    """Run concurrently; on the first failure cancel the others and raise that failure itself."""
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(c) for c in coroutines]
    except BaseExceptionGroup as failures:
        raise _first_leaf(failures) from None
    return [task.result() for task in tasks]


def _first_leaf(group: BaseExceptionGroup[BaseException]) -> BaseException:
    first = group.exceptions[0]
    return _first_leaf(first) if isinstance(first, BaseExceptionGroup) else first


@dataclass(frozen=True, slots=True)
class AgentEvaluation:
    """Scores of one agent plus what the report needs beside the run (channel breakdown, snippets)."""

    run: EvaluationRun
    channels: dict[Dimension, tuple[ChannelScore, ...]]
    snippets: dict[Dimension, str | None]


async def evaluate_agent(
    judge: Judge,
    agent_id: str,
    events: Sequence[Event],
    dims: Sequence[Dimension],
    propositions_dir: Path,
    *,
    persona: Persona | None = None,
    options: ScoringOptions = DEFAULT_OPTIONS,
    cache: ChannelCache | None = None,
) -> AgentEvaluation:
    """Score ``agent_id`` on ``dims`` (concurrently); raises on judge or configuration errors."""
    persona = persona if persona is not None else load_persona(propositions_dir, agent_id)
    subject = agent_subject(events, agent_id, persona)
    channels = channel_subjects(events, agent_id)
    cache = cache if cache is not None else ChannelCache()
    psets = [load_set(propositions_dir, d, agent_id) for d in dims]
    results = await gather_all(
        [score_for_agent(judge, p, subject, channels, options=options, cache=cache) for p in psets]
    )
    scores = tuple(score for score, _ in results)
    own = subject.own_actions()
    stamps = [e.ts for e in own if e.ts is not None]
    last_text = _snippet(own[-1].text) if own else None
    snippets: dict[Dimension, str | None] = {}
    for dim, (_, parts) in zip(dims, results, strict=True):
        snippets[dim] = f"{parts[-1].channel}: {last_text}" if parts and last_text else last_text
    run = EvaluationRun(
        agent_id=agent_id,
        dimensions=tuple(dims),
        status=RunStatus.COMPLETED,
        window_start=min(stamps, default=None),
        window_end=max(stamps, default=None),
        sample_size=len(own),
        overall_score=overall_score(scores),
        token_usage=sum((s.usage for s in scores), ZERO_USAGE),
        dimension_scores=scores,
    )
    return AgentEvaluation(run, {d: parts for d, (_, parts) in zip(dims, results, strict=True)}, snippets)


async def run_evaluation(
    judge: Judge,
    store: EvaluationStore,
    agent_id: str,
    events: Sequence[Event],
    dims: Sequence[Dimension],
    propositions_dir: Path,
    *,
    is_baseline: bool = False,
    persona: Persona | None = None,
    options: ScoringOptions = DEFAULT_OPTIONS,
    deadline_s: float | None = None,
) -> EvaluationRun:
    """Evaluate one agent through the pending → running → completed | failed lifecycle.

    A judge failure (any :class:`JudgeError`, including passing ``deadline_s`` for the whole run) fails the
    run with the reason and returns the failed run. Any other error also fails the run, then propagates.
    """
    run_id = await store.create_run(agent_id, tuple(dims), is_baseline)
    await store.mark_running(run_id)
    try:
        async with asyncio.timeout(deadline_s):
            evaluation = await evaluate_agent(
                judge, agent_id, events, dims, propositions_dir, persona=persona, options=options
            )
    except TimeoutError:
        return await _failed(store, run_id, agent_id, dims, JudgeTimeout(f"run deadline of {deadline_s} s passed"))
    except JudgeError as error:
        return await _failed(store, run_id, agent_id, dims, error)
    except Exception as error:
        await store.fail_run(run_id, f"{type(error).__name__}: {error}")
        raise
    run = evaluation.run
    await store.complete_run(run_id, run, score_rows(run.dimension_scores, evaluation.snippets))
    return run


async def _failed(
    store: EvaluationStore, run_id: str, agent_id: str, dims: Sequence[Dimension], error: JudgeError
) -> EvaluationRun:
    reason = f"{type(error).__name__}: {error}"
    await store.fail_run(run_id, reason)
    return EvaluationRun(agent_id=agent_id, dimensions=tuple(dims), status=RunStatus.FAILED, error=reason)
