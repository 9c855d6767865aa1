"""What ``drift experiment run | table1 | report ID`` do, apart from option parsing: build the run, reach the
service (a running one, or a private embedded stack like ``drift simulate --embedded``), show progress, read
stored experiments back as report input."""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigurationError, DriftError
from engine.experiments.budget import Budget, CallEstimate, estimate_session, scale_plans
from engine.experiments.data import ExperimentData
from engine.experiments.metrics import MetricSets, metric_sets
from engine.experiments.paper import SCENARIO_PAPER_KEYS
from engine.pricing import PriceTable, format_cost
from engine.scoring import JudgeStrategy
from engine.settings import Settings
from engine.simulation.plan import SessionPlan, plan_sessions
from engine.simulation.scenario import Scenario, load_scenario
from streams.cli.common import run as run_command

if TYPE_CHECKING:
    from rich.console import Console

    from streams.client.experiments import Progress


@dataclass(frozen=True, slots=True)
class RunOptions:
    scenario: str
    scale: float = 1.0
    population: Path | None = None
    concurrency: int = 4
    budget_usd: float | None = None
    max_tokens: int | None = None
    resume: str | None = None
    strategy: JudgeStrategy = JudgeStrategy.INDIVIDUAL
    prices: Path | None = None


@dataclass(frozen=True, slots=True)
class Planned:
    scenario: Scenario
    personas: dict[str, Any]
    plans: list[SessionPlan]
    sets: MetricSets
    estimates: dict[str, CallEstimate]


def _model(spec: str, settings: Settings) -> str:
    kind, _, model = spec.partition(":")
    if kind == "anthropic":
        return f"anthropic:{model or settings.anthropic_model}"
    if kind == "openai-compatible":
        return f"openai-compatible:{model or settings.openai_model}"
    return spec


def plan(options: RunOptions, settings: Settings, scenario_name: str | None = None) -> Planned:
    from engine.personas import load_population
    from engine.simulation.population import BUNDLED_TINY

    scenario = load_scenario(scenario_name or options.scenario)
    personas = load_population(options.population or BUNDLED_TINY, scenario.population.fragments)
    plans = scale_plans(plan_sessions(scenario, list(personas)), options.scale)
    sets = metric_sets(scenario, settings.propositions_dir)
    estimates = {
        arm: estimate_session(scenario, arm, sets, strategy=options.strategy) for arm in ("treatment", "control")
    }
    return Planned(scenario, personas, plans, sets, estimates)


def dry_run(planned: Planned, options: RunOptions, settings: Settings, console: Console) -> None:
    from rich.table import Table

    prices = PriceTable.load(options.prices)
    actor, judge = _model(settings.effective_actor(), settings), _model(settings.effective_judge(), settings)
    scenario, n = planned.scenario, len(planned.plans)
    table = Table(title=f"{scenario.name} · {n} of {scenario.sessions_per_arm} sessions per arm · actor {actor} · "
                        f"judge {judge} (upper bounds)")  # fmt: skip
    for column in ("arm", "sessions", "actor calls", "judge calls", "tokens ≤", "cost ≤"):
        table.add_column(column, justify="right")
    for arm, estimate in planned.estimates.items():
        total = estimate.times(n)
        table.add_row(arm, str(n), f"{total.actor_calls:,}", f"{total.judge_calls:,}", f"{total.tokens:,}",
                      format_cost(total.cost(prices, actor, judge)))  # fmt: skip
    console.print(table)
    for p in planned.plans:
        console.print(f"[dim]{p.key:<32}[/] group {p.group} · {', '.join(p.agent_ids)}", highlight=False)


@contextmanager
def service_settings(settings: Settings, embedded: bool, console: Console) -> Iterator[Settings]:
    """``settings`` for a running service, or those of an embedded stack started for the block: a private
    broker and worker, and the embedded database of ``DRIFT_DATA_DIR`` (kept, so ``drift experiment report
    ID`` and ``--resume`` find the experiment afterwards)."""
    if not embedded:
        yield settings
        return
    import tempfile

    from streams.embedded import EmbeddedStack, WorkerProcess, free_port, start_broker, start_database

    root = Path(tempfile.mkdtemp(prefix="drift-experiment-"))
    database = start_database(settings.data_dir)
    stack = EmbeddedStack(root, start_broker(free_port(), log_file=root / "tansu.log"), database)
    settings = settings.with_(broker=stack.broker.bootstrap, database_url=database.url, topic_prefix="exp.")
    worker = None
    try:
        run_command(_prepare(settings))
        env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
               "DRIFT_WEB_PORT": str(free_port()), "DRIFT_TOPIC_PREFIX": settings.topic_prefix}  # fmt: skip
        started = time.monotonic()
        judge = ["--judge", settings.judge] if settings.judge else []
        worker = WorkerProcess.for_prefix(env, root / "worker.log", *judge)
        worker.start(timeout_s=90)
        console.print(f"[dim]embedded stack: {worker.ready_line} ({time.monotonic() - started:.1f}s); "
                      f"experiments stored in {settings.data_dir / 'pgdata'}[/]")  # fmt: skip
        yield settings
    finally:
        if worker is not None:
            worker.stop()
        stack.stop()
        shutil.rmtree(root, ignore_errors=True)


async def _prepare(settings: Settings) -> None:
    from streams.store import Store
    from streams.wire.kafka import create_topics

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        await store.migrate()
    await create_topics(settings)


async def run(planned: Planned, options: RunOptions, settings: Settings, console: Console) -> tuple[str, str]:
    """Run (or resume) one experiment; returns its id and final status."""
    from engine.actors.factory import make_actor
    from engine.actors.llm import LlmActor
    from engine.actors.scripted import ScriptedListModel
    from engine.judges.factory import make_judge
    from streams.client import GateClient
    from streams.client.experiments import ExperimentRun, MeteredActor, MeteredModel, MeteredService
    from streams.client.simulate import Simulation
    from streams.store import Store
    from streams.store.experiments import ExperimentStore

    actor = make_actor(settings.effective_actor(), settings)
    extractor = actor.model if isinstance(actor, LlmActor) else ScriptedListModel()
    judge = make_judge(settings.effective_judge(), settings)
    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as db:
        await db.migrate()
        xstore = ExperimentStore(db)
        experiment_id, attempt = await _open(xstore, planned, options, actor.name, judge.name)
        async with GateClient(settings=settings, timeout_s=max(60.0, settings.step_deadline_s * 3)) as gate:
            sim = Simulation(planned.scenario, planned.personas, MeteredActor(actor), MeteredModel(extractor),
                             MeteredService(gate), f"{experiment_id}.a{attempt}")  # fmt: skip
            budget = Budget(options.budget_usd, options.max_tokens)
            prices = PriceTable.load(options.prices)
            runner = ExperimentRun(experiment_id, sim, judge, planned.sets, xstore, planned.estimates, budget,
                                   prices, options.concurrency, options.strategy)  # fmt: skip
            console.print(f"[bold]drift experiment run[/] · {experiment_id} · {planned.scenario.name} · "
                          f"{len(planned.plans)} session(s) per arm · actor {actor.name} · "
                          f"judge {judge.name}")  # fmt: skip
            with _display(console, len(planned.plans) * 2) as progress, _interruptible(runner.stopping, console):
                status = await runner.run(planned.plans, progress)
        if progress.stopped_by_budget:
            console.print(f"[yellow]budget reached: {progress.done} session(s) stored; experiment is partial[/]")
        elif progress.failed:
            console.print(f"[yellow]{progress.failed} session(s) failed (not stored): finish with --resume[/]")
        console.print(f"report: drift experiment report {experiment_id}  ·  resume: drift experiment run "
                      f"{planned.scenario.name} --resume {experiment_id}", highlight=False)  # fmt: skip
    return experiment_id, status


async def _open(xstore: Any, planned: Planned, options: RunOptions, actor: str, judge: str) -> tuple[str, int]:
    scenario = planned.scenario
    if options.resume:
        stored = await xstore.get(options.resume)  # checked before it is marked running again
        if stored.scenario != scenario.name:
            raise ConfigurationError(f"experiment {options.resume} ran scenario {stored.scenario}, not {scenario.name}")
        planned_before = stored.settings.get("sessions_per_arm")
        if planned_before != len(planned.plans):
            raise ConfigurationError(
                f"experiment {options.resume} planned {planned_before} sessions per arm (--scale "
                f"{stored.settings.get('scale')}), this run {len(planned.plans)}: resume with the same --scale"
            )
        stored = await xstore.resume(options.resume)
        return stored.id, int(stored.attempts)
    experiment_id = f"x-{scenario.name}-{datetime.now(UTC):%Y%m%dT%H%M%S%f}"[:80]
    settings = {"scale": options.scale, "sessions_per_arm": len(planned.plans), "actor": actor, "judge": judge,
                "population": str(options.population or "bundled tiny"), "budget_usd": options.budget_usd,
                "max_tokens": options.max_tokens, "strategy": options.strategy.value}  # fmt: skip
    await xstore.create(experiment_id, scenario.name, SCENARIO_PAPER_KEYS.get(scenario.name), settings)
    return experiment_id, 1


@contextmanager
def _interruptible(stopping: asyncio.Event, console: Console) -> Iterator[None]:
    """First Ctrl-C: launch nothing more, finish and store the running sessions (the experiment ends
    ``partial``). Second: cancel them — their transactions roll back and ``--resume`` redoes them."""
    loop, main = asyncio.get_running_loop(), asyncio.current_task()

    def interrupt() -> None:
        if stopping.is_set() and main is not None:
            main.cancel()
            return
        stopping.set()
        console.print("[yellow]stopping: running sessions finish and are stored (Ctrl-C again to abort them)[/]")

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


@contextmanager
def _display(console: Console, total: int) -> Iterator[Progress]:
    from rich.live import Live

    from streams.client.experiments import Progress

    started = time.monotonic()

    def render(p: Progress) -> str:
        finished = p.done - p.skipped + p.failed
        elapsed = time.monotonic() - started
        left = total - p.done - p.failed
        eta = f"{elapsed / finished * left:.0f}s" if finished else "?"
        return (f"sessions {p.done}/{total} ({p.failed} failed) · actor+judge calls {p.llm_calls:,} · tokens "
                f"{p.tokens:,} · cost {format_cost(p.cost_usd)} · elapsed {elapsed:.0f}s · ETA {eta}")  # fmt: skip

    with Live(console=console, refresh_per_second=4, transient=True) as live:
        progress = Progress(total=total, on_change=lambda p: live.update(render(p)))
        yield progress
    console.print(render(progress), highlight=False)


@contextmanager
def reachable_database(settings: Settings) -> Iterator[Settings]:
    """``settings`` as they are when a database URL is configured; otherwise the embedded database of
    ``DRIFT_DATA_DIR`` (where ``--embedded`` experiments are kept), started for the block if it is not running."""
    if settings.database_url:
        yield settings
        return
    from streams.embedded import start_database

    database = start_database(settings.data_dir)
    try:
        yield settings.with_(database_url=database.url)
    finally:
        database.stop()


async def load_data(settings: Settings, experiment_ids: list[str]) -> list[ExperimentData]:
    """Stored experiments as report input (agent ids → persona clusters; the paper key from the scenario)."""
    from streams.store import Store
    from streams.store.experiments import ExperimentStore, experiment_data

    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as db:
        xstore = ExperimentStore(db)
        datasets = []
        for experiment_id in experiment_ids:
            stored = await xstore.get(experiment_id)
            rows = await xstore.samples(experiment_id)
            data = experiment_data(stored, rows, _metric_order(stored.scenario, settings))
            datasets.append(replace(data, notes=(*data.notes, _spent(await xstore.totals(experiment_id)))))
    return datasets


def _spent(totals: dict[str, Any]) -> str:
    cost = totals.get("cost_usd")
    return (
        f"spent: {totals.get('sessions', 0)} sessions ({totals.get('failed', 0)} failed), "
        f"{totals.get('llm_calls', 0)} LLM calls, {format_cost(cost if cost is None else float(cost))}"
    )


def _metric_order(scenario_name: str, settings: Settings) -> list[str]:
    try:
        return metric_sets(load_scenario(scenario_name), settings.propositions_dir).metric_names()
    except DriftError:  # a scenario file no longer at hand: stored order
        return []
