"""``drift eval``: offline evaluation, golden baselines, regression checks and judge calibration.

- ``drift eval run``: score agents on the evaluation dimensions and compare with their golden baselines
  (exit 0: no regression, 1: regression, 2: usage or configuration error, 3: some dimension was not
  comparable — its baseline is stale, or was made by another judge or on another conversation — unless
  ``--allow-incomparable``);
- ``drift eval baseline``: write the golden baselines (``<baseline dir>/<agent_id>.json``) of ``--agents a,b``
  or ``--all``; a baseline made by another judge or on another conversation is only replaced with ``--force``;
- ``drift eval calibrate``: agreement of the judge with human labels (Spearman rho, quadratic kappa).
- ``drift eval request AGENT``: ask the running service for an evaluation now (:mod:`streams.cli.eval_request`).

Input: ``--messages FILE.jsonl`` (see :mod:`engine.evaluation.messages`), ``--run-id ID`` / ``--since T``
(the Postgres message store) or ``--synthetic N`` (an LLM writes N messages per agent from its persona).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.errors import ConfigurationError
from streams.cli.common import JudgeOpt, PropositionsOpt, run, settings_from
from streams.cli.eval_input import Inputs, evaluate_input

if TYPE_CHECKING:
    from engine.evaluation.harness import AgentResult, HarnessOptions
    from engine.judges.metered import MeteredJudge
    from engine.models import Dimension
    from engine.settings import Settings
    from streams.cli.eval_input import Loaded

app = typer.Typer(
    name="eval",
    help="Offline evaluation: scores, golden baselines, persona regression checks, judge calibration.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


#: What to do instead of writing baselines into the bundled propositions.
BASELINES_ELSEWHERE = (
    "pass --baseline-dir DIR, or --propositions DIR for a cast of your own (start one with 'drift init DIR')"
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
FormatOpt = Annotated[OutputFormat, typer.Option("--format", help="Report format.")]
FailOnStaleOpt = Annotated[bool, typer.Option("--fail-on-stale", help="Exit 1 on stale baselines too.")]
AllowIncomparableOpt = Annotated[
    bool, typer.Option("--allow-incomparable", help="Exit 0 when some dimensions could not be compared.")
]
AllAgentsOpt = Annotated[bool, typer.Option("--all", help="Every agent with a message (instead of --agents).")]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Replace baselines made by another judge or on another conversation.")
]


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


def _writable_output(output: Path | None) -> None:
    from engine.bundled import writable_target

    if output is not None:
        writable_target(output, "a report", "pass --output a path of your own")


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text)
        return
    _writable_output(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}", file=sys.stderr)


@dataclass(frozen=True)
class Evaluation:
    """What ``eval run`` and ``eval baseline`` evaluate: the input, its agents and dimensions, the judge."""

    inputs: Inputs
    agents: str | None
    dimensions: str | None
    judge: str | None
    record: Path | None
    propositions: Path | None
    baseline_dir: Path | None
    repeats: int
    strategy: Strategy


@dataclass(frozen=True)
class Evaluated:
    """The evaluation's results, with what the baselines and the report need."""

    settings: Settings
    judge_name: str
    loaded: Loaded
    results: tuple[AgentResult, ...]
    baseline_dir: Path
    meter: MeteredJudge  # the judge's calls and token usage


def _evaluate(evaluation: Evaluation, *, intervals: bool, writes_baselines: bool = False) -> Evaluated:
    """Load the input and evaluate its agents (what ``eval run`` and ``eval baseline`` share). Every file it
    will write is checked first: never into the bundled data."""
    from engine.bundled import writable_target

    settings = settings_from(propositions=evaluation.propositions)
    directory = evaluation.baseline_dir or settings.propositions_dir / "baselines"
    if writes_baselines:
        writable_target(directory, "baselines", BASELINES_ELSEWHERE, chosen=evaluation.baseline_dir is not None)
    if evaluation.record is not None:
        writable_target(evaluation.record, "a cassette", "pass --record a path of your own")
    options = harness_options(settings, evaluation.dimensions, evaluation.repeats, evaluation.strategy, intervals)
    meter: list[MeteredJudge] = []
    spec, agents = evaluation.judge or "", _split(evaluation.agents)
    judge_name, loaded, results = run(
        evaluate_input(evaluation.inputs, agents, options, settings, spec, evaluation.record, meter)
    )
    return Evaluated(settings, judge_name, loaded, results, directory, meter[0])


@dataclass(frozen=True)
class Comparison:
    """How ``eval run`` scores (with per-message intervals or not), where it reports, and what fails it."""

    output_format: OutputFormat
    output: Path | None
    intervals: bool
    fail_on_stale: bool
    allow_incomparable: bool


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
    output_format: FormatOpt = OutputFormat.TABLE,
    output: OutputOpt = None,
    repeats: RepeatsOpt = 1,
    strategy: StrategyOpt = Strategy.BATCH,
    skip_invalid: SkipInvalidOpt = False,
    no_interval: NoIntervalOpt = False,
    fail_on_stale: FailOnStaleOpt = False,
    allow_incomparable: AllowIncomparableOpt = False,
) -> None:
    """Score agents and compare them with their golden baselines.

    Exit 0: every dimension compared, no regression; 1: regression; 2: usage error; 3: some dimension was
    not comparable (stale baseline, other judge, other conversation) and --allow-incomparable was not given.
    """
    inputs = Inputs(messages, run_id, since, synthetic, skip_invalid)
    evaluation = Evaluation(inputs, agents, dimensions, judge, record, propositions, baseline_dir, repeats, strategy)
    _compare(evaluation, Comparison(output_format, output, not no_interval, fail_on_stale, allow_incomparable))


def _compare(evaluation: Evaluation, comparison: Comparison) -> None:
    from engine.evaluation.baseline import load_baseline
    from engine.evaluation.regression import build_report
    from engine.evaluation.report import RENDERERS
    from engine.judges.metered import with_usage

    _writable_output(comparison.output)  # before the judge is called
    done = _evaluate(evaluation, intervals=comparison.intervals)
    kind, output = comparison.output_format.value, comparison.output
    baselines = {r.agent_id: load_baseline(done.baseline_dir, r.agent_id) for r in done.results}
    report = build_report(done.judge_name, done.results, baselines, done.loaded.messages_sha256)
    _emit(with_usage(RENDERERS[kind](report), kind, done.meter.summary(done.settings)), output)
    if output is not None:
        print(
            f"drift: wrote {output}: {len(report.regressions)} regression(s), {len(report.stale)} stale",
            file=sys.stderr,
        )
    if report.regressions or (comparison.fail_on_stale and report.stale):
        raise typer.Exit(1)
    if report.incomparable and not comparison.allow_incomparable:
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
    all_agents: AllAgentsOpt = False,
    force: ForceOpt = False,
) -> None:
    """Write golden baselines of --agents a,b (or --all): scores, unit scores and content hashes per agent."""
    if bool(agents) == all_agents:
        raise ConfigurationError("name the agents whose baselines to write: --agents a,b or --all")
    inputs = Inputs(messages, run_id, since, synthetic, skip_invalid)
    evaluation = Evaluation(inputs, agents, dimensions, judge, record, propositions, baseline_dir, repeats, strategy)
    _write_baselines(_evaluate(evaluation, intervals=True, writes_baselines=True), force=force)


def _write_baselines(done: Evaluated, *, force: bool) -> None:
    from engine.evaluation.baseline import (
        baseline_from_result,
        load_baseline,
        merge_baseline,
        refuse_foreign_baselines,
        write_baseline,
    )

    olds = {r.agent_id: load_baseline(done.baseline_dir, r.agent_id) for r in done.results}
    if not force:
        refuse_foreign_baselines(olds, done.judge_name, done.loaded.messages_sha256)
    for result in done.results:
        fresh = baseline_from_result(result, done.judge_name, done.loaded.messages_sha256)
        path = write_baseline(done.baseline_dir, merge_baseline(olds[result.agent_id], fresh))
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
    _writable_output(output)
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


def _register_request() -> None:
    from streams.cli.eval_request import request_command

    app.command("request")(request_command)


_register_request()
