"""The composition root of a worker: the Faust application of the gate and every service it hosts.

Nothing happens at import time; :func:`build_app` wires a fresh app for one :class:`Settings` (every value
bounded when it was built), in dependency order — output producer and dead letters, the app, its tables,
the history view, the store and the configuration cache, the judge budget, the services (gate, steps,
evaluations), the lanes — each object built once, complete, from what was built before it; a service gets
its ports (see :mod:`streams.services.context`), never the worker. Delivery is at-least-once (the embedded
broker has no transactions): drafts are acked only after their records are sent, and every sink is idempotent."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, NamedTuple

from engine.errors import ConfigurationError, PayloadError
from engine.judges.base import Judge
from engine.judges.budget import EVAL_LANE, GATE_LANE, SHADOW_LANE, JudgeBudget
from engine.judges.factory import make_judge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.pricing import PriceTable
from engine.settings import Settings
from streams.runtime import faust_private
from streams.runtime.faust_app import DriftApp, faust_app, raw_topic
from streams.runtime.history import HistoryFeed, HistoryView
from streams.runtime.output import Output
from streams.runtime.supervise import contained, supervised
from streams.runtime.tables import DirectTable
from streams.services.alerting import AlertCounts, MonitorPolicies, Webhook
from streams.services.anchors import AnchorService, check_anchor_file
from streams.services.candidates import Candidates
from streams.services.configs import ConfigCache
from streams.services.context import DeadLetters, WorkerStore
from streams.services.evaluations import EvaluationService
from streams.services.eviction import Evictor, install_eviction
from streams.services.gate import GateDeps, Sender
from streams.services.monitor import MonitorService, run_monitor
from streams.services.shadow import ShadowCache, ShadowService, run_shadows
from streams.services.shadow_judge import CandidateJudge
from streams.services.sinks import run_sinks
from streams.services.stats import GateStats, RetryCounts, TimedJudge
from streams.services.steps import CustomInterventions, StepProcessor, StepService, load_custom
from streams.wire.payloads import AgentConfigChange, Alert, decode
from streams.wire.topics import Topics
from streams.worker.claims import PartitionClaims
from streams.worker.lanes import COUNT_FLUSH_S, GateLane, StateLane, bind_record
from streams.worker.metrics import CONTENT_TYPE, exposition, metrics_registry
from streams.worker.peers import PeerWatch
from streams.worker.restoring import restore_plan

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Monitoring:
    """The drift monitor beside the verdict path: its consumer, the anchors, the alert counts, the webhook."""

    service: MonitorService
    anchors: AnchorService
    counts: AlertCounts
    webhook: Webhook | None


def _monitoring(settings: Settings, store: WorkerStore, configs: ConfigCache, judge: Judge, send: Sender,
                stats: GateStats, judge_name: str) -> Monitoring:  # fmt: skip
    counts = AlertCounts()
    url = settings.alert_webhook_url
    webhook = Webhook(url.get_secret_value(), counts) if url is not None else None

    def on_alert(alert: Alert) -> None:
        counts.count(alert)
        if webhook is not None:
            webhook.offer(alert)

    policies = MonitorPolicies(settings, configs, judge_name)
    service = MonitorService(settings, store, policies, send, on_alert)
    return Monitoring(service, AnchorService(settings, store, judge, service, stats), counts, webhook)


@dataclass(frozen=True)
class Worker:
    """What :func:`build_app` wired, in the order it was built (for the runner, ``/health`` and tests)."""

    settings: Settings
    output: Output
    letters: DeadLetters
    store: WorkerStore
    configs: ConfigCache
    budget: JudgeBudget
    gate: GateDeps
    steps: StepService
    evaluations: EvaluationService
    gate_lane: GateLane
    state_lane: StateLane
    evictor: Evictor
    monitor: Monitoring
    shadows: ShadowService


def _one_settings_object(settings: object) -> None:
    """A worker takes one :class:`Settings` (whose values were bounded when it was built), never a default."""
    if not isinstance(settings, Settings):
        raise ConfigurationError(f"a worker is built from one Settings object, not {type(settings).__name__}")
    check_anchor_file(settings)  # a bad anchor file: one line before anything starts


class AppConsumer:
    """Faust's consumer of ``app`` as the lanes use it (Faust creates the consumer when the worker starts)."""

    def __init__(self, app: DriftApp) -> None:
        self._app = app

    def ack(self, message: Any) -> None:
        self._app.consumer.ack(message)

    def release(self, message: Any) -> None:
        faust_private.release(self._app.consumer, message)


def build_app(
    settings: Settings, judge: Judge, *, partitions: int = 3, on_ready: Callable[[], None] | None = None,
    retries: RetryCounts | None = None,
) -> tuple[DriftApp, Worker]:  # fmt: skip
    """A ready-to-run Faust app for ``settings``, built in dependency order: the output producer and the dead-letter
    path, the app, its tables, the history view, the services (each given only its ports), the lanes. ``judge`` is
    shared by the gate, the steps and the evaluations through one in-flight budget, which also applies the judge
    deadline (pass ``make_judge(..., own_limits=False)``). ``on_ready`` is called once partitions are assigned and
    the store is open; ``retries`` counts ``drift_retries_total`` (pass the one the judge was given)."""
    _one_settings_object(settings)
    topics, stats = Topics(settings.topic_prefix), GateStats(retries=retries or RetryCounts())
    output = Output(settings)
    letters = DeadLetters(output.send, topics.dlq, stats)  # the path of records that cannot be processed
    store = WorkerStore(settings.database(), stats.retries)
    restore = restore_plan(settings, store, partitions)  # table restores bounded by live state
    app = faust_app(settings, partitions, closing=output, skipped=letters.batch, restore=restore)
    tables = _tables(app, settings, partitions, output)
    feed = HistoryFeed(settings, HistoryView(max_age_s=settings.agent_idle_ttl_s), stats.retries)  # older: evicted
    configs = ConfigCache(store, wait_for_store=True)  # loaded by store.open
    budget, online, offline, library, candidates = _judging(settings, judge, stats)
    gate = GateDeps(settings, online, library, configs, output.send, tables.recent, tables.pending, stats=stats,
                    view=feed.view, feed=feed, verdicts=tables.verdicts, candidates=candidates)  # fmt: skip
    processor = StepProcessor(settings, online, configs, library, feed.view, feed,
                              CustomInterventions(load_custom(settings.propositions_dir)), stats)  # fmt: skip
    steps = StepService(settings, processor, feed, output.send, letters.record)
    evaluations = EvaluationService(settings, offline, store, output.send, letters.record, stats.retries)
    gate_lane = GateLane(gate, consumer := AppConsumer(app), output.batch, letters.record)
    state_lane = StateLane(gate, tables.counts, consumer, letters.record, output.send,
                           bind=functools.partial(bind_record, app), requests=topics.evaluation_requests,
                           threshold=settings.eval_threshold)  # fmt: skip
    evictor = Evictor(settings=settings, configs=configs, view=feed.view, recent=tables.recent,
                      pending=tables.pending, verdicts=tables.verdicts, busy=gate_lane.dispatcher.busy,
                      owned=functools.partial(owned_partitions, app, topics.drafts), stats=stats)  # fmt: skip
    monitor, send = _monitoring(settings, store, configs, offline, output.send, stats, judge.name), output.send
    worker = Worker(settings, output, letters, store, configs, budget, gate, steps, evaluations, gate_lane, state_lane,
                    evictor, monitor, _shadowing(settings, store, configs, candidates, feed.view, send))  # fmt: skip
    _install(app, worker, on_ready)
    return app, worker


def _judging(
    settings: Settings, judge: Judge, stats: GateStats
) -> tuple[JudgeBudget, Judge, Judge, PropositionLibrary, Candidates]:
    """The judge budget, the gate's and the evaluations' judges (one timed judge on two lanes), the worker's
    library, and the per-agent trees and judges (after a promote) and the shadows' candidates, each on its lane."""
    budget, timed = JudgeBudget(settings.judge_concurrency, settings.eval_judge_share,
                                settings.shadow_judge_slots), TimedJudge(judge, stats)  # fmt: skip
    online, offline = (budget.judge(timed, lane, settings.judge_deadline_s) for lane in (GATE_LANE, EVAL_LANE))
    library = PropositionLibrary(settings.propositions_dir)
    lanes = {GATE_LANE: online, SHADOW_LANE: budget.judge(judge, SHADOW_LANE, settings.judge_deadline_s)}
    make = functools.partial(make_judge, settings=settings, own_limits=False)
    return budget, online, offline, library, Candidates(library, lanes, make, budget, settings.judge_deadline_s)


def _shadowing(settings: Settings, store: WorkerStore, configs: ConfigCache, candidates: Candidates,
               view: HistoryView, send: Sender) -> ShadowService:  # fmt: skip
    prices = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
    return ShadowService(settings, store, ShadowCache(), CandidateJudge(settings, configs, candidates, view, prices),
                         send)  # fmt: skip


def owned_partitions(app: DriftApp, topic: str) -> set[int]:
    """The partitions of ``topic`` this worker is active for."""
    return {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == topic}


class GateTables(NamedTuple):
    recent: DirectTable  # agent id -> its recent committed actions
    pending: DirectTable  # draft id -> its attempts waiting for a retry
    verdicts: DirectTable  # draft id -> {attempt: its verdict record}
    counts: Any  # agent id -> actions in the current window (Faust's windowed table)


def _tables(app: DriftApp, settings: Settings, partitions: int, output: Output) -> GateTables:
    """The gate's tables: three written directly on the output producer, the windowed counts by Faust."""

    def table(name: str, default: type) -> DirectTable:
        return DirectTable(app.Table(name, default=default, partitions=partitions), output.send)

    window = timedelta(seconds=settings.eval_window_s)
    counts = app.Table("message-counts", default=int, partitions=partitions).tumbling(window, expires=window * 2)
    return GateTables(table("recent-messages", list), table("pending-attempts", list),
                      table("verdict-records", dict), counts)  # fmt: skip


def _install(app: DriftApp, worker: Worker, on_ready: Callable[[], None] | None) -> None:
    """Register the worker's agents, lanes, tasks and pages on ``app``."""
    _install_lanes(app, worker)
    if worker.settings.sinks:  # else `drift sinks` runs them (see streams.services.sinks)
        _install_sinks(app, worker.settings, worker.store, worker.gate.stats.retries)
    worker.evaluations.install(app)
    worker.steps.install(app)
    install_eviction(app, worker.settings, worker.evictor, worker.gate.flush_tables)  # idle agents leave memory
    _install_monitor(app, worker.monitor, worker.store)
    _install_shadows(app, worker.shadows, worker.store, worker.letters)
    _install_lifecycle(app, worker, on_ready)
    _install_peer_watch(app, worker.settings, worker.store.ready, worker.gate.stats)
    _install_stats_pages(app, worker)
    _install_config_page(app, worker.configs)
    _install_partitions_page(app, Topics(worker.settings.topic_prefix).drafts)


def _install_lanes(app: DriftApp, worker: Worker) -> None:
    """The fast lanes (drafts into the gate, committed messages into its state) and the agent-config agent."""
    topics, gate, state = Topics(worker.settings.topic_prefix), worker.gate_lane, worker.state_lane
    for topic in (topics.drafts, topics.messages):
        app.topics.add(raw_topic(app, topic))  # subscribed by Faust's group, co-partitioned with the tables
    app.add_fast_lane(topics.drafts, gate)
    app.add_fast_lane(topics.messages, state)
    app.close_before_output(gate.dispatcher.close)  # drafts being judged send their records on the output
    app.close_before_output(gate.flushed)  # so do the inline drafts of the batches decided last

    async def revoked(sender: Any, revoked: set[Any], **kwargs: Any) -> None:
        await gate.on_revoked(revoked)  # awaited before the group re-forms: see GateLane.on_revoked

    app.on_partitions_revoked.connect(revoked)  # type: ignore[arg-type]

    @app.timer(COUNT_FLUSH_S)  # type: ignore[untyped-decorator]
    @contained("action counts flush")
    async def flush_counts() -> None:
        if state.due():
            await state.flush_counts()

    @app.agent(raw_topic(app, topics.agent_config), name="agent-config")
    async def agent_config(stream: Any) -> None:
        async for event in stream.events():
            try:
                worker.configs.apply(*config_change(event.value))
            except (PayloadError, ValueError) as exc:
                await worker.letters.record(event, f"invalid agent-config record: {exc}")


def config_change(raw: bytes | None) -> tuple[str, AgentConfig]:
    """An ``agent-config`` record as (agent id, configuration); the configuration is strict too (a JSON
    ``"true"`` or ``1`` is not a boolean); raises PayloadError or ValueError."""
    change = decode(AgentConfigChange, raw)
    return change.agent_id, AgentConfig.model_validate(change.config, strict=True)


def _install_sinks(app: DriftApp, settings: Settings, store: WorkerStore, retries: RetryCounts) -> None:
    """The Postgres sinks (plain consumer groups, see :mod:`streams.services.sinks`), beside the verdict path: a
    failure is logged and they start again, as the monitor's and the shadow lane's tasks do (an app task that
    raises crashes the whole worker)."""
    sinks = functools.partial(run_sinks, settings, store, on_retry=retries, groups=app.beside_groups)
    app.task(supervised(sinks, "sinks"))


def _install_monitor(app: DriftApp, monitoring: Monitoring, store: WorkerStore) -> None:
    """The monitor's consumer, the anchors' re-scoring, the webhook and the open-alerts gauge: worker tasks
    beside the verdict path (a failure is logged and the task restarts; the gate never waits for them)."""
    jobs: dict[str, Callable[[], Any]] = {
        "monitor consumer": functools.partial(run_monitor, monitoring.service, app.beside_groups),
        "anchor re-scoring": monitoring.anchors.run,
    }
    if monitoring.webhook is not None:
        jobs["alert webhook"] = monitoring.webhook.run
    for what, job in jobs.items():
        app.task(supervised(job, what))

    @app.timer(10.0)  # type: ignore[untyped-decorator]
    @contained("open alerts count")
    async def open_alerts() -> None:
        if store.ready.is_set():
            monitoring.counts.open = await (await store()).open_alerts()
            await (await store()).prune_monitor_seen()


def _install_shadows(app: DriftApp, shadows: ShadowService, store: WorkerStore, letters: DeadLetters) -> None:
    """The shadow lane (a task beside the gate) and the shadows it runs: from the compacted ``shadows`` topic at
    once and from the table every second; ``/shadows`` lists the running ones this worker holds."""
    app.task(supervised(functools.partial(run_shadows, shadows, app.beside_groups), "shadow lane"))

    @app.agent(raw_topic(app, shadows.topics.shadows), name="shadows")
    async def shadow_changes(stream: Any) -> None:
        async for event in stream.events():
            try:
                shadows.cache.apply(event.value)
            except (PayloadError, ValueError) as exc:
                await letters.record(event, f"invalid shadows record: {exc}")

    @app.timer(1.0)  # type: ignore[untyped-decorator]
    @contained("shadows refresh (the last known shadows stay)")
    async def refresh_shadows() -> None:
        if store.ready.is_set():
            shadows.cache.replace(await (await store()).shadow_states())

    @app.page("/shadows")
    async def shadows_page(web: Any, request: Any) -> Any:
        return web.json({"running": sorted(s.name for s in shadows.cache.running())})


def _install_peer_watch(app: DriftApp, settings: Settings, ready: asyncio.Event, stats: GateStats) -> None:
    """A worker killed without a word hands its partitions over at once (streams.worker.peers)."""
    if (watch := PeerWatch(settings, app, ready)).enabled:
        if not settings.group_eager:  # the gate's consumer goes on judging through a join (streams.worker.claims)
            app.partition_claims = watch.claims = claims = PartitionClaims(watch, app.loop)
            stats.probes["claim_wait_seconds"] = lambda: claims.waited_s
        app.task(supervised(watch.run, "peer watch", pause_s=1.0))
        app.first_on_stop(watch.stopping)
        app.last_on_shutdown(watch.stopped)
        app.leader_stopping = watch.leader_stopping
        stats.probes["group_members_ended"] = lambda: watch.ended
        stats.probes["group_rejoins_on_news"] = lambda: watch.rejoined

        async def rebalancing(sender: Any, *args: Any, **kwargs: Any) -> None:
            await watch.rebalancing()  # the peers rejoin now, not at their next heartbeat

        app.on_partitions_revoked.connect(rebalancing)  # type: ignore[arg-type]


def _install_stats_pages(app: DriftApp, worker: Worker) -> None:
    @app.page("/stats")
    async def stats_page(web: Any, request: Any) -> Any:
        anchors = worker.monitor.anchors  # its calls and tokens also count in the judge's totals
        return web.json({**worker.gate.stats.snapshot(), "anchor_calls": anchors.calls,
                         "anchor_tokens": anchors.tokens, "judge": worker.gate.judge.name})  # fmt: skip

    registry = metrics_registry(worker.gate.stats, worker.monitor.counts, worker.shadows.counts)

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        return web.text(exposition(registry).decode(), content_type=CONTENT_TYPE)


def _install_config_page(app: DriftApp, configs: ConfigCache) -> None:
    @app.page("/configs/{agent_id}")
    async def config_page(web: Any, request: Any, agent_id: str) -> Any:
        """The configuration this worker gates ``agent_id`` with (404 before it has one): what ``drift config
        set`` changed is visible here once the worker applied it."""
        config = await configs.lookup(agent_id)  # an agent not in memory: its stored configuration
        if config is None or not configs.loaded:
            return web.json({"agent_id": agent_id, "config": None}, status=404)
        return web.json({"agent_id": agent_id, "config": config.model_dump(mode="json")})


def _install_partitions_page(app: DriftApp, drafts: str) -> None:
    @app.page("/partitions")
    async def partitions_page(web: Any, request: Any) -> Any:
        """The drafts partitions this worker is active for now (empty during a rebalance): which worker a
        partition's drafts wait on, e.g. during a deploy (ops/bench/handover.py reads it)."""
        return web.json({"drafts": sorted(owned_partitions(app, drafts))})


def _install_lifecycle(app: DriftApp, worker: Worker, on_ready: Callable[[], None] | None) -> None:
    store, configs, background = worker.store, worker.configs, set[asyncio.Future[None]]()
    announce_once = [on_ready]

    @app.task  # type: ignore[untyped-decorator]
    async def connect_store() -> None:
        await store.open(configs)

    @app.timer(1.0)  # type: ignore[untyped-decorator]
    @contained("configuration refresh")
    async def refresh_configs() -> None:
        if store.ready.is_set():
            await configs.refresh(await store())

    @app.page("/health")
    async def health_page(web: Any, request: Any) -> Any:
        """200 once the worker gates; 503 with the reason before (streams.runtime.readiness, the store)."""
        waiting = app.readiness.waiting_for(app) or store.waiting_for
        return web.json({"ready": waiting is None, "waiting_for": waiting}, status=200 if waiting is None else 503)

    async def announce(callback: Callable[[], None]) -> None:
        await store.ready.wait()
        callback()

    async def ready(sender: Any, *args: Any, signal: Any = None, **kwargs: Any) -> None:
        # Never block here: recovery awaits this signal, and the store task starts after recovery.
        callback, announce_once[0] = announce_once[0], None
        if callback is not None:
            background.add(asyncio.ensure_future(announce(callback)))

    app.on_rebalance_complete.connect(ready)  # type: ignore[arg-type]
