"""``drift experiment``: treatment-vs-control experiments and their Table 1 reports.

``drift experiment run SCENARIO`` runs both arms through the service, scores and stores every session;
``drift experiment table1`` runs the four bundled scenarios; ``drift experiment report EXPERIMENT_ID …`` (or
``--raw FILE.json`` in the TinyTroupe paper's format) prints Table 1 for each (Markdown, JSON or a
self-contained HTML page), with PNG charts when ``--charts DIR`` is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engine.errors import ConfigurationError
from engine.scoring import JudgeStrategy
from streams.cli.common import BrokerOpt, DatabaseOpt, JudgeOpt, PrefixOpt, settings_from

if TYPE_CHECKING:
    from engine.experiments.data import ExperimentData
    from engine.settings import Settings

app = typer.Typer(help="Experiments: treatment vs control, Table 1 reports with charts.", no_args_is_help=True)


class ReportFormat(StrEnum):
    MARKDOWN = "markdown"
    JSON = "json"
    HTML = "html"


@app.command("report")
def report(
    experiment_ids: Annotated[
        list[str] | None, typer.Argument(help="Stored experiment ids (from drift experiment run).", show_default=False)
    ] = None,
    raw: Annotated[
        list[Path] | None,
        typer.Option("--raw", help="A results file in the paper's format (repeat for several).", dir_okay=False),
    ] = None,
    output_format: Annotated[ReportFormat, typer.Option("--format", help="markdown, json or html.")] = (
        ReportFormat.MARKDOWN
    ),
    charts: Annotated[Path | None, typer.Option("--charts", help="Write PNG charts into this folder.")] = None,
    output: Annotated[Path | None, typer.Option("--output", help="Write the report here instead of stdout.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resampling.")] = 0,
    database: DatabaseOpt = None,
) -> None:
    """Table 1 per experiment: n, mean ± sd, Δ with a bootstrap interval, Welch's t and p (Holm-adjusted),
    Cohen's d, a cluster-bootstrap test when agent ids are known, and the paper's values beside ours."""
    from engine.experiments.raw import load_raw

    if not raw and not experiment_ids:
        raise ConfigurationError("give EXPERIMENT_ID (a stored experiment) or --raw FILE.json (the paper's format)")
    writable_report(output_format, charts, output)
    datasets = [load_raw(path) for path in raw or []]
    if experiment_ids:
        datasets += _stored(settings_from(database=database), experiment_ids)
    write_report(datasets, output_format, charts, output, seed)


def _charts_folder(output_format: ReportFormat, charts: Path | None, output: Path | None) -> Path | None:
    if charts is not None or output_format is ReportFormat.HTML:
        return charts or (output.parent if output else Path.cwd()) / "charts"
    return None


def writable_report(output_format: ReportFormat, charts: Path | None, output: Path | None) -> None:
    """Refuse, before anything runs, a report or charts folder inside the bundled data."""
    from engine.bundled import writable_target

    if output is not None:
        writable_target(output, "a report", "pass --output a path of your own")
    folder = _charts_folder(output_format, charts, output)
    if folder is not None:
        writable_target(folder, "charts", "pass --charts a folder of your own (or --output elsewhere)")


def write_report(
    datasets: list[ExperimentData], output_format: ReportFormat, charts: Path | None, output: Path | None, seed: int
) -> None:
    from engine.experiments.analysis import analyse
    from engine.experiments.charts import draw
    from engine.experiments.render import as_html, as_json, markdown

    reports = [analyse(data, seed=seed) for data in datasets]
    drawn: dict[str, list[Path]] = {}
    folder = _charts_folder(output_format, charts, output)
    if folder is not None:
        drawn = {d.name: draw(d, r, folder) for d, r in zip(datasets, reports, strict=True)}
    if output_format is ReportFormat.JSON:
        text = as_json(reports)
    elif output_format is ReportFormat.HTML:
        text = as_html(reports, drawn)
    else:
        text = markdown(reports, drawn, links_from=output.parent if output else None)
    if output is None:
        typer.echo(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}" + (f" and {sum(map(len, drawn.values()))} charts" if drawn else ""), err=True)


def _stored(settings: Settings, experiment_ids: list[str]) -> list[ExperimentData]:
    from streams.cli.common import run
    from streams.cli.experiment_main import load_data, reachable_database

    with reachable_database(settings) as reachable:
        return run(load_data(reachable, experiment_ids))


ScaleOpt = Annotated[
    float, typer.Option("--scale", min=0.0001, max=1.0, help="Share of the sessions to run (≥ 2 per arm).")
]
PopulationOpt = Annotated[Path | None, typer.Option("--population", help="Population folder (default: bundled tiny).")]
ActorOpt = Annotated[
    str | None, typer.Option("--actor", help="anthropic[:MODEL] | openai-compatible[:MODEL] | scripted[:RULES.yaml].")
]
ConcurrencyOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Sessions running at once.")]
BudgetOpt = Annotated[
    float | None, typer.Option("--budget-usd", min=0.0, help="Stop launching sessions past this cost.")
]
TokensOpt = Annotated[
    int | None, typer.Option("--max-tokens", min=1, help="Stop launching sessions past this many tokens.")
]
EmbeddedOpt = Annotated[bool, typer.Option("--embedded", help="Start a private embedded stack and worker for the run.")]
StrategyOpt = Annotated[
    JudgeStrategy, typer.Option("--judge-strategy", help="individual (one claim per call) or batch (up to 10).")
]
PricesOpt = Annotated[Path | None, typer.Option("--prices", help="A YAML price table overriding the bundled one.")]


@app.command("run")
def run(
    scenario: Annotated[str, typer.Argument(help="A bundled scenario name or a scenario file.")],
    scale: ScaleOpt = 1.0,
    population: PopulationOpt = None,
    actor: ActorOpt = None,
    judge: JudgeOpt = None,
    concurrency: ConcurrencyOpt = 4,
    budget_usd: BudgetOpt = None,
    max_tokens: TokensOpt = None,
    resume: Annotated[str | None, typer.Option("--resume", help="Finish a stored experiment (by id).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan and cost bounds; run nothing.")] = False,
    embedded: EmbeddedOpt = False,
    strategy: StrategyOpt = JudgeStrategy.INDIVIDUAL,
    prices: PricesOpt = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    database: DatabaseOpt = None,
) -> None:
    """Both arms of SCENARIO on identical agents and schedules; every session scored and stored whole."""
    from streams.cli.experiment_main import RunOptions

    if budget_usd is not None and max_tokens is not None:
        raise ConfigurationError("give --budget-usd or --max-tokens, not both")
    options = RunOptions(scenario, scale, population, concurrency, budget_usd, max_tokens, resume, strategy, prices)
    settings = settings_from(actor=actor, judge=judge, broker=broker, prefix=prefix, database=database)
    _run_all([options], settings, embedded, dry_run)


@app.command("table1")
def table1(
    scale: ScaleOpt = 1.0,
    population: PopulationOpt = None,
    actor: ActorOpt = None,
    judge: JudgeOpt = None,
    concurrency: ConcurrencyOpt = 4,
    budget_usd: BudgetOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plans and cost bounds; run nothing.")] = False,
    embedded: EmbeddedOpt = False,
    strategy: StrategyOpt = JudgeStrategy.INDIVIDUAL,
    output_format: Annotated[ReportFormat, typer.Option("--format", help="markdown, json or html.")] = (
        ReportFormat.MARKDOWN
    ),
    charts: Annotated[Path | None, typer.Option("--charts", help="Write PNG charts into this folder.")] = None,
    output: Annotated[Path | None, typer.Option("--output", help="Write the report here instead of stdout.")] = None,
    broker: BrokerOpt = None,
    prefix: PrefixOpt = None,
    database: DatabaseOpt = None,
) -> None:
    """The four bundled scenarios (TinyTroupe's Table 1), one after the other, in one combined report.
    ``--budget-usd`` applies to each scenario."""
    from engine.experiments.paper import SCENARIO_PAPER_KEYS
    from streams.cli.experiment_main import RunOptions

    options = [RunOptions(name, scale, population, concurrency, budget_usd, None, None, strategy)
               for name in SCENARIO_PAPER_KEYS]  # fmt: skip
    writable_report(output_format, charts, output)
    settings = settings_from(actor=actor, judge=judge, broker=broker, prefix=prefix, database=database)
    datasets = _run_all(options, settings, embedded, dry_run)
    if datasets:
        write_report(datasets, output_format, charts, output, 0)


def _check_models(settings: Settings, options: Sequence[object]) -> None:
    """The actor, the judge and the price tables an experiment will use, built once to fail fast on a typo."""
    from engine.actors.factory import make_actor
    from engine.judges.factory import make_judge
    from engine.pricing import PriceTable
    from streams.cli.experiment_main import RunOptions

    make_actor(settings.effective_actor(), settings)
    make_judge(settings.effective_judge(), settings)
    for o in options:
        if isinstance(o, RunOptions):
            PriceTable.load(o.prices)


def _run_all(options: Sequence[object], settings: Settings, embedded: bool, dry_run: bool) -> list[ExperimentData]:
    """Run every experiment (on one stack), print each id and status; the stored data for a report."""
    import asyncio

    from rich.console import Console

    from streams.cli.common import run as run_command
    from streams.cli.experiment_main import RunOptions, load_data, plan, run, service_settings

    console = Console(stderr=True)
    planned = [(o, plan(o, settings)) for o in options if isinstance(o, RunOptions)]
    if dry_run:
        from streams.cli.experiment_main import dry_run as show

        for o, p in planned:
            show(p, o, settings, console)
        return []
    _check_models(settings, [o for o, _ in planned])  # before a stack starts or a service is reached
    with service_settings(settings, embedded, console) as live:
        ids = []
        for o, p in planned:
            try:
                experiment_id, status = run_command(run(p, o, live, console))
            except asyncio.CancelledError:  # a second Ctrl-C: running sessions were abandoned, none half-stored
                console.print("[red]aborted: unfinished sessions were not stored; finish with --resume ID[/]")
                raise typer.Exit(130) from None
            typer.echo(f"{experiment_id}\t{status}")
            ids.append(experiment_id)
        return run_command(load_data(live, ids)) if len(ids) > 1 else []
