"""``drift plexus``: Plexus scorecards (seed 003) — validate files, predict one item, evaluate against labels.

- ``drift plexus validate FILE…`` — every file's kind (score, scorecard, fragment, data source) and its
  problems as ``FILE:LINE: field.path: message``; exit 2 when any file has an error;
- ``drift plexus predict SCORECARD (--text T | --item FILE)`` — each score's value, explanation and the path of
  nodes it took (``SKIPPED`` / ``ERROR`` as values);
- ``drift plexus evaluate SCORECARD --dataset FILE`` — agreement with human labels (accuracy, precision,
  recall, Gwet's AC1, confusion matrix); the run is stored in PostgreSQL when a database is configured.

LLM nodes are answered by ``--model`` (alias ``--judge``): ``scripted:RULES.yaml`` or a text-model spec;
without it, each score's own ``model_provider`` / ``model_name``.
"""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from engine.errors import ConfigurationError
from streams.cli.common import DatabaseOpt, UnsandboxedOpt, run, settings_from

if TYPE_CHECKING:
    from engine.formats.plexus.graph import ScoreResult
    from engine.formats.results import FormatRun

app = typer.Typer(
    name="plexus",
    help="Plexus scorecards: graph scores of LLM and code nodes, evaluated against human labels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class PredictFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class ReportFormat(StrEnum):
    TABLE = "table"
    JSON = "json"
    MARKDOWN = "markdown"


ScorecardArg = Annotated[Path, typer.Argument(help="A Plexus score or scorecard YAML file.", dir_okay=False)]
ScoreOpt = Annotated[str | None, typer.Option("--score", help="Run only this score (and what it depends on).")]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "--judge",
        help="Who answers LLM nodes: scripted:RULES.yaml | anthropic[:MODEL] | openai-compatible[:MODEL] "
        "(default: each score's model_provider / model_name).",
    ),
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds one score may take per item.")]


@app.command("validate")
def validate(paths: Annotated[list[Path], typer.Argument(help="Files or folders.", show_default=False)]) -> None:
    """Check Plexus files: kind, errors and warnings (exit 2 when any file has an error)."""
    from engine.formats.plexus.loader import inspect
    from engine.formats.registry import expand

    files = expand(paths)
    if not files:
        raise ConfigurationError("no YAML files found")
    failed = 0
    for path in files:
        if not path.is_file():
            raise ConfigurationError(f"no such file: {path}")
        report = inspect(path)
        for issue in report.errors:
            typer.echo(str(issue), err=True)
        for issue in report.warnings:
            typer.echo(f"{issue} (warning)", err=True)
        if report.errors:
            failed += 1
            continue
        note = f": {report.not_runnable}" if report.not_runnable else ""
        typer.echo(f"ok  {report.kind:<11} {path}{note}")
    if failed:
        raise typer.Exit(2)


def _item(text: str | None, item: Path | None, metadata: str | None) -> tuple[str, dict[str, Any]]:
    if (text is None) == (item is None):
        raise ConfigurationError("give exactly one of --text and --item")
    if text is not None:
        try:
            extra = json.loads(metadata) if metadata else {}
        except ValueError as exc:
            raise ConfigurationError(f"--metadata: not JSON ({exc.args[0]})") from None
        if not isinstance(extra, dict):
            raise ConfigurationError("--metadata must be a JSON object")
        return text, extra
    if metadata is not None:
        raise ConfigurationError("--metadata goes with --text; an --item file carries its own metadata")
    assert item is not None
    if not item.is_file():
        raise ConfigurationError(f"no such item file: {item}")
    raw = item.read_text(encoding="utf-8")
    if item.suffix.lower() != ".json":
        return raw, {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{item}: not JSON ({exc.args[0]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise ConfigurationError(f"{item}: an item is a JSON object with 'text' (and optional 'metadata')")
    carried = data.get("metadata") or {}
    if not isinstance(carried, dict):
        raise ConfigurationError(f"{item}: metadata must be a JSON object")
    return data["text"], carried


@app.command("predict")
def predict(
    scorecard: ScorecardArg,
    score: ScoreOpt = None,
    text: Annotated[str | None, typer.Option("--text", help="The text to score.")] = None,
    metadata: Annotated[
        str | None, typer.Option("--metadata", help='With --text: the item\'s metadata as JSON ({"agent": …}).')
    ] = None,
    item: Annotated[
        Path | None, typer.Option("--item", help="A .json item ({text, metadata}) or a plain text file.")
    ] = None,
    model: ModelOpt = None,
    output_format: Annotated[PredictFormat, typer.Option("--format", help="text or json.")] = PredictFormat.TEXT,
    timeout: TimeoutOpt = 120.0,
    allow_unsandboxed_code: UnsandboxedOpt = False,
) -> None:
    """Score one item: each score's value, explanation and the nodes it went through."""
    from engine.formats.plexus.graph import Item
    from engine.formats.plexus.loader import load_runnable
    from engine.formats.plexus.scorecard import run_scorecard
    from engine.formats.plexus.textmodels import node_context
    from engine.formats.usercode import CodeSandbox

    card = load_runnable(scorecard, score)
    body, item_metadata = _item(text, item, metadata)
    sandbox = CodeSandbox(allow_unsandboxed=allow_unsandboxed_code)
    ctx = node_context(card, model, settings_from(), cwd=Path.cwd(), source=scorecard, sandbox=sandbox)
    results = run(run_scorecard(card, Item(body, item_metadata), ctx, only=score, timeout_s=timeout))
    if output_format is PredictFormat.JSON:
        payload = {"model": ctx.label, "scores": {name: r.as_json() for name, r in results.items()}}
        typer.echo(json.dumps(payload, indent=2, ensure_ascii=False))
    else:
        typer.echo(f"model: {ctx.label}")
        for result in results.values():
            typer.echo(_predict_line(result))
    failed = [r.name for r in results.values() if r.status == "error"]
    if failed:  # an ERROR value is a failed prediction, not an answer
        typer.echo(f"drift: {len(failed)} score(s) ended in ERROR: {', '.join(failed)}", err=True)
        raise typer.Exit(1)


def _predict_line(result: ScoreResult) -> str:
    lines = [f"{result.name}: {result.value}"]
    if result.path:
        lines.append(f"  path: {' -> '.join(result.path)}")
    if result.explanation:
        explanation = result.explanation.strip().replace("\n", "\n    ")
        lines.append(f"  explanation: {explanation}")
    return "\n".join(lines)


@app.command("evaluate")
def evaluate(
    scorecard: ScorecardArg,
    dataset: Annotated[Path, typer.Option("--dataset", help="Labelled items: .csv or .jsonl.", dir_okay=False)],
    score: ScoreOpt = None,
    model: ModelOpt = None,
    positive: Annotated[str, typer.Option("--positive-class", help="The class precision/recall are for.")] = "yes",
    output_format: Annotated[ReportFormat, typer.Option("--format", help="table, json or markdown.")] = (
        ReportFormat.TABLE
    ),
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Items scored at once.")] = 4,
    timeout: TimeoutOpt = 120.0,
    database: DatabaseOpt = None,
    allow_unsandboxed_code: UnsandboxedOpt = False,
) -> None:
    """Agreement of a scorecard with human labels (accuracy, precision/recall, Gwet's AC1, confusion matrix)."""
    from engine.formats.plexus.dataset import read_dataset
    from engine.formats.plexus.evaluate import EvaluationOptions
    from engine.formats.plexus.evaluate import evaluate as run_evaluation
    from engine.formats.plexus.loader import load_runnable
    from engine.formats.plexus.textmodels import node_context
    from engine.formats.usercode import CodeSandbox
    from streams.cli.eval_input import progress_bar

    card = load_runnable(scorecard, score)
    rows = read_dataset(dataset)
    settings = settings_from(database=database)
    sandbox = CodeSandbox(allow_unsandboxed=allow_unsandboxed_code)
    ctx = node_context(card, model, settings, cwd=Path.cwd(), source=scorecard, sandbox=sandbox)
    names = (score,) if score else tuple(s.name for s in card.all_scores())
    options = EvaluationOptions(names, positive, concurrency, timeout)
    with progress_bar(len(rows), "items") as advance:
        job = run_evaluation(card, rows, ctx, options, source=str(scorecard), dataset=str(dataset),
                             progress=lambda item: advance(item.item_id))  # fmt: skip
        result = run(job)
    if settings.database_url:
        run(_record(result, settings.database_url, settings.connect_timeout_s))
    typer.echo(render_report(result, output_format))
    _exit_when_nothing_compared(result)


def _exit_when_nothing_compared(result: FormatRun) -> None:
    """Exit 1 when every item errored, was skipped or unlabelled: no agreement was measured."""
    if sum(m["compared"] for m in result.summary["scores"].values()) == 0:
        typer.echo("drift: no item was compared with its label: nothing was measured", err=True)
        raise typer.Exit(1)


async def _record(result: FormatRun, url: str, timeout_s: float) -> None:
    from streams.store.formats import record_runs

    await record_runs(url, [result], migrate=True, max_size=2, timeout_s=timeout_s)


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def render_report(result: FormatRun, output_format: ReportFormat) -> str:
    if output_format is ReportFormat.JSON:
        return result.model_dump_json(indent=2)
    summary = result.summary
    rows = []
    for name, m in summary["scores"].items():
        cells = [name, str(m["compared"]), _fmt(m["accuracy"]), _fmt(m["precision"]), _fmt(m["recall"])]
        cells += [_fmt(m["ac1"]), str(m["skipped"]), str(m["errors"]), str(m["unlabelled"])]
        rows.append(cells)
    header = ["score", "n", "accuracy", "precision", "recall", "AC1", "skipped", "errors", "unlabelled"]
    head = f"model: {result.judge}   run: {result.run_id}   positive class: {summary['positive_class']}"
    if output_format is ReportFormat.MARKDOWN:
        lines = [f"_{head}_", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(c) for c in column) for column in zip(header, *rows, strict=False)]
        lines = [head, "  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    for name, m in summary["scores"].items():
        lines += ["", f"{name}: confusion (rows: label, columns: prediction)"]
        lines += [f"  {label}: {json.dumps(row)}" for label, row in m["confusion"].items()]
        lines.append(f"  labels: {json.dumps(m['label_distribution'])}")
        lines.append(f"  predictions: {json.dumps(m['prediction_distribution'])}")
    return "\n".join(lines)
