"""Dead-letter rules (issue 10, defects 2 and 4): text PostgreSQL cannot store is refused at the payload
boundary; a sink retries transient database errors, splits a batch around a record the database refuses and
dead-letters it with the database's reason, and dead-letters records it cannot decode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import asyncpg
import orjson
import pytest

from engine.errors import PayloadError
from streams.services.sinks import SinkItem, decode_items, write_batch
from streams.store.errors import classify
from streams.wire.payloads import Draft, Message, decode
from tests.streams.test_lanes import FakeRuntime, Record

NUL_DRAFT = {"draft_id": "d-nul", "agent_id": "michael", "text": "paper\u0000clip"}


def test_a_nul_character_is_refused_at_the_payload_boundary() -> None:
    with pytest.raises(PayloadError, match="NUL"):
        decode(Draft, orjson.dumps(NUL_DRAFT))
    with pytest.raises(PayloadError, match="agent_name holds a NUL"):
        decode(Message, orjson.dumps({"message_id": "m", "agent_id": "a", "agent_name": "\u0000", "text": "hi"}))


async def test_a_nul_draft_is_dead_lettered_before_any_judge_call() -> None:
    rt = FakeRuntime()
    bad = Record(b"michael", orjson.dumps(NUL_DRAFT), offset=3)
    await rt.lane()([bad])
    assert [(r, "NUL" in reason) for r, reason in rt.dead] == [(bad, True)] and rt.acked == [bad]
    assert rt.batch.sent == [] and rt.deps.judge.log.count() == 0  # type: ignore[attr-defined]


@dataclass
class Rejects:
    rejected: list[tuple[Any, str]]

    async def __call__(self, record: Any, reason: str) -> None:
        self.rejected.append((record, reason))


def test_database_errors_are_classified() -> None:
    errors = asyncpg.exceptions
    transient = [errors.SerializationError("x"), errors.TooManyConnectionsError("x"),
                 errors.ConnectionDoesNotExistError("x"), errors.AdminShutdownError("x"),
                 errors.DeadlockDetectedError("x"), ConnectionRefusedError(), OSError(),
                 errors.InternalClientError("another operation is in progress")]  # fmt: skip
    permanent = [errors.CharacterNotInRepertoireError("x"), errors.UniqueViolationError("x"),
                 errors.StringDataRightTruncationError("x"), UnicodeEncodeError("utf-8", "", 0, 1, "x")]  # fmt: skip
    assert [classify(e) for e in transient] == ["transient"] * len(transient)
    assert [classify(e) for e in permanent] == ["permanent"] * len(permanent)
    assert classify(KeyError("bug")) is None


async def test_a_sink_retries_transient_errors_and_splits_around_a_refused_record() -> None:
    written: list[int] = []
    failures = [asyncpg.exceptions.SerializationError("could not serialize access")]

    async def write(values: Any) -> None:
        if failures:
            raise failures.pop()
        if any(v < 0 for v in values):
            raise asyncpg.exceptions.CharacterNotInRepertoireError('invalid byte sequence for encoding "UTF8": 0x00')
        written.extend(values)

    rejects = Rejects([])
    items = [SinkItem(f"record-{v}", v) for v in [1, 2, 3, -4, 5, 6, 7]]
    await write_batch(write, "run_messages", items, rejects)
    assert sorted(written) == [1, 2, 3, 5, 6, 7]
    assert [(r, "0x00" in reason and "22021" in reason) for r, reason in rejects.rejected] == [("record--4", True)]


async def test_a_sink_re_raises_what_is_not_a_database_error() -> None:
    async def write(values: Any) -> None:
        raise KeyError("a bug")

    with pytest.raises(KeyError):
        await write_batch(write, "run_messages", [SinkItem("r", 1)], Rejects([]))


async def test_a_sink_dead_letters_records_it_cannot_decode() -> None:
    rejects = Rejects([])
    good = Record(b"a", orjson.dumps({"message_id": "m1", "agent_id": "a", "text": "hi"}))
    bad = Record(b"a", b"{not json")
    nul = Record(b"a", orjson.dumps({"message_id": "m2", "agent_id": "a", "text": "\u0000"}))
    items = await decode_items(Message, [good, bad, nul], rejects)
    assert [item.record for item in items] == [good]
    assert [r for r, _ in rejects.rejected] == [bad, nul] and "NUL" in rejects.rejected[1][1]
