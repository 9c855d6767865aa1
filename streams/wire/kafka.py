"""Kafka client settings shared by the worker, the CLI and the SDK (TLS / SASL from the environment)."""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.errors import KafkaConnectionError, KafkaError
from aiokafka.helpers import create_ssl_context

from engine.errors import ConfigurationError, ServiceError
from engine.retry import Backoff, RetryCounter, RetryPolicy, no_count, retrying
from engine.settings import Settings
from streams.wire.topics import all_topics, topic_configs

TOPIC_EXISTS = 36
log = logging.getLogger(__name__)


def ssl_context(settings: Settings) -> ssl.SSLContext | None:
    if settings.kafka_security_protocol not in {"SSL", "SASL_SSL"}:
        return None
    try:
        context: ssl.SSLContext = create_ssl_context(cafile=settings.kafka_ca_file)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(f"DRIFT_KAFKA_CA_FILE: cannot load {settings.kafka_ca_file!r}: {exc}") from None
    return context


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for any aiokafka client (producer, consumer, admin)."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.broker,
        "security_protocol": settings.kafka_security_protocol,
    }
    context = ssl_context(settings)
    if context is not None:
        kwargs["ssl_context"] = context
    if settings.kafka_security_protocol.startswith("SASL"):  # complete: engine.settings checks it
        kwargs.update(
            sasl_mechanism=settings.kafka_sasl_mechanism,
            sasl_plain_username=settings.kafka_sasl_username,
            sasl_plain_password=settings.kafka_sasl_password.get_secret_value() if settings.kafka_sasl_password else "",
        )
    return kwargs


def consumer_kwargs(settings: Settings) -> dict[str, Any]:
    """Consumer tuning for a low-latency broker round trip (see FACTS.md on fetch wait)."""
    return {**client_kwargs(settings), "fetch_max_wait_ms": settings.fetch_max_wait_ms}


async def create_topics(settings: Settings, *, partitions: int = 3, timeout_s: float = 15.0) -> list[str]:
    """Create every topic of the protocol and the tables' changelogs (compacted); return the names created now."""
    admin = AIOKafkaAdminClient(**client_kwargs(settings))
    await start_with_retry(admin, settings.broker, timeout_s)
    try:
        existing = set(await admin.list_topics())
        wanted = [name for name in all_topics(settings) if name not in existing]
        await compact_existing(admin, settings, sorted(existing))
        if not wanted:
            return []
        configs = topic_configs(settings)  # changelogs are compacted (see streams.wire.topics.topic_configs)
        response = await admin.create_topics(
            [NewTopic(name, partitions, 1, topic_configs=configs.get(name, {})) for name in wanted]
        )
        failed = [
            f"{topic}: {message or code}"
            for topic, code, message in response.topic_errors
            if code not in (0, TOPIC_EXISTS)
        ]
        if failed:
            raise ServiceError("cannot create topics: " + "; ".join(failed))
        return wanted
    finally:
        await admin.close()


async def compact_existing(admin: AIOKafkaAdminClient, settings: Settings, existing: list[str]) -> list[str]:
    """Give the changelogs among ``existing`` topics the configuration they lack (created by hand or by an earlier
    version without compaction); returns the names changed. Best effort: a broker that cannot describe or alter
    topic configurations gets a warning naming what to set."""
    wanted = topic_configs(settings)
    names = [name for name in existing if name in wanted]
    if not names:
        return []
    try:
        described = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in names])
        current = {r[3]: {e[0]: e[1] for e in r[4]} for response in described for r in response.resources}
        wrong = [n for n in names if any(current.get(n, {}).get(k) != v for k, v in wanted[n].items())]
        if wrong:
            await admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, n, configs=wanted[n]) for n in wrong])
            log.warning("changelog topic(s) %s now compacted (%s)", ", ".join(wrong), wanted[wrong[0]])
        return wrong
    except KafkaError as exc:
        log.warning("cannot check the changelogs' configuration (%s): set cleanup.policy=compact on %s", exc,
                    ", ".join(names))  # fmt: skip
        return []


#: an aiokafka client's start while the broker comes up (or back), jittered
KAFKA_START_BACKOFF = Backoff(0.1, 1.0)


async def start_with_retry(client: Any, broker: str, timeout_s: float, on_retry: RetryCounter = no_count) -> None:
    """Start an aiokafka client (producer, consumer or admin), retrying while the broker comes up, for
    ``timeout_s`` at most.

    A client that does not start is closed before the failure goes on, whatever stopped it: the deadline, the
    broker's refusal, or the caller's cancellation or timeout (a worker stopping mid-rebalance). It holds its
    connections otherwise, and aiokafka logs ``Unclosed AIOKafkaConsumer`` at ERROR when it is collected."""
    policy = RetryPolicy("kafka_start", lambda exc: isinstance(exc, KafkaConnectionError | KafkaError | OSError),
                         KAFKA_START_BACKOFF, deadline_s=timeout_s)  # fmt: skip
    try:
        await _started_or_closed(client, lambda: retrying(client.start, policy, on_retry))
    except (KafkaConnectionError, KafkaError, OSError) as exc:
        raise ServiceError(f"cannot reach the Kafka broker at {broker}: {exc}") from None


async def start_once(client: Any) -> None:
    """Start an aiokafka client without retrying (the caller bounds it); one that does not start is closed, as
    :func:`start_with_retry` closes it."""
    await _started_or_closed(client, client.start)


async def _started_or_closed(client: Any, start: Callable[[], Awaitable[Any]]) -> None:
    """``await start()``; if it raises or is cancelled, close ``client`` before the failure goes on."""
    try:
        await start()
    except BaseException:
        await asyncio.shield(close_quietly(client))  # a second cancellation does not cut the close short
        raise


async def close_quietly(client: Any) -> None:
    """Close an aiokafka client that may not have started (``stop`` for producers and consumers, ``close`` for
    the admin client); a failure to close is logged, never raised over the failure that led here."""
    try:
        await (client.stop() if hasattr(client, "stop") else client.close())
    except Exception as exc:
        log.debug("closing a Kafka client that did not start: %s", exc)


async def true_end_offsets(probe: Any, reported: dict[Any, int], timeout_ms: int = 1000) -> dict[Any, int]:
    """End offsets that count every record of the last batch.

    Tansu 0.6 (the embedded broker) answers ListOffsets with the last *batch's* base offset + 1, so the end of a
    partition whose last batch holds several records is reported too low, and a reader that stops at the
    reported end (Faust's table recovery) silently drops the tail. Reading from ``end - 1`` returns that whole
    batch; its highest offset + 1 is the true end. With a correct broker this returns ``reported`` unchanged.
    A partition not read within ``timeout_ms`` keeps its reported end (:func:`probed_end_offsets` tells which).
    """
    return (await probed_end_offsets(probe, reported, timeout_ms))[0]


async def probed_end_offsets(
    probe: Any, reported: dict[Any, int], timeout_ms: int = 1000
) -> tuple[dict[Any, int], set[Any]]:
    """:func:`true_end_offsets` and the partitions whose probe did not answer in time (their reported end kept)."""
    probed = [tp for tp, end in reported.items() if end > 0]
    if not probed:
        return dict(reported), set()
    probe.assign(probed)
    for tp in probed:
        probe.seek(tp, reported[tp] - 1)
    fixed = dict(reported)
    pending = set(probed)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    while pending and loop.time() < deadline:
        batches = await probe.getmany(*pending, timeout_ms=100)
        for tp, records in batches.items():
            if records:
                fixed[tp] = max(fixed[tp], records[-1].offset + 1)
                pending.discard(tp)
    return fixed, pending
