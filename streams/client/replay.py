"""``drift replay``: re-publish recorded drafts into another topic prefix, for a treatment/control comparison.

A second gate (its own prefix, ideally its own database, another agent configuration) then judges exactly
the traffic the first gate saw. Records are read group-less from every partition of the source topic, from
the beginning up to the end offsets taken at start (traffic that arrives during the replay is left alone);
those whose record timestamp lies in ``[since, until)`` and that are valid **first attempts** are sent to
``<prefix>drafts`` with their key and value unchanged (new record timestamps). Retry attempts (``attempt`` >
1) are counted and left out: they answered the first gate's feedback, and the second gate writes its own
feedback for the drafts it judges (replaying them would commit the same message twice).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.structs import ConsumerRecord

from engine.config_changes import check_config_keys
from engine.errors import ConfigurationError, PayloadError, ServiceError
from engine.models import AgentConfig
from engine.propositions.yamlsource import UnreadableFile, read_capped
from engine.settings import Settings
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import client_kwargs, create_topics, start_with_retry
from streams.wire.payloads import Draft, decode
from streams.wire.topics import Topics

ALL_AGENTS = "*"
IDLE_TIMEOUT_S = 15.0
_RELATIVE = re.compile(r"^-\s*(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ReplayCounts:
    """What a replay did: every record read is replayed, out of the window, or invalid."""

    read: int = 0
    replayed: int = 0
    skipped_out_of_window: int = 0
    invalid: int = 0
    configured_agents: tuple[str, ...] = ()
    skipped_retries: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "read": self.read,
            "replayed": self.replayed,
            "skipped_out_of_window": self.skipped_out_of_window,
            "invalid": self.invalid,
            "skipped_retries": self.skipped_retries,
            "configured_agents": list(self.configured_agents),
        }


def parse_time(text: str, *, now: datetime | None = None) -> datetime:
    """RFC 3339 (``2025-06-01T12:00:00Z``; a time without offset is UTC), ``now``, or relative to now:
    ``-30s``, ``-15m``, ``-2h``, ``-1d``, ``-1w``."""
    raw = text.strip()
    current = now or datetime.now(UTC)
    if raw.lower() == "now":
        return current
    relative = _RELATIVE.match(raw)
    if relative:
        return current - timedelta(**{_UNITS[relative.group(2)]: float(relative.group(1))})
    try:
        parsed = datetime.fromisoformat(raw.replace("z", "Z"))
    except ValueError:
        raise ConfigurationError(
            f"cannot read time {text!r}: use RFC 3339 (2025-06-01T12:00:00Z) or a relative time like -15m, -2h"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def load_agent_configs(path: Path) -> dict[str, dict[str, Any]]:
    """Read ``agent_id: {key: value}`` (``"*"`` for every replayed agent) and validate every change."""
    try:
        data = yaml.safe_load(read_capped(path).decode("utf-8"))
    except UnreadableFile as exc:
        raise ConfigurationError(f"{path}: {exc}") from None
    except UnicodeDecodeError:
        raise ConfigurationError(f"{path}: the file is not valid UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise ConfigurationError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not data:
        raise ConfigurationError(f"{path}: expected a mapping of agent id to configuration changes")
    configs: dict[str, dict[str, Any]] = {}
    for agent, changes in data.items():
        if not isinstance(changes, dict):
            raise ConfigurationError(f"{path}: {agent}: expected a mapping of configuration keys to values")
        try:
            check_config_keys(changes)
            AgentConfig().with_changes(changes)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {agent}: {exc}") from None
        except ValueError as exc:
            raise ConfigurationError(f"{path}: {agent}: {_first_problem(exc)}") from None
        configs[str(agent)] = dict(changes)
    return configs


def _first_problem(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(exc)


def changes_for(configs: dict[str, dict[str, Any]], agent: str) -> dict[str, Any]:
    """The changes for one agent: the ``"*"`` entry, overridden by the agent's own entry."""
    return {**configs.get(ALL_AGENTS, {}), **configs.get(agent, {})}


async def apply_configs(target: Settings, configs: dict[str, dict[str, Any]], agents: Iterable[str]) -> list[str]:
    """Store and announce (on the target prefix) the configuration of each agent; return the agents changed."""
    from streams.client.admin import publish_config
    from streams.store import Store

    changed: list[str] = []
    async with await Store.connect(target.database(), timeout_s=target.connect_timeout_s) as store:
        for agent in sorted(set(agents)):
            changes = changes_for(configs, agent)
            if not changes:
                continue
            config = await store.set_config(agent, changes)
            await publish_config(target, agent, config.model_dump())
            changed.append(agent)
    return changed


async def announce_configs(
    target: Settings,
    configs: dict[str, dict[str, Any]] | None,
    replayed_agents: Callable[[], Awaitable[set[str]]],
    settle_s: float,
) -> list[str]:
    """Apply ``configs`` before a replay: to the agents they name and, for ``"*"``, to every agent of
    ``replayed_agents()``; then wait ``settle_s`` so running target workers have applied them. Returns the agents
    changed."""
    if not configs:
        return []
    agents = {a for a in configs if a != ALL_AGENTS}
    if ALL_AGENTS in configs:
        agents |= await replayed_agents()
    configured = await apply_configs(target, configs, agents)
    await asyncio.sleep(settle_s if configured else 0.0)
    return configured


@dataclass
class Window:
    since_ms: int
    until_ms: int | None

    def contains(self, timestamp_ms: int) -> bool:
        return timestamp_ms >= self.since_ms and (self.until_ms is None or timestamp_ms < self.until_ms)


class Disposition(StrEnum):
    REPLAY = "replay"
    OUT_OF_WINDOW = "out of window"
    INVALID = "invalid"
    RETRY = "retry"


def disposition(record: ConsumerRecord[bytes, bytes], window: Window) -> Disposition:
    """What the replay does with one source record."""
    if not window.contains(record.timestamp):
        return Disposition.OUT_OF_WINDOW
    draft = _valid_draft(record)
    if draft is None:
        return Disposition.INVALID
    return Disposition.RETRY if draft.attempt > 1 else Disposition.REPLAY


def _valid_draft(record: ConsumerRecord[bytes, bytes]) -> Draft | None:
    try:
        draft = decode(Draft, record.value)
    except PayloadError:
        return None
    key = record.key.decode("utf-8", "replace") if record.key is not None else None
    return draft if key == draft.agent_id else None  # the gate dead-letters a key that is not the agent id


class _Source:
    """The source topic, read from its beginning to the end offsets taken when it was opened."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings, self.topic = settings, topic
        self.consumer = kafka_consumer(settings, enable_auto_commit=False)
        self.begin: dict[TopicPartition, int] = {}
        self.end: dict[TopicPartition, int] = {}

    async def open(self) -> None:
        await start_with_retry(self.consumer, self.settings.broker, self.settings.connect_timeout_s)
        if self.topic not in await self.consumer.topics():
            raise ConfigurationError(f"topic {self.topic} does not exist")
        partitions = [
            TopicPartition(self.topic, p) for p in sorted(self.consumer.partitions_for_topic(self.topic) or ())
        ]
        self.consumer.assign(partitions)
        self.begin = await self.consumer.beginning_offsets(partitions)
        self.end = await self.consumer.end_offsets(partitions)

    @property
    def total(self) -> int:
        return sum(self.end[tp] - self.begin[tp] for tp in self.end)

    async def records(self) -> Any:
        """Yield every record between the begin and end offsets, partition batches as they come."""
        pending = {tp for tp in self.end if self.end[tp] > self.begin[tp]}
        for tp in self.end:
            self.consumer.seek(tp, self.begin[tp])
        loop = asyncio.get_running_loop()
        last_progress = loop.time()
        while pending:
            batch = await self.consumer.getmany(*pending, timeout_ms=300)
            if batch:
                last_progress = loop.time()
            elif loop.time() - last_progress > IDLE_TIMEOUT_S:
                raise ServiceError(f"replay stalled: no records from {self.topic} for {IDLE_TIMEOUT_S:g}s")
            for tp, messages in batch.items():
                for message in messages:
                    if message.offset < self.end[tp]:
                        yield message
                if await self.consumer.position(tp) >= self.end[tp]:
                    pending.discard(tp)

    async def close(self) -> None:
        await self.consumer.stop()


async def _agents_in_window(source: _Source, window: Window) -> set[str]:
    agents: set[str] = set()
    async for record in source.records():
        if window.contains(record.timestamp):
            draft = _valid_draft(record)
            if draft is not None:
                agents.add(draft.agent_id)
    return agents


async def replay(
    source_settings: Settings,
    *,
    from_topic: str,
    to_prefix: str,
    since: datetime,
    until: datetime | None = None,
    configs: dict[str, dict[str, Any]] | None = None,
    partitions: int = 3,
    settle_s: float = 2.0,
    progress: Progress | None = None,
) -> ReplayCounts:
    """Replay the drafts of ``from_topic`` recorded in ``[since, until)`` into ``<to_prefix>drafts``.

    ``configs`` (agent id or ``"*"`` → configuration changes) is stored in the database of
    ``source_settings`` and announced on the target prefix first; then the replay waits ``settle_s`` so
    running target workers have applied it before the first draft arrives."""
    target = source_settings.with_(topic_prefix=to_prefix)
    destination = Topics(to_prefix).drafts
    if destination == from_topic:
        raise ConfigurationError(f"refusing to replay {from_topic} into itself: choose another --to-prefix")
    if until is not None and until <= since:
        raise ConfigurationError("--until must be later than --since")
    await create_topics(target, partitions=partitions)
    window = Window(int(since.timestamp() * 1000), None if until is None else int(until.timestamp() * 1000))
    source = _Source(source_settings, from_topic)
    await source.open()
    try:
        configured = await announce_configs(target, configs, lambda: _agents_in_window(source, window), settle_s)
        counts = await _copy(source, target, destination, window, progress)
    finally:
        await source.close()
    return ReplayCounts(
        read=sum(counts.values()),
        replayed=counts[Disposition.REPLAY],
        skipped_out_of_window=counts[Disposition.OUT_OF_WINDOW],
        invalid=counts[Disposition.INVALID],
        configured_agents=tuple(configured),
        skipped_retries=counts[Disposition.RETRY],
    )


async def _copy(
    source: _Source, target: Settings, destination: str, window: Window, progress: Progress | None
) -> dict[Disposition, int]:
    producer = AIOKafkaProducer(**client_kwargs(target), linger_ms=5)
    await start_with_retry(producer, target.broker, target.connect_timeout_s)
    seen = dict.fromkeys(Disposition, 0)
    total = source.total
    try:
        async for record in source.records():
            what = disposition(record, window)
            seen[what] += 1
            if what is Disposition.REPLAY:
                await producer.send(destination, record.value, key=record.key)
            if progress is not None:
                progress(sum(seen.values()), total)
        await producer.flush()
    finally:
        await producer.stop()
    return seen
