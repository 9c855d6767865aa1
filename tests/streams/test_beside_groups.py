"""A stopping worker's consumers beside the verdict path (the sinks', the drift monitor's, the shadow lane's) do not
rejoin their groups either (streams/runtime/beside.py): each registers once it has started, and the worker's stop
tells them all at once, as it tells the gate's own consumer (docs/known-issues.md, "A stopping worker rejoined its
group")."""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from engine.settings import Settings
from streams.runtime.beside import BesideGroups
from streams.services import monitor, sinks


class Coordinator:
    def __init__(self) -> None:
        self.rejoins = 0

    def request_rejoin(self) -> None:  # what aiokafka's heartbeat calls when the group rebalances
        self.rejoins += 1


class Read(Exception):
    """Raised by the stand-in consumer's first fetch: the consumer has started and registered by then."""


class StandInConsumer:
    """An aiokafka group consumer as the loops use it, up to their first fetch."""

    def __init__(self, *topics: str, **kwargs: Any) -> None:
        self._coordinator = Coordinator()
        self.stopped = False

    async def start(self) -> None:
        pass

    def subscribe(self, topics: list[str], listener: Any = None) -> None:
        pass

    async def getmany(self, **kwargs: Any) -> Any:
        raise Read

    async def stop(self) -> None:
        self.stopped = True


def _rejoins_after_stop(consumers: list[StandInConsumer]) -> list[int]:
    for consumer in consumers:
        consumer._coordinator.request_rejoin()
    return [consumer._coordinator.rejoins for consumer in consumers]


def test_every_registered_consumer_stops_rejoining_once_the_worker_stops() -> None:
    groups = BesideGroups()
    before, gone = StandInConsumer(), StandInConsumer()
    groups.add(before)
    groups.add(gone)
    del gone
    gc.collect()  # a consumer that stopped and went is not held
    before._coordinator.request_rejoin()
    assert before._coordinator.rejoins == 1  # a running worker's consumers rejoin as aiokafka does
    assert groups.stop_rejoining() == 1
    after = StandInConsumer()
    groups.add(after)  # started while the worker stops (a supervised task restarting)
    assert _rejoins_after_stop([before, after]) == [1, 0]


async def test_the_sinks_monitor_and_shadow_lane_consumers_register(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[StandInConsumer] = []

    def consumer(settings: Settings, *topics: str, **kwargs: Any) -> StandInConsumer:
        made.append(StandInConsumer())
        return made[-1]

    class Producer:
        def __init__(self, **kwargs: Any) -> None:
            pass

        async def start(self) -> None:
            pass

        async def stop(self) -> None:
            pass

    monkeypatch.setattr(monitor, "kafka_consumer", consumer)
    monkeypatch.setattr(sinks, "kafka_consumer", consumer)
    monkeypatch.setattr(sinks, "AIOKafkaProducer", Producer)
    groups, settings = BesideGroups(), Settings()

    async def no_store() -> Any:
        raise AssertionError("nothing is written")

    async def handle(records: list[Any]) -> None:
        raise AssertionError("nothing is read")

    with pytest.raises(Read):  # the loop of the drift monitor and of the shadow lane
        await monitor.consume_from_stored(settings, SimpleNamespace(group="g"), ["t"], 10, handle, groups)
    for table in sinks.SINK_TABLES:
        with pytest.raises(Read):
            await sinks.run_sink(settings, no_store, table, groups=groups)
    assert len(made) == 1 + len(sinks.SINK_TABLES) and all(c.stopped for c in made)
    assert groups.stop_rejoining() == len(made)
    assert _rejoins_after_stop(made) == [0] * len(made)


async def test_the_workers_stop_tells_its_beside_consumers_first(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import faust

    from streams.runtime.faust_app import faust_app
    from tests.streams.fakes import NothingToClose, no_skipped_batches

    app = faust_app(Settings(data_dir=tmp_path, broker="127.0.0.1:1"), 3, closing=NothingToClose(),
                    skipped=no_skipped_batches)  # fmt: skip
    seen: list[int] = []
    sink = StandInConsumer()
    app.beside_groups.add(sink)

    async def faust_stop(self: Any) -> None:  # Faust's own stop: its consumer leaves the group
        sink._coordinator.request_rejoin()
        seen.append(sink._coordinator.rejoins)

    monkeypatch.setattr(faust.App, "on_stop", faust_stop)
    await app.on_stop()
    assert seen == [0]
