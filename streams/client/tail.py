"""``drift tail``: follow a gate output topic, one readable line (or one raw JSON line) per record.

The consumer has no group: it is assigned every partition of the topic and starts at the end (or at the
beginning with ``from_beginning``), so tailing never disturbs the workers' offsets and is ready at once.
Records of several partitions that arrive in one fetch are shown in timestamp order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from pydantic import BaseModel
from rich.text import Text

from engine.display import score_text
from engine.errors import ConfigurationError, PayloadError
from engine.settings import Settings
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import start_with_retry
from streams.wire.payloads import Alert, CorrectionLog, DeadLetter, Directives, Message, ScoreOut, Verdict, decode

#: ``drift tail KIND``: the topic (without prefix) and the payload model of each kind.
TAIL_KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "verdicts": ("verdicts", Verdict),
    "corrections": ("correction-logs", CorrectionLog),
    "messages": ("messages", Message),
    "directives": ("directives", Directives),
    "dlq": ("dlq", DeadLetter),
    "alerts": ("alerts", Alert),
}
PREVIEW_CHARS = 60
DECISION_STYLE = {"commit": "green", "retry": "yellow", "reject": "bold red"}


@dataclass(frozen=True)
class TailRecord:
    """One record of a tailed topic: the raw JSON object and, when it validates, the payload model."""

    kind: str
    partition: int
    offset: int
    timestamp_ms: int
    key: str | None
    data: dict[str, Any] | None
    payload: BaseModel | None
    error: str | None = None

    @property
    def agent_id(self) -> str | None:
        agent = self.data.get("agent_id") if self.data else None
        return agent if isinstance(agent, str) else self.key

    def json_line(self) -> str | None:
        """The record as one compact JSON line (None when the value is not a JSON object)."""
        return None if self.data is None else orjson.dumps(self.data).decode()


def topic_for(settings: Settings, kind: str) -> str:
    if kind not in TAIL_KINDS:
        raise ConfigurationError(f"cannot tail {kind!r}: choose one of {', '.join(TAIL_KINDS)}")
    return settings.topic(TAIL_KINDS[kind][0])


def to_record(
    kind: str, partition: int, offset: int, timestamp_ms: int, key: bytes | None, value: bytes | None
) -> TailRecord:
    """Decode one Kafka record; a record that does not validate keeps its raw JSON and an error."""
    model = TAIL_KINDS[kind][1]
    text_key = key.decode("utf-8", "replace") if key is not None else None
    data: dict[str, Any] | None = None
    try:
        loaded = orjson.loads(value or b"")
        data = loaded if isinstance(loaded, dict) else None
        payload: BaseModel | None = decode(model, value)
        error = None
    except (orjson.JSONDecodeError, PayloadError) as exc:
        payload, error = None, str(exc)
    return TailRecord(kind, partition, offset, timestamp_ms, text_key, data, payload, error)


def matches(record: TailRecord, agent: str | None) -> bool:
    """Does ``record`` concern ``agent``? (directives: any directive addressed to the agent)."""
    if agent is None:
        return True
    if isinstance(record.payload, Directives):
        return any(d.agent_id == agent for d in record.payload.directives)
    return record.agent_id == agent


async def tail(
    settings: Settings,
    kind: str,
    on_record: Callable[[TailRecord], bool | None],
    *,
    agent: str | None = None,
    from_beginning: bool = False,
    limit: int | None = None,
    on_ready: Callable[[], None] | None = None,
) -> int:
    """Follow the topic of ``kind`` and call ``on_record`` for each matching record until ``limit`` records
    were shown, ``on_record`` returns False, or the task is cancelled. ``on_ready`` is called once the start
    positions are fixed: every record sent after it will be seen. Returns the number shown."""
    topic = topic_for(settings, kind)
    consumer = kafka_consumer(settings, enable_auto_commit=False)
    await start_with_retry(consumer, settings.broker, settings.connect_timeout_s)
    shown = 0
    try:
        partitions = await _assign(consumer, topic, from_beginning)
        if on_ready is not None:
            on_ready()
        while limit is None or shown < limit:
            batch = await consumer.getmany(*partitions, timeout_ms=500)
            records = sorted(
                (
                    to_record(kind, m.partition, m.offset, m.timestamp, m.key, m.value)
                    for ms in batch.values()
                    for m in ms
                ),
                key=lambda r: (r.timestamp_ms, r.partition, r.offset),
            )
            for record in records:
                if not matches(record, agent):
                    continue
                shown += 1
                if on_record(record) is False or (limit is not None and shown >= limit):
                    return shown
    finally:
        await consumer.stop()
    return shown


async def _assign(consumer: AIOKafkaConsumer, topic: str, from_beginning: bool) -> list[TopicPartition]:
    known = await consumer.topics()
    if topic not in known:
        raise ConfigurationError(f"topic {topic} does not exist: run 'drift topics create' (prefix?)")
    partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or set())]
    consumer.assign(partitions)
    if from_beginning:
        await consumer.seek_to_beginning(*partitions)
    else:
        await consumer.seek_to_end(*partitions)
    for tp in partitions:
        await consumer.position(tp)  # resolve now: records sent after this call are shown
    return partitions


# -- rendering ------------------------------------------------------------------------------------------


def _clock(timestamp_ms: int) -> str:
    return datetime.fromtimestamp(timestamp_ms / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _score(line: Text, name: str, score: ScoreOut) -> None:
    if score.timed_out:
        line.append(f" {name} timeout", style="yellow")
        return
    mark, style = ("✓", "green") if score.passed else ("✗", "red")
    line.append(f" {name} {score_text(score.score)}{mark}", style=style)


def _verdict(line: Text, v: Verdict) -> None:
    line.append(f"{v.decision}/{v.outcome}", style=DECISION_STYLE.get(v.decision, ""))
    line.append(f" #{v.attempt}")
    for name, score in v.scores.items():
        _score(line, name, score)
    if v.similarity is not None:
        style = "green" if v.similarity.passed else "red"
        line.append(f" similarity {v.similarity.score:.2f}{'✓' if v.similarity.passed else '✗'}", style=style)
    line.append(f"  {v.latency_ms:.0f}ms", style="dim")
    line.append(f"  {_preview(v.text)!r}", style="dim")


def _correction(line: Text, c: CorrectionLog) -> None:
    line.append(f"{c.decision}/{c.outcome}", style=DECISION_STYLE.get(c.decision, ""))
    line.append(f" #{c.attempt_number} draft {c.draft_id}")
    for name, detail in c.dimension_scores.items():
        timed_out = bool(detail.get("timed_out"))
        line.append(f" {name} {'timeout' if timed_out else score_text(detail.get('score', 0.0))}", style="cyan")
    line.append(f" total {score_text(c.total_score)}")
    if c.similarity_score is not None:
        line.append(f" similarity {c.similarity_score:.2f}")
    line.append(f"  {c.latency_ms:.0f}ms", style="dim")


def _message(line: Text, m: Message) -> None:
    line.append(f"{m.kind}/{m.origin}", style="cyan" if m.origin == "gate" else "magenta")
    if m.channel:
        line.append(f" #{m.channel}")
    line.append(f"  {_preview(m.text)!r}")


def _directives(line: Text, d: Directives, agent: str | None) -> None:
    shown = [x for x in d.directives if agent is None or x.agent_id == agent]
    line.append(f"run {d.run_id} step {d.step}: ")
    if not shown:
        line.append("no directives", style="dim")
    for i, item in enumerate(shown):
        line.append("; " if i else "")
        line.append(f"{item.agent_id} {item.kind}", style="yellow")
        line.append(f" {_preview(item.text)!r}")
    line.append(f"  {d.latency_ms:.0f}ms", style="dim")


def _dead_letter(line: Text, d: DeadLetter) -> None:
    line.append("dead letter", style="bold red")
    line.append(f" {d.source_topic} p{d.partition}@{d.offset}: ")
    line.append(d.error, style="red")


def _alert(line: Text, a: Alert) -> None:
    line.append("revised: " if a.revised else "alert ", style="bold red" if a.cause == "agent" else "bold yellow")
    line.append(f"{a.dimension} ({a.source}) {a.direction} from {a.reference:.2f}")
    line.append(f" cause {a.cause}", style="bold")
    line.append(f"  evidence {a.evidence:.1f} at observation {a.observation}  id {a.alert_id}", style="dim")


def render(record: TailRecord, agent: str | None = None) -> Text:
    """One coloured line: time, agent, then the kind-specific summary."""
    line = Text()
    line.append(_clock(record.timestamp_ms) + " ", style="dim")
    payload = record.payload
    if payload is None:
        line.append(f"p{record.partition}@{record.offset} invalid record: {record.error}", style="red")
        return line
    if not isinstance(payload, Directives):
        line.append(f"{record.agent_id} ", style="bold")
    if isinstance(payload, Verdict):
        _verdict(line, payload)
    elif isinstance(payload, CorrectionLog):
        _correction(line, payload)
    elif isinstance(payload, Message):
        _message(line, payload)
    elif isinstance(payload, Directives):
        _directives(line, payload, agent)
    elif isinstance(payload, DeadLetter):
        _dead_letter(line, payload)
    elif isinstance(payload, Alert):
        _alert(line, payload)
    return line
