"""An evaluation request waits while the database is away (never dead-lettered for that); a request that
fails for another reason is dead-lettered with it. (The postgres-outage chaos scenario found requests
dead-lettered during an outage.)"""

from __future__ import annotations

import dataclasses
from typing import Any

import asyncpg
import pytest

from engine.retry import Backoff
from engine.settings import Settings
from streams.services import evaluations
from streams.services.evaluations import EvaluationService
from streams.wire.payloads import EvaluationRequest, utcnow


class Event:
    def __init__(self) -> None:
        self.acks = 0

    def ack(self) -> None:
        self.acks += 1


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes, bytes]] = []
        self.letters: list[str] = []
        self.retries: list[str] = []

    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        self.sent.append((topic, key, value))

    async def dead_letter(self, event: Any, reason: str) -> None:
        self.letters.append(reason)

    def count(self, operation: str) -> None:
        self.retries.append(operation)


def _service(recorder: Recorder) -> EvaluationService:
    async def store() -> Any:
        return object()

    return EvaluationService(Settings(), judge=None, store=store, send=recorder.send,  # type: ignore[arg-type]
                             dead_letter=recorder.dead_letter, on_retry=recorder.count)  # fmt: skip


def _request() -> EvaluationRequest:
    return EvaluationRequest(request_id="r-1", agent_id="michael", reason="manual", requested_at=utcnow())


@pytest.fixture(autouse=True)
def _fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = dataclasses.replace(evaluations.DATABASE_AWAY, backoff=Backoff(0.001, 0.002))
    monkeypatch.setattr(evaluations, "DATABASE_AWAY", fast)
    monkeypatch.setattr(evaluations, "summary_of", lambda run: run)
    monkeypatch.setattr(evaluations, "encode", lambda summary: b"summary of " + summary)


async def test_a_request_waits_while_the_database_is_away_then_is_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    failures = [
        asyncpg.CannotConnectNowError("the database system is shutting down"),
        FileNotFoundError(2, "No such file or directory"),
        asyncpg.InternalClientError("cannot switch to state 12; another operation (2) is in progress"),
    ]

    async def evaluate(store: Any, judge: Any, settings: Any, request: EvaluationRequest) -> bytes:
        if failures:
            raise failures.pop(0)
        return request.request_id.encode()

    monkeypatch.setattr(evaluations, "evaluate_request", evaluate)
    recorder, event = Recorder(), Event()
    await _service(recorder).work((event, _request()))
    assert recorder.letters == []
    assert [value for _, _, value in recorder.sent] == [b"summary of r-1"]
    assert recorder.retries == ["evaluation_database"] * 3
    assert event.acks == 1


async def test_a_request_that_fails_for_another_reason_is_dead_lettered(monkeypatch: pytest.MonkeyPatch) -> None:
    async def evaluate(store: Any, judge: Any, settings: Any, request: EvaluationRequest) -> bytes:
        raise asyncpg.DataError("invalid byte sequence for encoding UTF8")  # the data's fault: no retry

    monkeypatch.setattr(evaluations, "evaluate_request", evaluate)
    recorder, event = Recorder(), Event()
    await _service(recorder).work((event, _request()))
    assert recorder.sent == [] and recorder.retries == []
    assert recorder.letters == ["evaluation request not processed: invalid byte sequence for encoding UTF8"]
    assert event.acks == 1
