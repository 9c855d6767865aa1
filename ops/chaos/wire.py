"""What the bad-input scenarios (oversized records, compression codecs, strict payloads) share: one worker whose
judge always passes, records sent in a fixed order through a real producer, and the verdicts and dead letters
read back by id.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import orjson
from aiokafka import AIOKafkaProducer

from ops.chaos.common import Stage, prepare, read_all
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour
from streams.embedded import WorkerProcess
from streams.wire.kafka import client_kwargs
from streams.wire.topics import Topics

Record = tuple[bytes, bytes | None]  # (key, value)


@asynccontextmanager
async def one_worker(stage: Stage, agents: Sequence[str]) -> AsyncIterator[WorkerProcess]:
    """The suitability check on for ``agents`` and one worker judging through a fake that always scores 9."""
    await prepare(stage, agents)
    async with MessagesApiServer(lambda request: Behaviour.auto(value=9)) as judge:
        yield await stage.start(stage.worker(judge.base_url))


def draft(run_id: str, draft_id: str, agent: str, text: str | None = None, **fields: Any) -> Record:
    body = {"draft_id": draft_id, "agent_id": agent, "run_id": run_id, "text": text or f"{agent} says {draft_id}"}
    return agent.encode(), orjson.dumps({**body, **fields})


async def send_in_order(stage: Stage, records: Sequence[Record], **producer_kwargs: Any) -> None:
    """Each record acknowledged before the next is sent, so the topic holds them in this order."""
    producer = AIOKafkaProducer(**client_kwargs(stage.settings), acks="all", **producer_kwargs)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(Topics(stage.prefix).drafts, value, key=key)
    finally:
        await producer.stop()


async def verdicts_by_id(stage: Stage, ids: set[str], timeout_s: float = 40.0) -> dict[str, list[dict[str, Any]]]:
    """Every verdict record of the stage, by draft id, read until each of ``ids`` has one (or time is up)."""

    def complete(records: list[Any]) -> bool:
        return ids <= {orjson.loads(r.value)["draft_id"] for r in records}

    found: dict[str, list[dict[str, Any]]] = {}
    for record in await read_all(stage.settings, Topics(stage.prefix).verdicts, complete, timeout_s):
        verdict = orjson.loads(record.value)
        found.setdefault(verdict["draft_id"], []).append(verdict)
    return found


async def letters(stage: Stage, expected: int, timeout_s: float = 20.0) -> list[dict[str, Any]]:
    """The dead letters of the stage, one per source record (topic, partition, offset), by offset."""

    def distinct(records: list[Any]) -> dict[tuple[str, int, int], dict[str, Any]]:
        decoded = (orjson.loads(r.value) for r in records)
        return {(d["source_topic"], d["partition"], d["offset"]): d for d in decoded}

    records = await read_all(stage.settings, Topics(stage.prefix).dlq, lambda rs: len(distinct(rs)) >= expected,
                             timeout_s)  # fmt: skip
    return sorted(distinct(records).values(), key=lambda d: (d["partition"], d["offset"]))


def deaths(stage: Stage, killed: Sequence[WorkerProcess] = ()) -> int:
    """Workers of the stage that exited without being killed by the scenario."""
    return sum(1 for w in stage.workers if w not in killed and (w.process is None or w.process.poll() is not None))
