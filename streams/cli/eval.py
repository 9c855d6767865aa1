"""``drift eval``: offline evaluation, golden baselines, regression checks and judge calibration.

- ``drift eval run``: score agents on the evaluation dimensions and compare with their golden baselines
  (exit 0: no regression, 1: regression, 2: usage or configuration error, 3: some dimension was not
  comparable — its baseline is stale, or was made by another judge or on another conversation — unless
  ``--allow-incomparable``);
- ``drift eval baseline``: write the golden baselines (``<baseline dir>/<agent_id>.json``) of ``--agents a,b``
  or ``--all``; a baseline made by another judge or on another conversation is only replaced with ``--force``;
- ``drift eval calibrate``: agreement of the judge with human labels (Spearman rho, quadratic kappa).

Input: ``--messages FILE.jsonl`` (see :mod:`engine.evaluation.messages`), ``--run-id ID`` / ``--since T``
(the Postgres message store) or ``--synthetic N`` (an LLM writes N messages per agent from its persona).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.errors import ConfigurationError
from streams.cli.common import JudgeOpt, PropositionsOpt, run, settings_from

if TYPE_CHECKING:
    from engine.evaluation.harness import AgentResult, HarnessOptions
    from engine.judges.metered import MeteredJudge
    from engine.models import Dimension, Event
    from engine.settings import Settings

app = typer.Typer(
    name="eval",
    help="Offline evaluation: scores, golden baselines, persona regression checks, judge calibration.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


#: ``drift eval run``'s exit code when some dimension could not be compared with its baseline.
EXIT_NOT_COMPARABLE = 3


class OutputFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"
    JUNIT = "junit"


class Strategy(StrEnum):
    BATCH = "batch"
    INDIVIDUAL = "individual"


AgentsOpt = Annotated[
    str | None, typer.Option("--agents", help="Comma-separated agent ids (default: every agent with a message).")
]
DimensionsOpt = Annotated[
    str | None, typer.Option("--dimensions", help="Comma-separated dimensions (default: the five evaluation ones).")
]
MessagesOpt = Annotated[
    Path | None, typer.Option("--messages", help="Conversation file, one JSON event per line.", dir_okay=False)
]
RunIdOpt = Annotated[str | None, typer.Option("--run-id", help="Evaluate the messages of this run (Postgres).")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Evaluate messages since this ISO-8601 time (Postgres).")]
SyntheticOpt = Annotated[
    int | None, typer.Option("--synthetic", help="Let the LLM write N messages per agent from its persona, then judge.")
]
RecordOpt = Annotated[Path | None, typer.Option("--record", help="Append every judge call to this cassette.")]
BaselineDirOpt = Annotated[
    Path | None, typer.Option("--baseline-dir", help="Golden baselines (default: <propositions>/baselines).")
]
RepeatsOpt = Annotated[int, typer.Option("--repeats", min=1, help="Score every trajectory K times (test-retest).")]
StrategyOpt = Annotated[
    Strategy, typer.Option("--strategy", help="batch: up to 10 claims per call; individual: one claim per call.")
]
SkipInvalidOpt = Annotated[bool, typer.Option("--skip-invalid", help="Skip malformed conversation lines (reported).")]
OutputOpt = Annotated[Path | None, typer.Option("--output", help="Write the report to this file instead of stdout.")]
NoIntervalOpt = Annotated[
    bool, typer.Option("--no-interval", help="Skip per-message scoring (no bootstrap interval; fewer judge calls).")
]


@dataclass(frozen=True)
class Inputs:
    messages: Path | None = None
    run_id: str | None = None
    since: str | None = None
    synthetic: int | None = None
    skip_invalid: bool = False

    def check(self) -> None:
        chosen = [
            self.messages is not None,
            self.run_id is not None or self.since is not None,
            self.synthetic is not None,
        ]
        if sum(chosen) != 1:
            raise ConfigurationError(
                "give exactly one input: --messages FILE, --run-id ID / --since T, or --synthetic N"
            )


@dataclass(frozen=True)
class Loaded:
    events: tuple[Event, ...]
    agent_ids: tuple[str, ...]
    messages_sha256: str


def _split(value: str | None) -> list[str]:
    return [part.strip() for part in (value or "").split(",") if part.strip()]


def parse_dimensions(value: str | None) -> tuple[Dimension, ...]:
    from engine.models import EVALUATION_DIMENSIONS, Dimension

    names = _split(value)
    if not names:
        return EVALUATION_DIMENSIONS
    known = {d.value: d for d in Dimension}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ConfigurationError(f"unknown dimension(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return tuple(dict.fromkeys(known[n] for n in names))


@contextlib.contextmanager
def progress_bar(total: int, label: str) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on stderr when it is a terminal; a no-op callback otherwise."""
    if not sys.stderr.isatty() or total <= 0:
        yield lambda _item: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=total)
        yield lambda item: progress.update(task, advance=1, description=f"{label} ({item})")


async def _source_events(inputs: Inputs, agents: list[str], settings: Settings) -> list[Event]:
    from engine.evaluation.messages import parse_timestamp

    since = None
    if inputs.since is not None:
        try:
            since = parse_timestamp(inputs.since)
        except ValueError as exc:
            raise ConfigurationError(f"--since: {exc}") from None
    import streams.store

    factory = getattr(streams.store, "PostgresMessageSource", None)
    if factory is None:
        raise ConfigurationError(
            "--run-id/--since need streams.store.PostgresMessageSource, which is not available yet"
        )
    source = factory(settings.database())
    async with contextlib.AsyncExitStack() as stack:
        if hasattr(source, "__aenter__"):
            source = await stack.enter_async_context(source)
        events: list[Event] = await source.events(agents or None, inputs.run_id, since)
        return events


async def _synthetic_events(inputs: Inputs, agents: list[str], settings: Settings, judge_spec: str) -> list[Event]:
    from engine.evaluation.synthetic import generate_conversation, make_generator
    from engine.personas import load_personas

    generator = make_generator(judge_spec, settings, os.environ)
    personas = load_personas(settings.propositions_dir)
    missing = [a for a in agents if a not in personas]
    if missing:
        raise ConfigurationError(f"--synthetic: no persona file for {', '.join(missing)}")
    cast = [personas[a] for a in agents] if agents else list(personas.values())
    count = inputs.synthetic or 0
    try:
        with progress_bar(count * len(cast), "writing messages") as advance:
            return list(await generate_conversation(generator, cast, count, progress=advance))
    finally:
        await generator.aclose()


async def load_input(inputs: Inputs, agents: list[str], settings: Settings, judge_spec: str) -> Loaded:
    """The conversation to evaluate and the agents to evaluate in it."""
    from engine.evaluation.harness import select_agents
    from engine.evaluation.hashing import events_hash
    from engine.evaluation.messages import read_messages

    inputs.check()
    if inputs.messages is not None:
        parsed = read_messages(inputs.messages, skip_invalid=inputs.skip_invalid)
        for issue in parsed.issues:
            print(f"drift: skipped {issue}", file=sys.stderr)
        events: list[Event] = list(parsed.events)
    elif inputs.synthetic is not None:
        events = await _synthetic_events(inputs, agents, settings, judge_spec)
    else:
        events = await _source_events(inputs, agents, settings)
    return Loaded(tuple(events), select_agents(events, agents), events_hash(events))


async def evaluate_input(
    inputs: Inputs, agents: list[str], options: HarnessOptions, settings: Settings, judge_spec: str,
    record: Path | None, meter: list[MeteredJudge] | None = None,
) -> tuple[str, Loaded, tuple[AgentResult, ...]]:  # fmt: skip
    """Build the judge, load the input, evaluate every agent; returns (judge name, input, results).
    ``meter``, when given, receives the metered judge (its calls and token usage)."""
    from engine.evaluation.harness import evaluate_cast
    from engine.judges.factory import make_judge
    from engine.judges.metered import MeteredJudge, close_judge

    spec = judge_spec or settings.effective_judge()
    judge = make_judge(spec, settings, record=record)
    metered = MeteredJudge(judge)
    (meter if meter is not None else []).append(metered)
    try:
        loaded = await load_input(inputs, agents, settings, spec)
        with progress_bar(len(loaded.agent_ids), "evaluating") as advance:
            results = await evaluate_cast(metered, loaded.events, loaded.agent_ids, options, advance)
    finally:
        await close_judge(judge)
    return judge.name, loaded, results


def harness_options(
    settings: Settings, dimensions: str | None, repeats: int, strategy: Strategy, intervals: bool
) -> HarnessOptions:
    from engine.evaluation.harness import HarnessOptions
    from engine.evaluation.scorers import ScoringOptions
    from engine.scoring import JudgeStrategy

    if repeats < 1:
        raise ConfigurationError(f"--repeats must be at least 1, not {repeats}")
    return HarnessOptions(
        dimensions=parse_dimensions(dimensions),
        propositions_dir=settings.propositions_dir,
        scoring=ScoringOptions(strategy=JudgeStrategy(strategy.value)),
        repeats=repeats,
        unit_scores=intervals,
    )


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")


@app.command("run")
def run_command(
    agents: AgentsOpt = None,
    dimensions: DimensionsOpt = None,
    messages: MessagesOpt = None,
    run_id: RunIdOpt = None,
    since: SinceOpt = None,
    judge: JudgeOpt = None,
    record: RecordOpt = None,
    synthetic: SyntheticOpt = None,
    propositions: PropositionsOpt = None,
    baseline_dir: BaselineDirOpt = None,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="Report format.")] = OutputFormat.TABLE,
    output: OutputOpt = None,
    repeats: RepeatsOpt = 1,
    strategy: StrategyOpt = Strategy.BATCH,
    skip_invalid: SkipInvalidOpt = False,
    no_interval: NoIntervalOpt = False,
    fail_on_stale: Annotated[bool, typer.Option("--fail-on-stale", help="Exit 1 on stale baselines too.")] = False,
    allow_incomparable: Annotated[
        bool, typer.Option("--allow-incomparable", help="Exit 0 when some dimensions could not be compared.")
    ] = False,
) -> None:
    """Score agents and compare them with their golden baselines.

    Exit 0: every dimension compared, no regression; 1: regression; 2: usage error; 3: some dimension was
    not comparable (stale baseline, other judge, other conversation) and --allow-incomparable was not given.
    """
    from engine.evaluation.baseline import load_baseline
    from engine.evaluation.regression import build_report
    from engine.evaluation.report import RENDERERS
    from engine.judges.metered import with_usage

    settings = settings_from(propositions=propositions)
    options = harness_options(settings, dimensions, repeats, strategy, not no_interval)
    inputs = Inputs(messages, run_id, since, synthetic, skip_invalid)
    meter: list[MeteredJudge] = []
    judge_name, loaded, results = run(evaluate_input(inputs, _split(agents), options, settings, judge or "", record,
                                                     meter))  # fmt: skip
    directory = baseline_dir or settings.propositions_dir / "baselines"
    baselines = {r.agent_id: load_baseline(directory, r.agent_id) for r in results}
    report = build_report(judge_name, results, baselines, loaded.messages_sha256)
    _emit(with_usage(RENDERERS[output_format.value](report), output_format.value, meter[0].summary(settings)), output)
    if output is not None:
        print(
            f"drift: wrote {output}: {len(report.regressions)} regression(s), {len(report.stale)} stale",
            file=sys.stderr,
        )
    if report.regressions or (fail_on_stale and report.stale):
        raise typer.Exit(1)
    if report.incomparable and not allow_incomparable:
        print(
            f"drift: {len(report.incomparable)} dimension(s) not comparable with their baselines (see the notes); "
            "exit 3 (pass --allow-incomparable to accept)",
            file=sys.stderr,
        )
        raise typer.Exit(EXIT_NOT_COMPARABLE)


@app.command("baseline")
def baseline_command(
    agents: AgentsOpt = None,
    dimensions: DimensionsOpt = None,
    messages: MessagesOpt = None,
    run_id: RunIdOpt = None,
    since: SinceOpt = None,
    judge: JudgeOpt = None,
    record: RecordOpt = None,
    synthetic: SyntheticOpt = None,
    propositions: PropositionsOpt = None,
    baseline_dir: BaselineDirOpt = None,
    repeats: RepeatsOpt = 1,
    strategy: StrategyOpt = Strategy.BATCH,
    skip_invalid: SkipInvalidOpt = False,
    all_agents: Annotated[
        bool, typer.Option("--all", help="Every agent with a message (instead of --agents).")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Replace baselines made by another judge or on another conversation.")
    ] = False,
) -> None:
    """Write golden baselines of --agents a,b (or --all): scores, unit scores and content hashes per agent."""
    from engine.evaluation.baseline import (
        baseline_from_result,
        load_baseline,
        merge_baseline,
        refuse_foreign_baselines,
        write_baseline,
    )

    if bool(agents) == all_agents:
        raise ConfigurationError("name the agents whose baselines to write: --agents a,b or --all")
    settings = settings_from(propositions=propositions)
    options = harness_options(settings, dimensions, repeats, strategy, True)
    inputs = Inputs(messages, run_id, since, synthetic, skip_invalid)
    judge_name, loaded, results = run(evaluate_input(inputs, _split(agents), options, settings, judge or "", record))
    directory = baseline_dir or settings.propositions_dir / "baselines"
    olds = {r.agent_id: load_baseline(directory, r.agent_id) for r in results}
    if not force:
        refuse_foreign_baselines(olds, judge_name, loaded.messages_sha256)
    for result in results:
        fresh = baseline_from_result(result, judge_name, loaded.messages_sha256)
        path = write_baseline(directory, merge_baseline(olds[result.agent_id], fresh))
        scores = ", ".join(f"{d.dimension.value} {d.score:.2f}" for d in result.dimensions)
        print(f"{path}: {scores}")


@app.command("calibrate")
def calibrate_command(
    labels: Annotated[Path, typer.Option("--labels", help="Human labels, JSONL (see the docs).", dir_okay=False)],
    judge: JudgeOpt = None,
    propositions: PropositionsOpt = None,
    strategy: StrategyOpt = Strategy.BATCH,
    output_format: Annotated[OutputFormat, typer.Option("--format", help="table or json.")] = OutputFormat.TABLE,
    output: OutputOpt = None,
) -> None:
    """Compare judge scores with human labels: Spearman rho and quadratic weighted kappa per dimension."""
    from engine.evaluation.calibration import render_calibration

    if output_format not in {OutputFormat.TABLE, OutputFormat.JSON}:
        raise ConfigurationError("calibrate writes --format table or json")
    settings = settings_from(propositions=propositions)
    results = run(_calibrate(labels, settings, judge or "", strategy))
    _emit(render_calibration(results, as_json=output_format is OutputFormat.JSON), output)


async def _calibrate(labels: Path, settings: Settings, judge_spec: str, strategy: Strategy) -> Any:
    from engine.evaluation.calibration import calibrate, read_labels
    from engine.evaluation.scorers import ScoringOptions
    from engine.judges.factory import make_judge
    from engine.judges.metered import close_judge
    from engine.scoring import JudgeStrategy

    items = read_labels(labels)
    judge = make_judge(judge_spec or settings.effective_judge(), settings)
    try:
        options = ScoringOptions(strategy=JudgeStrategy(strategy.value))
        return await calibrate(judge, items, settings.propositions_dir, options)
    finally:
        await close_judge(judge)
