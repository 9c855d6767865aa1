"""The Faust application of the gate: topics, tables, agents, timers and web pages, built by a factory.

Nothing happens at import time; :func:`build_app` wires a fresh app for one :class:`Settings`.
Delivery is at-least-once (the embedded broker has no transactions): drafts are acked only after their
records are sent, and every sink is idempotent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import faust

from engine.errors import ConfigurationError, PayloadError
from engine.judges.base import Judge, LimitedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import Settings
from streams.configs import ConfigCache
from streams.deadletters import batch_letter, record_letter
from streams.evaluations import install_evaluations
from streams.gate import GateDeps
from streams.lanes import COUNT_FLUSH_S, GateLane, StateLane
from streams.output import Output
from streams.payloads import AgentConfigChange, decode
from streams.sinks import run_sinks
from streams.steps import install_steps
from streams.store import Store
from streams.tables import DirectTable
from streams.topics import Topics, app_id
from streams.transport import FastLane, credentials, transport_class

log = logging.getLogger(__name__)
T = TypeVar("T")


class DriftApp(faust.App):
    settings: Settings | None = None
    runtime: Runtime | None = None
    fast_lanes: dict[str, FastLane] | None = None  # topic -> batch handler, see streams.transport

    async def on_stop(self) -> None:
        if self.runtime is not None:
            await self.runtime.close()
        await super().on_stop()

    def _new_transport(self) -> Any:
        return transport_class(self.settings or Settings())(self.conf.broker_consumer, self)


def faust_app(settings: Settings, partitions: int) -> DriftApp:
    faust_dir = settings.data_dir / "faust"
    faust_dir.mkdir(parents=True, exist_ok=True)  # Faust creates only the last level
    app = DriftApp(
        app_id(settings),
        broker=f"kafka://{settings.broker}",
        broker_credentials=credentials(settings),
        store="memory://",
        datadir=str(faust_dir / "{conf.name}"),
        autodiscover=False,
        topic_partitions=partitions,
        topic_replication_factor=1,
        broker_session_timeout=6,
        broker_heartbeat_interval=1,
        broker_rebalance_timeout=5,
        broker_commit_interval=0.5,
        consumer_auto_offset_reset="earliest",
        producer_linger=0.05,  # Faust's producer carries only table changelogs
        producer_max_batch_size=256 * 1024,
        stream_wait_empty=False,
        table_standby_replicas=0,
        web_enabled=True,
        web_bind=settings.web_host,
        web_host=settings.web_host,
        web_port=settings.web_port,
        web_in_thread=False,
    )
    app.settings = settings
    return app


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

        Output records use their own producer (:mod:`streams.output`), beside Faust's (which carries the
        windowed counts' changelog): verdicts never wait behind Faust's batches.
        """
        future: asyncio.Future[Any] = await self.output.send(topic, key, value, partition)
        return future

    async def close(self) -> None:
        await self.output.close()

    async def dead_letter(self, record: Any, reason: str) -> None:
        """Send ``record`` (a Faust event or message) to the dead-letter topic with ``reason`` (cut to fit, see
        :mod:`streams.deadletters`)."""
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


def raw_topic(app: DriftApp, name: str) -> Any:
    return app.topic(name, key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw")


async def decoded_events(
    rt: Runtime, stream: Any, decode_record: Callable[[Any, Any], T]
) -> AsyncIterator[tuple[Any, T, float]]:
    """A Faust agent's events, not acked, as (event, decoded value, arrival time); a record that does not
    decode is dead-lettered and acked here, and processing goes on."""
    async for event in stream.noack().events():
        received = time.monotonic()
        try:
            value = decode_record(event.key, event.value)
        except PayloadError as exc:
            await rt.dead_letter(event, str(exc))
            event.ack()
            continue
        yield event, value, received


def build_app(settings: Settings, judge: Judge, *, partitions: int = 3) -> tuple[DriftApp, Runtime]:
    """A ready-to-run Faust app for ``settings`` with ``judge`` behind a global in-flight cap."""
    app = faust_app(settings, partitions)
    recent_table = app.Table("recent-messages", default=list, partitions=partitions)
    pending_table = app.Table("pending-attempts", default=list, partitions=partitions)
    verdicts_table = app.Table("verdict-records", default=dict, partitions=partitions)
    configs = ConfigCache(None, wait_for_store=True)  # decides nothing until the stored configs are in
    library = PropositionLibrary(settings.propositions_dir)
    limited = LimitedJudge(judge, settings.judge_concurrency)
    deps = GateDeps(settings, limited, library, configs, _unset_sender, {}, {})
    rt = Runtime(app, settings, deps)
    app.runtime = rt
    deps.send = rt.send
    deps.recent = DirectTable(recent_table, rt.send)
    deps.pending = DirectTable(pending_table, rt.send)
    deps.verdicts = DirectTable(verdicts_table, rt.send)
    _install_state(app, rt, partitions)
    _install_sinks(app, rt)
    install_evaluations(app, rt)
    steps = install_steps(app, rt)
    deps.view, deps.feed = steps.view, steps.feed  # the gate judges with the conversation the steps service sees
    _install_lifecycle(app, rt, configs)
    return app, rt


async def _unset_sender(
    topic: str, key: bytes, value: bytes | None, partition: int | None = None
) -> asyncio.Future[Any]:
    raise RuntimeError("sender used before the runtime was built")


def _install_state(app: DriftApp, rt: Runtime, partitions: int) -> None:
    """The fast lanes (drafts into the gate, committed messages into its state) and the agent-config agent."""
    topics = Topics(rt.settings.topic_prefix)
    for topic in (topics.drafts, topics.messages):
        app.topics.add(raw_topic(app, topic))  # subscribed by Faust's group, co-partitioned with the tables
    state = StateLane(rt, partitions)
    gate = GateLane(rt)
    app.fast_lanes = {topics.drafts: gate, topics.messages: state}

    async def revoked(sender: Any, revoked: set[Any], **kwargs: Any) -> None:
        await gate.on_revoked(revoked)  # awaited before the group re-forms: see GateLane.on_revoked

    app.on_partitions_revoked.connect(revoked)  # type: ignore[arg-type]

    @app.timer(COUNT_FLUSH_S)  # type: ignore[untyped-decorator]
    async def flush_counts() -> None:
        if state.due():
            await state.flush_counts()

    @app.agent(raw_topic(app, topics.agent_config), name="agent-config")
    async def agent_config(stream: Any) -> None:
        async for event in stream.events():
            try:
                rt.deps.configs.apply(*config_change(event.value))
            except (PayloadError, ValueError) as exc:
                await rt.dead_letter(event, f"invalid agent-config record: {exc}")


def config_change(raw: bytes | None) -> tuple[str, AgentConfig]:
    """An ``agent-config`` record as (agent id, configuration); the configuration is strict too (a JSON
    ``"true"`` or ``1`` is not a boolean); raises PayloadError or ValueError."""
    change = decode(AgentConfigChange, raw)
    return change.agent_id, AgentConfig.model_validate(change.config, strict=True)


def _install_sinks(app: DriftApp, rt: Runtime) -> None:
    """The Postgres sinks (plain consumer groups, see :mod:`streams.sinks`), unless this worker runs without."""
    if not rt.settings.sinks:
        return

    async def store() -> Store:
        await rt.store_ready.wait()
        assert rt.store is not None
        return rt.store

    @app.task  # type: ignore[untyped-decorator]
    async def sinks() -> None:
        await run_sinks(rt.settings, store)


STORE_RETRY_MAX_S = 5.0


async def open_store(rt: Runtime, configs: ConfigCache) -> None:
    """Connect, migrate and load the agent configurations, retrying (with the reason on ``/health``) until the
    database answers: a worker never gates with defaults because its database is not there yet."""
    url = rt.settings.database()
    delay = 0.25
    while True:
        try:
            if rt.store is None:
                rt.waiting_for = "connecting to the database"
                rt.store = await Store.connect(url)
            rt.waiting_for = "migrating the database"
            await rt.store.migrate()
            rt.waiting_for = "loading agent configurations"
            configs.attach(rt.store)
            await configs.load()
            break
        except ConfigurationError:
            raise
        except Exception as exc:  # unreachable, restarting, locked: wait and say why
            rt.waiting_for = f"waiting for the database: {exc}"
            log.warning("%s; retrying in %.1f s", rt.waiting_for, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, STORE_RETRY_MAX_S)
    rt.waiting_for = None
    rt.store_ready.set()


def _install_lifecycle(app: DriftApp, rt: Runtime, configs: ConfigCache) -> None:
    @app.task  # type: ignore[untyped-decorator]
    async def connect_store() -> None:
        await open_store(rt, configs)

    @app.timer(1.0)  # type: ignore[untyped-decorator]
    async def refresh_configs() -> None:
        if rt.store_ready.is_set():
            await configs.refresh()

    @app.page("/health")
    async def health_page(web: Any, request: Any) -> Any:
        """200 once the worker gates (database up, configurations loaded); 503 with the reason before."""
        body = {"ready": rt.waiting_for is None, "waiting_for": rt.waiting_for}
        return web.json(body, status=200 if rt.waiting_for is None else 503)

    @app.page("/stats")
    async def stats_page(web: Any, request: Any) -> Any:
        return web.json({**rt.deps.stats.snapshot(), "judge": rt.deps.judge.name})  # it prices the tokens

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        from streams.metrics import render_prometheus

        return web.text(render_prometheus(rt.deps.stats.snapshot()), content_type="text/plain; version=0.0.4")

    async def announce(callback: Callable[[], None]) -> None:
        await rt.store_ready.wait()
        callback()

    async def ready(sender: Any, *args: Any, signal: Any = None, **kwargs: Any) -> None:
        # Never block here: recovery awaits this signal, and the store task starts after recovery.
        if rt.on_ready is not None:
            callback, rt.on_ready = rt.on_ready, None
            rt.background.add(asyncio.ensure_future(announce(callback)))

    app.on_rebalance_complete.connect(ready)  # type: ignore[arg-type]
