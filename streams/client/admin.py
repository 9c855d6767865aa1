"""Small one-shot producers used by the CLI (configuration changes)."""

from __future__ import annotations

import logging
from typing import Any

from aiokafka import AIOKafkaProducer

from engine.settings import Settings
from streams.wire.kafka import client_kwargs, start_with_retry
from streams.wire.payloads import AgentConfigChange, encode
from streams.wire.topics import Topics

log = logging.getLogger(__name__)


async def publish_config(settings: Settings, agent_id: str, config: dict[str, Any], *, timeout_s: float = 5.0) -> bool:
    """Announce a configuration change on the agent-config topic. Returns False when the broker is down
    (workers still pick the change up from the database within a second)."""
    change = AgentConfigChange(agent_id=agent_id, config=config)
    topic = Topics(settings.topic_prefix).agent_config
    return await publish(settings, [(topic, agent_id.encode(), encode(change))], timeout_s=timeout_s)


async def publish(settings: Settings, records: list[tuple[str, bytes, bytes]], *, timeout_s: float = 5.0) -> bool:
    """Send (topic, key, value) records of a change already stored. Returns False when the broker is down
    (workers still pick the change up from the database within a second)."""
    producer = AIOKafkaProducer(**client_kwargs(settings))
    try:
        await start_with_retry(producer, settings.broker, timeout_s)
    except Exception as exc:
        log.info("stored, but not announced on Kafka: %s", exc)  # (start_with_retry closed the producer)
        return False
    try:
        for topic, key, value in records:
            await producer.send_and_wait(topic, value, key=key)
        return True
    finally:
        await producer.stop()
