"""Client SDK for orchestrators: publish drafts and steps, await verdicts and directives.

    from streams.client import GateClient

    async with GateClient("127.0.0.1:9092") as gate:          # also reads DRIFT_BROKER
        verdict = await gate.check(agent_id="michael", text="...")
        final = await gate.converse(agent_id="michael", text="...", regenerate=regen)  # regen(feedback) -> str
        # regen may return None: the agent stays silent (a ``skip`` attempt; verdict decision "skip")
        summary = await gate.evaluate(agent_id="michael", dimensions=["fluency"])  # an on-demand evaluation

Many concurrent calls share one producer and one consumer; replies are matched by draft id and attempt
(verdicts) or by run id and step (directives). The consumer reads the reply topics without a consumer group,
from their end at start-up, so a client is ready at once. :meth:`GateClient.request_evaluation` publishes a
``manual`` request on ``evaluation-requests`` (the worker runs it over the agent's stored history);
:meth:`GateClient.evaluate` also waits for its summary on ``evaluations``, read by a consumer of its own that is
positioned before the request is sent.
"""

from __future__ import annotations

import asyncio
import inspect
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Self

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from engine.errors import ConfigurationError, PayloadError, ReplyTimeout
from engine.settings import Settings
from streams.runtime.fetchwait import kafka_consumer
from streams.wire.kafka import client_kwargs, start_with_retry
from streams.wire.payloads import (
    AgentConfigChange,
    Directives,
    Draft,
    EvaluationRequest,
    EvaluationSummary,
    Message,
    Step,
    Verdict,
    decode,
    encode,
)
from streams.wire.topics import Topics

#: Turns the gate's feedback into the next attempt's text; None means the agent chooses silence (skip).
Regenerate = Callable[[str], str | Awaitable[str | None] | None]


class GateClient:
    def __init__(
        self,
        bootstrap: str | None = None,
        *,
        prefix: str | None = None,
        settings: Settings | None = None,
        timeout_s: float = 30.0,
    ) -> None:
        base = settings or Settings.from_env()
        self.settings = base.with_(broker=bootstrap, topic_prefix=prefix)
        self.topics = Topics(self.settings.topic_prefix)
        self.timeout_s = timeout_s
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[tuple[str, str, int], asyncio.Future[Any]] = {}

    async def __aenter__(self) -> Self:
        try:
            await self.start()
        except BaseException:  # cancelled (Ctrl-C) or failed half-way: close what was started
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        compression = None if self.settings.kafka_compression == "none" else self.settings.kafka_compression
        self._producer = AIOKafkaProducer(**client_kwargs(self.settings), linger_ms=0, compression_type=compression)
        wait_s = self.settings.connect_timeout_s  # DRIFT_CONNECT_TIMEOUT_S: an absent broker fails fast
        await start_with_retry(self._producer, self.settings.broker, wait_s)
        self._consumer = consumer = kafka_consumer(self.settings, enable_auto_commit=False, brisk=True)
        await start_with_retry(consumer, self.settings.broker, wait_s)
        if consumer.fetch_wait is not None:  # brisk while a reply is awaited
            consumer.fetch_wait.awaiting = lambda: bool(self._waiting)
        partitions = [
            TopicPartition(topic, p)
            for topic in (self.topics.verdicts, self.topics.directives)
            for p in (self._consumer.partitions_for_topic(topic) or await self._partitions(topic))
        ]
        self._consumer.assign(partitions)
        await self._consumer.seek_to_end(*partitions)
        for tp in partitions:
            await self._consumer.position(tp)
        self._reader = asyncio.create_task(self._read())

    async def _partitions(self, topic: str) -> set[int]:
        assert self._consumer is not None
        topics = await self._consumer.topics()
        if topic not in topics:
            raise ConfigurationError(f"topic {topic} does not exist: run 'drift topics create' (prefix?)")
        return self._consumer.partitions_for_topic(topic) or set()

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)
        for future in self._waiting.values():
            future.cancel()
        if self._consumer is not None:
            await self._consumer.stop()
        if self._producer is not None:
            await self._producer.stop()

    async def _read(self) -> None:
        assert self._consumer is not None
        async for record in self._consumer:
            try:
                reply: Verdict | Directives
                if record.topic == self.topics.verdicts:
                    reply = decode(Verdict, record.value)
                    key = ("verdict", reply.draft_id, reply.attempt)
                else:
                    reply = decode(Directives, record.value)
                    key = ("step", reply.run_id, reply.step)
            except PayloadError:
                continue
            future = self._waiting.pop(key, None)
            if future is not None and not future.done():
                future.set_result(reply)

    async def _request(
        self, key: tuple[str, str, int], topic: str, record_key: str, value: bytes, timeout: float
    ) -> Any:
        if self._producer is None:
            raise ConfigurationError("the client is not started: use 'async with GateClient(...) as gate'")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        await self._producer.send(topic, value, key=record_key.encode())
        try:
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise ReplyTimeout(f"no reply for {key[0]} {key[1]} #{key[2]} within {timeout:g}s") from None
        finally:
            self._waiting.pop(key, None)

    async def check(
        self,
        *,
        agent_id: str,
        text: str,
        channel: str | None = None,
        run_id: str | None = None,
        draft_id: str | None = None,
        attempt: int = 1,
        timeout_s: float | None = None,
        **fields: Any,
    ) -> Verdict:
        """Publish one draft attempt and wait for its verdict (raises :class:`ReplyTimeout`)."""
        draft = Draft(draft_id=draft_id or uuid.uuid4().hex, attempt=attempt, agent_id=agent_id, text=text,
                      channel=channel, run_id=run_id, **fields)  # fmt: skip
        verdict: Verdict = await self._request(
            ("verdict", draft.draft_id, draft.attempt), self.topics.drafts, agent_id, encode(draft),
            self.timeout_s if timeout_s is None else timeout_s,
        )  # fmt: skip
        return verdict

    async def converse(
        self, *, agent_id: str, text: str, regenerate: Regenerate, max_attempts: int = 20, **fields: Any
    ) -> Verdict:
        """Check, regenerate with the feedback and check again until the gate commits, rejects or the agent
        stays silent (``regenerate`` returned None: a ``skip`` attempt, verdict decision ``skip``)."""
        draft_id = fields.pop("draft_id", None) or uuid.uuid4().hex
        skip = False
        for attempt in range(1, max_attempts + 1):
            verdict = await self.check(
                agent_id=agent_id, text=text, draft_id=draft_id, attempt=attempt, skip=skip, **fields
            )
            if verdict.decision != "retry":
                return verdict
            new_text = regenerate(verdict.feedback or "")
            chosen = await new_text if inspect.isawaitable(new_text) else new_text
            skip, text = chosen is None, chosen or ""
        raise ReplyTimeout(f"draft {draft_id} still asked for a retry after {max_attempts} attempts")

    async def skip(self, *, agent_id: str, draft_id: str, attempt: int = 1, **fields: Any) -> Verdict:
        """The agent chooses silence for this draft: the gate passes it at once and commits nothing."""
        return await self.check(agent_id=agent_id, text="", draft_id=draft_id, attempt=attempt, skip=True, **fields)

    async def step(
        self,
        *,
        run_id: str,
        step: int,
        agent_ids: list[str],
        channel: str | None = None,
        timeout_s: float | None = None,
    ) -> Directives:
        """Announce a step and wait for its directives record."""
        record = Step(run_id=run_id, step=step, agent_ids=agent_ids, channel=channel)
        directives: Directives = await self._request(
            ("step", run_id, step),
            self.topics.steps,
            run_id,
            encode(record),
            self.timeout_s if timeout_s is None else timeout_s,
        )
        return directives

    async def publish_config(self, agent_id: str, config: dict[str, Any]) -> None:
        """Announce an agent's full configuration on ``agent-config`` (workers apply it at once; nothing is
        stored in the database: use ``drift config set`` or the store for that)."""
        if self._producer is None:
            raise ConfigurationError("the client is not started: use 'async with GateClient(...) as gate'")
        change = AgentConfigChange(agent_id=agent_id, config=config)
        await self._producer.send_and_wait(self.topics.agent_config, encode(change), key=agent_id.encode())

    async def publish_message(self, message: Message) -> None:
        """Publish a committed event (a stimulus, or an action that bypassed the gate) to the history."""
        if self._producer is None:
            raise ConfigurationError("the client is not started: use 'async with GateClient(...) as gate'")
        await self._producer.send_and_wait(self.topics.messages, encode(message), key=message.agent_id.encode())

    async def request_evaluation(
        self, *, agent_id: str, dimensions: list[str] | None = None, request_id: str | None = None
    ) -> EvaluationRequest:
        """Ask the service for an offline evaluation of ``agent_id`` now (reason ``manual``) over its stored
        history since its last completed run; ``dimensions`` default to the evaluation ones. Returns the request
        as published (its ``request_id`` names the run and its summary)."""
        if self._producer is None:
            raise ConfigurationError("the client is not started: use 'async with GateClient(...) as gate'")
        request = EvaluationRequest(
            request_id=request_id or uuid.uuid4().hex, agent_id=agent_id, reason="manual",
            dimensions=known_dimensions(dimensions) if dimensions else None,
        )  # fmt: skip
        await self._producer.send_and_wait(self.topics.evaluation_requests, encode(request), key=agent_id.encode())
        return request

    async def evaluate(
        self, *, agent_id: str, dimensions: list[str] | None = None, timeout_s: float | None = None
    ) -> EvaluationSummary:
        """:meth:`request_evaluation`, then wait for the run's summary (completed or failed; raises
        :class:`ReplyTimeout` when none arrives within ``timeout_s``, default the client's timeout)."""
        consumer = kafka_consumer(self.settings, enable_auto_commit=False)
        await start_with_retry(consumer, self.settings.broker, 15.0)
        try:
            topic = self.topics.evaluations
            partitions = [TopicPartition(topic, p) for p in sorted(await self._partitions_of(consumer, topic))]
            consumer.assign(partitions)
            await consumer.seek_to_end(*partitions)
            for tp in partitions:
                await consumer.position(tp)  # positioned before the request goes out: its summary cannot be missed
            request = await self.request_evaluation(agent_id=agent_id, dimensions=dimensions)
            timeout = self.timeout_s if timeout_s is None else timeout_s
            try:
                async with asyncio.timeout(timeout):
                    return await _summary_of(consumer, request.request_id)
            except TimeoutError:
                raise ReplyTimeout(
                    f"no evaluation summary for {agent_id} (request {request.request_id}) within {timeout:g}s: "
                    "is a worker running (drift up / drift worker)?"
                ) from None
        finally:
            await consumer.stop()

    @staticmethod
    async def _partitions_of(consumer: AIOKafkaConsumer, topic: str) -> set[int]:
        if topic not in await consumer.topics():
            raise ConfigurationError(f"topic {topic} does not exist: run 'drift topics create' (prefix?)")
        return consumer.partitions_for_topic(topic) or set()


async def _summary_of(consumer: AIOKafkaConsumer, request_id: str) -> EvaluationSummary:
    async for record in consumer:
        try:
            summary = decode(EvaluationSummary, record.value)
        except PayloadError:
            continue
        if summary.request_id == request_id:
            return summary
    raise ReplyTimeout(f"the evaluations topic closed before request {request_id} was summarised")


def known_dimensions(names: list[str]) -> list[str]:
    """``names`` without repeats, or :class:`ConfigurationError` naming the unknown ones and the choices (the
    worker would dead-letter the request otherwise)."""
    from engine.models import Dimension

    known = [d.value for d in Dimension]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigurationError(f"unknown dimension(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return list(dict.fromkeys(names))
