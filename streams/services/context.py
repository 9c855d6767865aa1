"""The objects the services of one worker share: settings, the gate's dependencies, the output producer, the
store once it is open, and the dead-letter path.

The worker (:mod:`streams.worker.app`) builds one :class:`Runtime` and hands it to the services it installs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.settings import Settings
from streams.runtime.faust_app import DriftApp
from streams.runtime.output import Output
from streams.services.gate import GateDeps
from streams.store import Store
from streams.wire.deadletters import batch_letter, record_letter
from streams.wire.topics import Topics


@dataclass
class Runtime:
    """Objects shared by the agents of one worker."""

    app: DriftApp
    settings: Settings
    deps: GateDeps
    store_ready: asyncio.Event = field(default_factory=asyncio.Event)
    waiting_for: str | None = "starting"  # why the worker is not ready yet (shown on /health); None when ready
    store: Store | None = None
    on_ready: Callable[[], None] | None = None
    background: set[asyncio.Future[None]] = field(default_factory=set)

    output: Output = field(init=False)

    def __post_init__(self) -> None:
        self.output = Output(self.settings)

    async def send(
        self, topic: str, key: bytes, value: bytes | None, partition: int | None = None
    ) -> asyncio.Future[Any]:
        """Queue a record on the output producer; the returned future resolves when the broker has it.

        Output records use their own producer (:mod:`streams.runtime.output`), beside Faust's (which carries the
        windowed counts' changelog): verdicts never wait behind Faust's batches.
        """
        future: asyncio.Future[Any] = await self.output.send(topic, key, value, partition)
        return future

    async def close(self) -> None:
        await self.output.close()

    async def dead_letter(self, record: Any, reason: str) -> None:
        """Send ``record`` (a Faust event or message) to the dead-letter topic with ``reason`` (cut to fit, see
        :mod:`streams.wire.deadletters`)."""
        message = getattr(record, "message", record)
        key = message.key if isinstance(message.key, bytes | None) else str(message.key).encode()
        value = message.value if isinstance(message.value, bytes | None) else str(message.value).encode()
        letter = record_letter(message.topic, message.partition, message.offset, key, value, reason)
        self.deps.stats.dead_letters += 1
        await self.send(Topics(self.settings.topic_prefix).dlq, *letter)

    async def dead_letter_batch(self, topic: str, partition: int, first: int, last: int, reason: str) -> None:
        """Record a batch the consumer skipped (it could not be decoded) and wait until the broker has it."""
        self.deps.stats.dead_letters += last - first + 1
        delivered = await self.send(
            Topics(self.settings.topic_prefix).dlq, *batch_letter(topic, partition, first, last, reason)
        )
        await delivered
