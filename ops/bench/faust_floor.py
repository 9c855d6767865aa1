"""The Faust floor: a worker whose only agent acks drafts in batches and produces three records per draft.

It shows what Faust's consumer path plus three direct sends cost on this broker before any gate work
(decode, checks, tables, the other agents). Run by ``ops.bench.gate`` as a subprocess:
``python -m ops.bench.faust_floor BROKER PREFIX``; prints ``ready`` once it has its partitions.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import faust
from aiokafka import AIOKafkaProducer

from engine.settings import Settings
from streams.runtime.faust_app import faust_app, raw_topic
from streams.worker.runner import _new_loop

OUTPUTS = ("verdicts", "correction-logs", "messages")


class _NothingToClose:
    async def close(self) -> None:
        return None


async def _no_skipped_batches(topic: str, partition: int, first: int, last: int, reason: str) -> None:
    raise RuntimeError(f"the floor reads only valid drafts; {topic}[{partition}] {first}..{last}: {reason}")


def main(broker: str, prefix: str) -> None:
    settings = Settings(broker=broker, topic_prefix=prefix)
    app = faust_app(settings, 3, closing=_NothingToClose(), skipped=_no_skipped_batches)
    producer: list[AIOKafkaProducer] = []

    @app.agent(raw_topic(app, f"{prefix}drafts"), name="floor")
    async def floor(stream: Any) -> None:
        async for events in stream.noack_take(512, within=0.002):
            if not producer:
                producer.append(AIOKafkaProducer(bootstrap_servers=broker, linger_ms=5))
                await producer[0].start()
            for event in events:
                for topic in OUTPUTS:
                    await producer[0].send(f"{prefix}{topic}", event.value, key=event.key)
                event.ack()

    async def ready(sender: Any, *args: Any, **kwargs: Any) -> None:
        print("ready", flush=True)

    app.on_rebalance_complete.connect(ready)  # type: ignore[arg-type]
    loop = _new_loop()
    asyncio.set_event_loop(loop)
    worker = faust.Worker(app, loglevel="WARNING", quiet=True, loop=loop, redirect_stdouts=False)
    worker.spinner = None
    worker.execute_from_commandline()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
