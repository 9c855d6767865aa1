"""``drift replay --from-database``: re-publish the drafts PostgreSQL recorded in a time window.

The embedded broker keeps topics in memory only: after ``drift up`` restarts, ``drafts`` is empty, but every
judged draft's correction log is still in PostgreSQL. This replay reads the **first attempts** whose correction
logs were written in ``[since, until)`` and publishes them to ``<to-prefix>drafts`` as drafts again: same draft
id (so a gate that already holds the draft's verdict record answers with it, and the sinks' writes stay
idempotent), same agent id and key, run id and text. A committed draft also gets back its agent name, channel
and recipient (from its committed message); the record keeps no channel for a draft that was never committed,
and no inline persona text at all. Retry attempts are counted and left out, as :mod:`streams.client.replay`
does.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from aiokafka import AIOKafkaProducer
from pydantic import ValidationError

from engine.errors import ConfigurationError
from engine.settings import Settings
from streams.client.replay import ReplayCounts, announce_configs
from streams.wire.kafka import client_kwargs, create_topics, start_with_retry
from streams.wire.payloads import Draft, encode
from streams.wire.topics import Topics

Progress = Callable[[int, int], None]


def draft_of(row: dict[str, Any]) -> Draft | None:
    """The first attempt a recorded correction log stands for; None when the record no longer makes a valid
    draft (a text larger than drafts allow today, say)."""
    try:
        return Draft(
            draft_id=row["draft_id"], attempt=1, agent_id=row["agent_id"], text=row["original_text"],
            run_id=row["run_id"], channel=row["channel"], recipient=row["recipient"], agent_name=row["agent_name"],
        )  # fmt: skip
    except ValidationError:
        return None


async def replay_from_database(
    settings: Settings,
    *,
    to_prefix: str,
    since: datetime,
    until: datetime | None = None,
    configs: dict[str, dict[str, Any]] | None = None,
    partitions: int = 3,
    settle_s: float = 2.0,
    progress: Progress | None = None,
) -> ReplayCounts:
    """Publish the first attempts recorded in ``settings``' database in ``[since, until)`` to
    ``<to_prefix>drafts``; ``configs`` as in :func:`streams.client.replay.replay`."""
    from streams.store import Store

    if until is not None and until <= since:
        raise ConfigurationError("--until must be later than --since")
    target = settings.with_(topic_prefix=to_prefix)
    await create_topics(target, partitions=partitions)
    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        rows = await store.recorded_drafts(since, until)
    drafts = [draft_of(row) for row in rows]
    valid = [d for d in drafts if d is not None]

    async def replayed_agents() -> set[str]:
        return {d.agent_id for d in valid}

    configured = await announce_configs(target, configs, replayed_agents, settle_s)
    await _publish(target, Topics(to_prefix).drafts, valid, progress)
    return ReplayCounts(
        read=len(rows), replayed=len(valid), invalid=len(drafts) - len(valid), configured_agents=tuple(configured),
        skipped_retries=sum(int(row["retries"]) for row in rows),
    )  # fmt: skip


async def _publish(target: Settings, topic: str, drafts: list[Draft], progress: Progress | None) -> None:
    producer = AIOKafkaProducer(**client_kwargs(target), linger_ms=5)
    await start_with_retry(producer, target.broker, target.connect_timeout_s)
    try:
        for done, draft in enumerate(drafts, 1):
            await producer.send(topic, encode(draft), key=draft.agent_id.encode())
            if progress is not None:
                progress(done, len(drafts))
        await producer.flush()
    finally:
        await producer.stop()
