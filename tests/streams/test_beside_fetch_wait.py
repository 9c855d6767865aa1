"""The consumers beside the verdict path poll the broker at their own, longer fetch wait: each consumer at the
gate's 10 ms cost an idle worker about 3 % of a core (the embedded broker answers an empty fetch after about
half the wait), and their records (correction logs to store, scores to monitor) need no 10 ms round trip."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from engine.settings import Settings
from streams.services import monitor, sinks


class Made(Exception):
    """Raised by the stand-in factory once it has seen the consumer's settings."""


async def test_the_sinks_monitor_and_shadow_lane_consumers_use_the_beside_fetch_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[int] = []

    def consumer(settings: Settings, *topics: str, **kwargs: Any) -> Any:
        waits.append(kwargs.get("fetch_max_wait_ms", settings.fetch_max_wait_ms))
        raise Made

    monkeypatch.setattr(monitor, "kafka_consumer", consumer)
    monkeypatch.setattr(sinks, "kafka_consumer", consumer)
    settings = Settings(fetch_max_wait_ms=10, beside_fetch_max_wait_ms=250)

    async def no_store() -> Any:
        raise AssertionError("nothing is written")

    async def handle(records: list[Any]) -> None:
        raise AssertionError("nothing is read")

    with pytest.raises(Made):  # the loop of the drift monitor and of the shadow lane
        await monitor.consume_from_stored(settings, SimpleNamespace(group="g"), ["t"], 10, handle)
    for table in sinks.SINK_TABLES:
        with pytest.raises(Made):
            await sinks.run_sink(settings, no_store, table)
    assert waits == [250] * (1 + len(sinks.SINK_TABLES))
    assert Settings().beside_fetch_max_wait_ms > Settings().fetch_max_wait_ms  # the defaults keep the gate's short
