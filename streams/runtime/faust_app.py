"""The worker's Faust application class and the helpers every service uses to subscribe to a topic.

:class:`DriftApp` is Faust's app with this project's transport (:mod:`streams.runtime.transport`); it is built by
:func:`faust_app` from one :class:`Settings` and never falls back to defaults. What it closes when it stops and
where the transport reports skipped batches are constructor arguments too: nothing is filled in afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, TypeVar

import faust
from faust.tables import TableManager
from faust.tables.recovery import Recovery

from engine.errors import ConfigurationError, PayloadError
from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.beside import BesideGroups
from streams.runtime.readahead import ReadAheadRecovery
from streams.runtime.readiness import Readiness
from streams.runtime.restore import RestorePlan
from streams.runtime.restore_store import register_store
from streams.runtime.stopping import StopClock, mark_stop
from streams.runtime.transport import FastLane, transport_class
from streams.wire.kafka import client_kwargs, ssl_context
from streams.wire.topics import app_id

T = TypeVar("T")
DeadLetter = Callable[[Any, str], Awaitable[None]]  # (Faust event or message, reason)
#: (topic, partition, first offset, last offset, reason) of a batch the consumer could not decode
SkippedLetter = Callable[[str, int, int, int, str], Awaitable[None]]


class Closing(Protocol):
    async def close(self) -> None: ...


def credentials(settings: Settings) -> Any:
    """Faust broker credentials from the same settings (and the same validation) as every aiokafka client."""
    client_kwargs(settings)  # raises ConfigurationError for an incomplete SASL or TLS setup
    context = ssl_context(settings)
    if settings.kafka_security_protocol.startswith("SASL"):
        return faust.SASLCredentials(
            username=settings.kafka_sasl_username,
            password=settings.kafka_sasl_password.get_secret_value() if settings.kafka_sasl_password else None,
            mechanism=settings.kafka_sasl_mechanism,
            ssl_context=context,
        )
    return faust.SSLCredentials(context) if context is not None else None


class PromptTableManager(TableManager):
    """Faust's table manager without the fixed one-second sleep it starts with (there for tables declared after the
    app starts; every table of a worker is declared in :func:`streams.worker.app.build_app`, before): a second
    less of every worker's start-up, measured (``ops/bench/handover.py``, phase ``faust start``).

    In a rebalance its tables prepare their restores side by side, not one after another: each looks up its
    checkpoints and reads its moved partitions' changelog tails ahead (:mod:`streams.runtime.restore`) with its
    own consumer, and the drafts of a moved partition wait for the slowest table, not for the sum of them."""

    async def on_start(self) -> None:
        if not self.should_stop:
            await faust_private.update_table_channels(self)
            await self.recovery.start()

    @property
    def recovery(self) -> Recovery:
        """Faust's recovery, which waits for the tables' read-aheads (:mod:`streams.runtime.readahead`)."""
        return faust_private.table_recovery(self, ReadAheadRecovery)

    async def on_stop(self) -> None:
        await super().on_stop()
        mark_stop(self.app, "tables")

    async def on_rebalance(
        self, assigned: set[Any], revoked: set[Any], newly_assigned: set[Any], generation_id: int = 0
    ) -> None:
        faust_private.close_table_registration(self)
        tables = [table.on_rebalance(assigned, revoked, newly_assigned, generation_id) for table in self.values()]
        await asyncio.gather(*tables)
        await asyncio.sleep(0)
        await faust_private.update_table_channels(self)
        await asyncio.sleep(0)
        await self.recovery.on_rebalance(assigned, revoked, newly_assigned, generation_id)


class DriftApp(faust.App):
    """Faust's app with this project's transport; ``closing`` is closed when the app shuts down (the output
    producer), after every service that sends on it has stopped (see :meth:`on_shutdown`); ``skipped``
    dead-letters the batches the fetcher skipped (:mod:`streams.runtime.undecodable`), ``fast_lanes`` maps a
    topic to its batch handler (:mod:`streams.runtime.transport`; registered with :meth:`add_fast_lane`, like
    an agent); ``restore`` bounds its tables' restores (:mod:`streams.runtime.restore`; None: Faust's
    whole-changelog restores)."""

    def __init__(
        self, *args: Any, settings: Settings, closing: Closing, skipped: SkippedLetter,
        restore: RestorePlan | None = None, **kwargs: Any,
    ) -> None:  # fmt: skip
        if not isinstance(settings, Settings):  # a worker never runs on default settings
            raise ConfigurationError("the Faust app needs the worker's Settings (build it with faust_app)")
        super().__init__(*args, **kwargs)
        self.settings = settings
        self.closing = closing
        self.skipped = skipped
        self.restore = restore
        self.fast_lanes: dict[str, FastLane] = {}
        self.readiness = Readiness(settings.ready_bound_s, gated=settings.topic("drafts"))  # why it does not gate
        self._before_closing: list[Callable[[], Awaitable[None]]] = []
        self._stopping: list[Callable[[], Awaitable[None]]] = []
        self._shutting: list[Callable[[], Awaitable[None]]] = []
        self.beside_groups = BesideGroups()  # the sinks', monitor's and shadow lane's consumers (no rejoin on stop)
        #: True while this group's leader is stopping too (streams.worker.peers hears it): the consumer of a
        #: stopping follower then leaves after the leader (streams.runtime.transport.OrderlyClose).
        self.leader_stopping: Callable[[], bool] = _no_leader_stopping
        self.partition_claims: faust_private.Claims | None = None  # streams.worker.claims (None: eager rebalances)
        self.stop_clock = StopClock()  # where a graceful stop goes (streams.runtime.stopping)

    def add_fast_lane(self, topic: str, lane: FastLane) -> None:
        """Hand ``topic``'s batches to ``lane`` instead of Faust's stream (the topic must be subscribed)."""
        self.fast_lanes[topic] = lane

    def close_before_output(self, close: Callable[[], Awaitable[None]]) -> None:
        """Await ``close`` when the app shuts down, before ``closing``: a service registers how to end its own
        tasks that send on the output (its dispatcher), as it registers its agents."""
        self._before_closing.append(close)

    def first_on_stop(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Await ``hook`` first when the app stops, before its consumer stops and leaves the group."""
        self._stopping.append(hook)

    def last_on_shutdown(self, hook: Callable[[], Awaitable[None]]) -> None:
        """Await ``hook`` last when the app shuts down, after its consumer has left the group and every service
        has stopped."""
        self._shutting.append(hook)

    async def on_stop(self) -> None:
        self.stop_clock.begin()  # if no signal began it (the worker's own stop)
        faust_private.stop_rejoining(faust_private.kafka_consumer(faust_private.consumer_thread(self.consumer)))
        self.beside_groups.stop_rejoining()
        for hook in self._stopping:
            await hook()
        await super().on_stop()

    async def on_start(self) -> None:
        await super().on_start()
        self.add_future(self.readiness.watch(self))  # from the start: the join and the restore come first

    def on_rebalance_start(self) -> None:
        super().on_rebalance_start()
        self.readiness.rebalance_started()

    def on_rebalance_return(self) -> None:
        super().on_rebalance_return()
        self.readiness.assigned()

    def on_rebalance_end(self) -> None:
        super().on_rebalance_end()
        self.readiness.rebalance_ended()

    async def on_shutdown(self) -> None:
        """Mode calls this after the agents (children) and the timers and tasks (futures) have stopped; the
        services' own tasks end next (work cut short was never committed, as the consumer has stopped, so the
        next owner gets it again), and only then does the output producer close: nothing sends on it closed.
        The restore plan closes here too, after the tables: their checkpoint rounds and a rebalance cut short
        by the stop start its consumers until they have stopped."""
        for close in self._before_closing:
            await close()
        if self.restore is not None:
            await self.restore.close()
        await self.closing.close()
        await super().on_shutdown()
        for hook in self._shutting:
            await hook()

    def _new_transport(self) -> Any:
        return transport_class(self.settings)(self.conf.broker_consumer, self)


def _no_leader_stopping() -> bool:
    return False


def faust_app(
    settings: Settings, partitions: int, *, closing: Closing, skipped: SkippedLetter, restore: RestorePlan | None = None
) -> DriftApp:
    faust_dir = settings.data_dir / "faust"
    faust_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    app = DriftApp(
        app_id(settings),
        settings=settings,
        closing=closing,
        skipped=skipped,
        restore=restore,
        broker=f"kafka://{settings.broker}",
        broker_credentials=credentials(settings),
        store=register_store(),  # Faust's memory store with bounded restores (streams.runtime.restore)
        datadir=str(faust_dir / "{conf.name}"),
        autodiscover=False,
        topic_partitions=partitions,
        topic_replication_factor=1,
        broker_session_timeout=settings.group_session_timeout_s,
        broker_heartbeat_interval=settings.group_heartbeat_s,
        broker_rebalance_timeout=settings.group_rebalance_timeout_s,
        consumer_group_instance_id=settings.group_instance_id or None,
        broker_commit_interval=0.5,
        consumer_auto_offset_reset="earliest",
        producer_linger=0.05,  # Faust's producer carries only table changelogs
        producer_max_batch_size=256 * 1024,
        stream_wait_empty=False,
        table_standby_replicas=0,
        TableManager=PromptTableManager,
        web_enabled=True,
        web_bind=settings.web_host,
        web_host=settings.web_host,
        web_port=settings.web_port,
        web_in_thread=False,
    )
    return app


def raw_topic(app: DriftApp, name: str) -> Any:
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")


async def decoded_events(
    dead_letter: DeadLetter, stream: Any, decode_record: Callable[[Any, Any], T]
) -> AsyncIterator[tuple[Any, T, float]]:
    """A Faust agent's events, not acked, as (event, decoded value, arrival time); a record that does not
    decode is dead-lettered and acked here, and processing goes on."""
    async for event in stream.noack().events():
        received = time.monotonic()
        try:
            value = decode_record(event.key, event.value)
        except PayloadError as exc:
            await dead_letter(event, str(exc))
            event.ack()
            continue
        yield event, value, received
