"""``drift simulate``: run a scenario's sessions through the service with a live transcript and a summary.

Against a running service (``drift up`` / workers on ``--broker`` and ``--prefix``), or with ``--embedded`` on
a private embedded stack (Tansu + PostgreSQL + one worker) started for the run and stopped after it.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streams.cli.common import BrokerOpt, JudgeOpt, PrefixOpt, run, settings_from

if TYPE_CHECKING:
    from rich.console import Console

    from engine.actors.base import Actor
    from engine.llm.base import TextModel
    from engine.models import Persona
    from engine.settings import Settings
    from engine.simulation.plan import SessionPlan
    from engine.simulation.scenario import Scenario
    from streams.client.simulate import SessionResult, Simulation

app = typer.Typer()

STYLE = {"passed": "green", "passed_after_retry": "cyan", "forced_through": "magenta", "timeout_pass_through": "blue",
         "corrected": "yellow", "retry": "yellow", "rejected": "red", "error": "bold red", "silence": "dim",
         "stimulus": "bold", "directive": "bold yellow", "extracted": "bold cyan"}  # fmt: skip


@app.command()
def simulate(
    scenario: Annotated[str, typer.Option(help="A bundled scenario name or a scenario file.")],
    population: Annotated[Path | None, typer.Option(help="Population folder (default: the bundled tiny one).")] = None,
    arm: Annotated[str, typer.Option(help="treatment | control")] = "treatment",
    sessions: Annotated[int | None, typer.Option(min=1, help="Run only the first K sessions of the plan.")] = None,
    actor: Annotated[
        str | None,
        typer.Option(
            help="anthropic[:MODEL] | openai-compatible[:MODEL] | "
            "scripted[:RULES.yaml] (default: anthropic with a key, else scripted)."
        ),
    ] = None,
    judge: JudgeOpt = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Prefix of the sessions' run ids.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Sessions running at once.")] = 8,
    embedded: Annotated[bool, typer.Option(help="Start a private embedded stack and worker for this run.")] = False,
    export: Annotated[
        Path | None, typer.Option(help="Write each session as conversation JSONL into this folder.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON instead of a table.")] = False,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
) -> None:
    """Run a scenario's sessions (one arm) through the gate and the steps service."""
    from rich.console import Console

    _check_options(arm, judge, embedded, export)
    console = Console(stderr=as_json)
    settings = settings_from(actor=actor, judge=judge, broker=broker, prefix=prefix)
    options = {"scenario": scenario, "population": population, "arm": arm, "sessions": sessions,
               "run_id": run_id, "concurrency": concurrency, "export": export}  # fmt: skip
    inputs = _inputs(settings, options, embedded)  # every input read before a service is reached or started
    if not embedded:
        results, sim = run(_run(settings, inputs, options, console))
    else:
        results, sim = _run_embedded(settings, inputs, options, console)
    _summary(console, results, sim, as_json)


@dataclass(frozen=True)
class Inputs:
    """What a simulation reads from files and flags, loaded and checked up front."""

    scenario: Scenario
    personas: dict[str, Persona]
    actor: Actor
    extractor: TextModel
    plans: list[SessionPlan]


def _inputs(settings: Settings, options: dict[str, Any], embedded: bool) -> Inputs:
    """The scenario, the population, the actor (and with ``--embedded`` the worker's judge): a typo in any of
    them fails here, in a second, not after an embedded stack has started."""
    from engine.actors.factory import make_actor
    from engine.actors.llm import LlmActor
    from engine.actors.scripted import ScriptedListModel
    from engine.judges.factory import make_judge
    from engine.personas import load_population
    from engine.simulation.plan import plan_sessions
    from engine.simulation.population import BUNDLED_TINY
    from engine.simulation.scenario import load_scenario

    scenario = load_scenario(options["scenario"])
    personas = load_population(options["population"] or BUNDLED_TINY, scenario.population.fragments)
    actor = make_actor(settings.effective_actor(), settings)
    extractor = actor.model if isinstance(actor, LlmActor) else ScriptedListModel()
    if embedded:
        make_judge(settings.effective_judge(), settings, own_limits=False)  # the worker's judge, checked here
    plans = plan_sessions(scenario, list(personas), options["sessions"])
    return Inputs(scenario, personas, actor, extractor, plans)


def _check_options(arm: str, judge: str | None, embedded: bool, export: Path | None) -> None:
    from engine.bundled import writable_target
    from engine.errors import ConfigurationError

    if export is not None:
        writable_target(export, "transcripts", "pass --export a folder of your own")
    if arm not in {"treatment", "control"}:
        raise ConfigurationError(f"--arm must be treatment or control, not {arm!r}")
    if judge and not embedded:
        raise ConfigurationError("--judge chooses the embedded worker's judge; a running service uses its own")


def _run_embedded(
    settings: Settings, inputs: Inputs, options: dict[str, Any], console: Console
) -> tuple[list[SessionResult], Simulation]:
    from streams.embedded import WorkerProcess, free_port, start_stack
    from streams.store import Store
    from streams.wire.kafka import create_topics

    stack = start_stack()
    settings = settings.with_(broker=stack.broker.bootstrap, database_url=stack.database.url, topic_prefix="sim.")
    worker = None
    try:

        async def prepare() -> None:
            async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
                await store.migrate()
            await create_topics(settings)

        run(prepare())
        env = {"DRIFT_BROKER": settings.broker, "DRIFT_DATABASE_URL": settings.database(),
               "DRIFT_WEB_PORT": str(free_port()), "DRIFT_TOPIC_PREFIX": settings.topic_prefix}  # fmt: skip
        started = time.monotonic()
        worker = WorkerProcess.for_prefix(
            env, stack.root / "worker.log", *(["--judge", settings.judge] if settings.judge else [])
        )
        worker.start(timeout_s=90)
        console.print(f"[dim]embedded stack: {worker.ready_line} ({time.monotonic() - started:.1f}s)[/]")
        return run(_run(settings, inputs, options, console))
    finally:
        if worker is not None:
            worker.stop()
        stack.stop()
        shutil.rmtree(stack.root, ignore_errors=True)


async def _run(
    settings: Settings, inputs: Inputs, options: dict[str, Any], console: Console
) -> tuple[list[SessionResult], Simulation]:
    from streams.client import GateClient
    from streams.client.simulate import Simulation
    from streams.client.transcripts import export_session

    scenario, personas, actor, plans = inputs.scenario, inputs.personas, inputs.actor, inputs.plans
    prefix = options["run_id"] or f"sim-{scenario.name}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    arm = options["arm"]
    console.print(f"[bold]drift simulate[/] · {scenario.name} · arm {arm} · {len(plans)} session(s) · "
                  f"{len(personas)} personas · actor [bold]{actor.name}[/] · run ids {prefix}.{arm}.*")  # fmt: skip
    async with GateClient(settings=settings, timeout_s=max(60.0, settings.step_deadline_s * 3)) as gate:
        sim = Simulation(scenario, personas, actor, inputs.extractor, gate, prefix, on_event=_printer(console))
        results = await sim.run_sessions(plans, options["arm"], options["concurrency"])
    if options["export"] is not None:
        for result in results:
            export_session(result, personas, options["export"], settings.propositions_dir)
        folder = options["export"]
        console.print(f"[dim]transcripts: {folder}/<run id>.jsonl · evaluate with "
                      f"drift eval run --messages FILE --propositions {folder}[/]")  # fmt: skip
    return results, sim


def _printer(console: Console) -> Any:
    def show(session: SessionResult, kind: str, line: str) -> None:
        style = STYLE.get(kind, "white")
        console.print(f"[dim]{session.key:<26}[/] [{style}]{kind:<18}[/] {line[:160]}", highlight=False, markup=True)

    return show


def _totals(results: list[SessionResult]) -> dict[str, Any]:
    agents = [a for r in results for a in r.agents.values()]
    outcomes: dict[str, int] = {}
    for a in agents:
        for k, v in a.outcomes.items():
            outcomes[k] = outcomes.get(k, 0) + v
    directives: dict[str, int] = {}
    for r in results:
        for k, v in r.directives.items():
            directives[k] = directives.get(k, 0) + v
    return {"sessions": len(results), "failed": sum(r.error is not None for r in results),
            "steps": sum(r.steps for r in results), "actions": sum(a.actions for a in agents),
            "retries": sum(a.retries for a in agents), "silences": sum(a.silences for a in agents),
            "outcomes": outcomes, "directives": directives, "judges": sorted({j for r in results for j in r.judges}),
            "extracted": [len(r.extracted) if r.extracted is not None else None for r in results]}  # fmt: skip


def _summary(console: Console, results: list[SessionResult], sim: Simulation, as_json: bool) -> None:
    from rich.table import Table

    totals = {"scenario": sim.scenario.name, "actor": sim.actor.name, **_totals(results)}
    if as_json:
        sessions = [{"run_id": r.run_id, "key": r.key, "arm": r.arm, "theme": r.theme, "steps": r.steps,
                     "error": r.error, "extracted": r.extracted, "wall_s": round(r.wall_s, 3),
                     "agents": [{"agent_id": a.agent_id, "persona_id": a.persona_id, "actions": a.actions,
                                 "retries": a.retries, "silences": a.silences, "outcomes": dict(a.outcomes),
                                 "nudges": dict(a.nudges)} for a in r.agents.values()]} for r in results]  # fmt: skip
        print(json.dumps({**totals, "sessions_detail": sessions}, indent=2))
        return
    table = Table(title=f"{sim.scenario.name} · actor {sim.actor.name} · judge {', '.join(totals['judges']) or '-'}")
    for column in ("session", "steps", "actions", "retries", "silent", "directives", "extracted", "error"):
        table.add_column(column)
    for r in results:
        agents = r.agents.values()
        directives = ", ".join(f"{k} {v}" for k, v in r.directives.items()) or "-"
        table.add_row(r.key, str(r.steps), str(sum(a.actions for a in agents)), str(sum(a.retries for a in agents)),
                      str(sum(a.silences for a in agents)), directives,
                      "-" if r.extracted is None else str(len(r.extracted)), r.error or "")  # fmt: skip
    console.print(table)
    console.print(f"outcomes: {_counts(totals['outcomes'])} · directives: {_counts(totals['directives'])} · "
                  f"{totals['failed']} failed session(s)", highlight=False)  # fmt: skip


def _counts(counts: dict[str, int]) -> str:
    """``passed 37, retry 3``: counts by plain name, largest first."""
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))) or "-"
