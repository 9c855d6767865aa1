"""A record the payload check would refuse that reaches PostgreSQL anyway (the check bypassed, as an older
producer or another writer might): the sink dead-letters it with the database's reason and writes the rest."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from streams.payloads import Message
from streams.sinks import SinkItem, write_batch
from streams.store import Store
from tests.stack import Stack

pytestmark = pytest.mark.e2e


async def test_the_sink_writes_around_a_record_postgres_refuses(stack: Stack) -> None:
    run = f"r-{uuid.uuid4().hex[:8]}"
    texts = ["one", "two", "paper\u0000clip", "four", "five"]
    valid = [Message(message_id=f"{run}-{i}", agent_id="a", run_id=run, text="x") for i in range(len(texts))]
    # model_construct skips validation: the NUL reaches the database
    messages = [Message.model_construct(**m.model_dump() | {"text": t}) for m, t in zip(valid, texts, strict=True)]
    rejected: list[tuple[Any, str]] = []

    async def reject(record: Any, reason: str) -> None:
        rejected.append((record, reason))

    async with await Store.connect(stack.database.url) as store:
        await write_batch(store.write_messages, "run_messages", [SinkItem(m.message_id, m) for m in messages], reject)
        rows = await store.pool.fetch("SELECT text FROM run_messages WHERE run_id = $1 ORDER BY message_id", run)
    assert [r["text"] for r in rows] == ["one", "two", "four", "five"]
    assert [record for record, _ in rejected] == [f"{run}-2"]
    assert "0x00" in rejected[0][1] or "\\u0000" in rejected[0][1], rejected
