"""The Faust application of the gate: topics, tables, agents, timers and web pages, built by a factory.

Nothing happens at import time; :func:`build_app` wires a fresh app for one :class:`Settings`.
Delivery is at-least-once (the embedded broker has no transactions): drafts are acked only after their
records are sent, and every sink is idempotent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from engine.errors import ConfigurationError, PayloadError
from engine.judges.base import Judge, LimitedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import Settings
from streams.runtime.faust_app import DriftApp, faust_app, raw_topic
from streams.runtime.tables import DirectTable
from streams.services.configs import ConfigCache
from streams.services.context import Runtime
from streams.services.evaluations import install_evaluations
from streams.services.gate import GateDeps
from streams.services.sinks import run_sinks
from streams.services.stats import GateStats, TimedJudge
from streams.services.steps import install_steps
from streams.store import Store
from streams.wire.payloads import AgentConfigChange, decode
from streams.wire.topics import Topics
from streams.worker.lanes import COUNT_FLUSH_S, GateLane, StateLane
from streams.worker.metrics import CONTENT_TYPE, exposition, metrics_registry
from streams.worker.restoring import install_restore

log = logging.getLogger(__name__)


def build_app(settings: Settings, judge: Judge, *, partitions: int = 3) -> tuple[DriftApp, Runtime]:
    """A ready-to-run Faust app for ``settings`` with ``judge`` behind a global in-flight cap."""
    app = faust_app(settings, partitions)
    recent_table = app.Table("recent-messages", default=list, partitions=partitions)
    pending_table = app.Table("pending-attempts", default=list, partitions=partitions)
    verdicts_table = app.Table("verdict-records", default=dict, partitions=partitions)
    configs = ConfigCache(None, wait_for_store=True)  # decides nothing until the stored configs are in
    library = PropositionLibrary(settings.propositions_dir)
    stats = GateStats()
    limited = LimitedJudge(TimedJudge(judge, stats), settings.judge_concurrency)
    deps = GateDeps(settings, limited, library, configs, _unset_sender, {}, {}, stats=stats)
    rt = Runtime(app, settings, deps)
    app.runtime = rt
    install_restore(app, rt, partitions)  # table restores bounded by live state (streams.runtime.restore)
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
    _install_config_page(app, configs)
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
    """The Postgres sinks (plain consumer groups, see :mod:`streams.services.sinks`), unless this worker runs
    without."""
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


def _install_config_page(app: DriftApp, configs: ConfigCache) -> None:
    @app.page("/configs/{agent_id}")
    async def config_page(web: Any, request: Any, agent_id: str) -> Any:
        """The configuration this worker gates ``agent_id`` with (404 before it has one): what ``drift config
        set`` changed is visible here once the worker applied it."""
        config = configs.known(agent_id)
        if config is None or not configs.loaded:
            return web.json({"agent_id": agent_id, "config": None}, status=404)
        return web.json({"agent_id": agent_id, "config": config.model_dump(mode="json")})


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

    registry = metrics_registry(rt.deps.stats)

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        return web.text(exposition(registry).decode(), content_type=CONTENT_TYPE)

    async def announce(callback: Callable[[], None]) -> None:
        await rt.store_ready.wait()
        callback()

    async def ready(sender: Any, *args: Any, signal: Any = None, **kwargs: Any) -> None:
        # Never block here: recovery awaits this signal, and the store task starts after recovery.
        if rt.on_ready is not None:
            callback, rt.on_ready = rt.on_ready, None
            rt.background.add(asyncio.ensure_future(announce(callback)))

    app.on_rebalance_complete.connect(ready)  # type: ignore[arg-type]
