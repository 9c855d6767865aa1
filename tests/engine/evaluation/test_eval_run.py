"""Evaluation runs: status transitions through the store protocol, failures, rows, overall score."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engine.errors import ConfigurationError, JudgeError, JudgeOutputError
from engine.evaluation.run import (
    EvaluationRun,
    EvaluationStore,
    RunStatus,
    ScoreRow,
    gather_all,
    overall_score,
    run_evaluation,
)
from engine.judges.base import JudgeRequest, JudgeResult
from engine.models import EVALUATION_DIMENSIONS, Dimension, Event
from engine.scoring import DimensionScore

from .conftest import JudgeFactory, TreeFactory


@dataclass
class FakeStore:
    """Records every call; run ids are run-1, run-2, ..."""

    transitions: list[tuple[str, str]] = field(default_factory=list)
    created: list[tuple[str, tuple[Dimension, ...], bool]] = field(default_factory=list)
    completed: dict[str, tuple[EvaluationRun, list[ScoreRow]]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    async def create_run(self, agent_id: str, dimensions: Sequence[Dimension], is_baseline: bool) -> str:
        run_id = f"run-{len(self.created) + 1}"
        self.created.append((agent_id, tuple(dimensions), is_baseline))
        self.transitions.append((run_id, "pending"))
        return run_id

    async def mark_running(self, run_id: str) -> None:
        self.transitions.append((run_id, "running"))

    async def complete_run(self, run_id: str, run: EvaluationRun, rows: list[ScoreRow]) -> None:
        self.transitions.append((run_id, "completed"))
        self.completed[run_id] = (run, rows)

    async def fail_run(self, run_id: str, reason: str) -> None:
        self.transitions.append((run_id, "failed"))
        self.failures[run_id] = reason


class BrokenJudge:
    name = "broken"

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        raise JudgeOutputError("the answer was not JSON after the repair turn")


def test_fake_store_satisfies_the_protocol() -> None:
    assert isinstance(FakeStore(), EvaluationStore)


async def test_a_successful_run_goes_pending_running_completed(
    proposition_tree: TreeFactory, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    root = proposition_tree(personas=("jim",))
    store = FakeStore()
    judge = scripted(default=6, default_count=3)
    run = await run_evaluation(judge, store, "jim", sample_events, EVALUATION_DIMENSIONS, root, is_baseline=True)
    assert store.transitions == [("run-1", "pending"), ("run-1", "running"), ("run-1", "completed")]
    assert store.created == [("jim", EVALUATION_DIMENSIONS, True)]
    stored, rows = store.completed["run-1"]
    assert stored is run and run.status is RunStatus.COMPLETED and run.error is None
    assert run.sample_size == 6  # Jim's messages: five in #general, one in the DM
    assert run.window_start is not None and run.window_end is not None
    assert run.window_start.isoformat() == "2025-05-12T09:01:10+00:00"
    assert run.window_end.isoformat() == "2025-05-12T09:16:43+00:00"
    assert run.score(Dimension.IDEAS_QUANTITY).score == 6.0  # 3 per channel, two channels
    assert run.overall_score == pytest.approx(6.0)  # the count is not part of the mean
    assert {r.dimension for r in rows} == {d.value for d in EVALUATION_DIMENSIONS}
    assert {r.proposition_id for r in rows} >= {"adh-a", "adh-b", "con-a", "flu-a", "cvg-a", "ideas"}
    ideas_rows = [r for r in rows if r.dimension == "ideas_quantity"]
    assert all(r.context_snippet and "scripted item" in r.context_snippet for r in ideas_rows)
    adherence_rows = [r for r in rows if r.dimension == "adherence"]
    assert all(r.context_snippet and "No Olympics" in r.context_snippet for r in adherence_rows)  # last message


async def test_a_judge_error_fails_the_run_with_its_reason(
    proposition_tree: TreeFactory, sample_events: tuple[Event, ...]
) -> None:
    root = proposition_tree(personas=("jim",))
    store = FakeStore()
    run = await run_evaluation(BrokenJudge(), store, "jim", sample_events, EVALUATION_DIMENSIONS, root)
    assert store.transitions == [("run-1", "pending"), ("run-1", "running"), ("run-1", "failed")]
    assert run.status is RunStatus.FAILED and run.dimension_scores == () and run.overall_score is None
    assert store.failures["run-1"] == "JudgeOutputError: the answer was not JSON after the repair turn"
    assert run.error == store.failures["run-1"]
    assert store.completed == {}


async def test_a_slow_judge_past_the_deadline_fails_the_run(
    proposition_tree: TreeFactory, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    root = proposition_tree(personas=("jim",))
    store = FakeStore()
    slow = scripted(rules=[{"proposition": "flu-*", "value": 7, "delay_s": 5}])
    run = await run_evaluation(slow, store, "jim", sample_events, [Dimension.FLUENCY], root, deadline_s=0.05)
    assert run.status is RunStatus.FAILED
    assert store.transitions[-1] == ("run-1", "failed")
    assert "JudgeTimeout" in store.failures["run-1"] and "0.05 s" in store.failures["run-1"]


async def test_a_configuration_error_fails_the_run_and_propagates(
    proposition_tree: TreeFactory, scripted: JudgeFactory, sample_events: tuple[Event, ...]
) -> None:
    root = proposition_tree(personas=())  # nobody has a persona: adherence cannot be judged
    store = FakeStore()
    with pytest.raises(ConfigurationError, match="no persona file"):
        await run_evaluation(scripted(), store, "jim", sample_events, [Dimension.ADHERENCE], root)
    assert store.transitions == [("run-1", "pending"), ("run-1", "running"), ("run-1", "failed")]
    assert "ConfigurationError" in store.failures["run-1"]


def _dimension_score(dimension: Dimension, score: float) -> DimensionScore:
    return DimensionScore(dimension=dimension, agent_id="a", score=score, propositions=(), judge="test")


def test_overall_score_leaves_the_idea_count_out() -> None:
    scores = [
        _dimension_score(Dimension.ADHERENCE, 6.0),
        _dimension_score(Dimension.FLUENCY, 8.0),
        _dimension_score(Dimension.IDEAS_QUANTITY, 14.0),
    ]
    assert overall_score(scores) == 7.0
    assert overall_score([_dimension_score(Dimension.IDEAS_QUANTITY, 3.0)]) is None


async def test_gather_all_cancels_the_others_and_raises_the_first_failure() -> None:
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 1

    async def failing() -> int:
        await asyncio.sleep(0)
        raise JudgeError("boom")

    with pytest.raises(JudgeError, match="boom"):
        await gather_all([slow(), failing()])
    assert cancelled.is_set()
    assert await gather_all([asyncio.sleep(0, result=2), asyncio.sleep(0, result=3)]) == [2, 3]


def test_runs_are_frozen(tmp_path: Path) -> None:
    run = EvaluationRun(agent_id="a", dimensions=(), status=RunStatus.PENDING)
    with pytest.raises(AttributeError):
        run.status = RunStatus.RUNNING  # type: ignore[misc]
