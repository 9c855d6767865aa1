"""Faust's aiokafka transport, adjusted for the embedded broker, and the worker's broker credentials."""

from __future__ import annotations

from typing import Any

import faust
from aiokafka import AIOKafkaConsumer
from faust.transport.drivers import aiokafka as faust_aiokafka

from engine.settings import Settings
from streams.kafka import client_kwargs, ssl_context, true_end_offsets


def transport_class(settings: Settings) -> type[faust_aiokafka.Transport]:
    """Faust's aiokafka transport with two fixes for the embedded broker (FACTS.md): a configurable fetch wait
    (Faust hard-codes 1500 ms) and table-recovery end offsets that count whole batches (Tansu reports the last
    batch's base offset + 1; see :func:`streams.kafka.true_end_offsets`)."""

    class ConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
        _probe: AIOKafkaConsumer | None = None

        def _create_worker_consumer(self, transport: Any) -> Any:
            consumer = super()._create_worker_consumer(transport)
            consumer._fetch_max_wait_ms = settings.fetch_max_wait_ms
            return consumer

        async def _highwaters(self, partitions: list[Any]) -> Any:
            reported = dict(await super()._highwaters(partitions))
            if self._probe is None:
                self._probe = AIOKafkaConsumer(**client_kwargs(settings), enable_auto_commit=False)
                await self._probe.start()
            return await true_end_offsets(self._probe, reported)

        async def on_thread_stop(self) -> None:
            if self._probe is not None:
                await self._probe.stop()
            await super().on_thread_stop()

    class Consumer(faust_aiokafka.Consumer):
        def _new_consumer_thread(self) -> ConsumerThread:
            return ConsumerThread(self, loop=self.loop, beacon=self.beacon)

    class Transport(faust_aiokafka.Transport):
        pass

    Transport.Consumer = Consumer
    return Transport


def credentials(settings: Settings) -> Any:
    """Faust broker credentials from the same settings (and the same validation) as every aiokafka client."""
    client_kwargs(settings)  # raises ConfigurationError for an incomplete SASL or TLS setup
    context = ssl_context(settings)
    if settings.kafka_security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password,
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=context,
        )
    return faust.SSLCredentials(context) if context is not None else None
