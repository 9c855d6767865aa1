"""One result model for every evaluation format's run, stored and shown the same way.

A :class:`FormatRun` is one invocation (``drift metareason run``, ``drift plexus evaluate``, ``drift agentv
run``) over one source file: who answered (``target``), who judged (``judge``), one :class:`ItemResult` per
variant / dataset item / case, and a format-specific ``summary`` (posteriors, agreement metrics, score
statistics). Every field that names a model says what it was, so scripted runs are labelled as such.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

FormatName = Literal["metareason", "plexus", "agentv"]
RunStatus = Literal["running", "completed", "partial", "failed"]


def _now() -> datetime:
    return datetime.now(UTC)


class ItemScore(BaseModel):
    """One scorer's result on one item (an oracle, a Plexus score, an AgentV evaluator)."""

    model_config = ConfigDict(frozen=True)

    name: str
    type: str
    score: float | None = None
    value: str | None = None
    verdict: str | None = None
    weight: float = 1.0
    passed: bool | None = None
    error: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class ItemResult(BaseModel):
    """Everything about one item: the answer it got and every score of it."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    scores: tuple[ItemScore, ...] = ()
    score: float | None = None
    verdict: str | None = None
    answer: str | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    details: dict[str, Any] = Field(default_factory=dict)


class FormatRun(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    format: FormatName
    source: str
    target: str
    judge: str
    status: RunStatus = "completed"
    started_at: datetime = Field(default_factory=_now)
    finished_at: datetime | None = None
    items: tuple[ItemResult, ...] = ()
    summary: dict[str, Any] = Field(default_factory=dict)


class RunRecorder(Protocol):
    """Where finished (or partial) runs go: the PostgreSQL store in the service, a list in tests."""

    async def record(self, run: FormatRun) -> None: ...


class MemoryRecorder:
    """Keeps recorded runs in a list (tests, and commands run without a database)."""

    def __init__(self) -> None:
        self.runs: list[FormatRun] = []

    async def record(self, run: FormatRun) -> None:
        self.runs = [r for r in self.runs if r.run_id != run.run_id] + [run]
