"""``drift metareason``: MetaReason prompt families (seed 002) — validate, sample, run.

- ``validate FILE…``: every problem as ``FILE:LINE: field.path: message`` (exit 2 when any file has one);
  warnings (unused categorical axes) do not fail;
- ``sample FILE [--n N] [--format text|jsonl]``: the variants (jsonl: one ``{"id", "params", "prompt"}``
  per line);
- ``run FILE --target SPEC [--judge …] [--embeddings …] [--n N] [--out FILE.jsonl] [--format table|json]``:
  answers and scores every variant with a progress bar and prints the posterior of every oracle. The run is
  stored in PostgreSQL (``format_runs``) when a database is configured (``--database`` or
  ``DRIFT_DATABASE_URL``); ``--out`` is the resumable journal, and the whole run is written as JSON beside it
  (``FILE.run.json``) and printed with ``--format json``.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from streams.cli.common import DatabaseOpt, JudgeOpt, PropositionsOpt, run, settings_from

if TYPE_CHECKING:
    from engine.formats.metareason.model import PromptFamily
    from engine.formats.results import FormatRun, ItemResult
    from engine.settings import Settings

app = typer.Typer(
    name="metareason",
    help="MetaReason prompt families: validate, sample prompt variants, run them against a target.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class SampleFormat(StrEnum):
    TEXT = "text"
    JSONL = "jsonl"


class RunFormat(StrEnum):
    TABLE = "table"
    JSON = "json"


FileArg = Annotated[Path, typer.Argument(help="A MetaReason prompt-family YAML file.", show_default=False)]
NOpt = Annotated[int | None, typer.Option("--n", min=1, help="Number of variants (default: the file's n_variants).")]


@app.command("validate")
def validate(
    files: Annotated[list[Path], typer.Argument(help="Prompt-family files.", show_default=False)],
) -> None:
    """Validate prompt-family files: FILE:LINE: field.path: message per problem; exit 2 if any."""
    from engine.formats.metareason.loader import check_family

    failed = 0
    for path in files:
        if not path.is_file():
            typer.echo(f"{path}:1: no such file", err=True)
            failed += 1
            continue
        loaded = check_family(path)
        for issue in (*loaded.errors, *loaded.warnings):
            typer.echo(str(issue), err=True)
        if loaded.family is None:
            failed += 1
        else:
            family = loaded.family
            typer.echo(f"ok  {path} ({family.prompt_id}: {len(family.axis_map)} axes, {len(family.oracles)} oracles)")
    if failed:
        raise typer.Exit(2)


@app.command("sample")
def sample(
    file: FileArg,
    n: NOpt = None,
    output: Annotated[SampleFormat, typer.Option("--format", help="text or jsonl.")] = SampleFormat.TEXT,
) -> None:
    """Print the prompt variants of a family (seeded: the same file gives the same variants)."""
    import orjson

    from engine.formats.metareason.loader import read_family
    from engine.formats.metareason.sampling import variants

    for variant in variants(read_family(file), n):
        if output is SampleFormat.JSONL:
            line = {"id": variant.id, "params": variant.params, "prompt": variant.prompt}
            sys.stdout.write(orjson.dumps(line, default=str).decode() + "\n")
        else:
            params = "  ".join(f"{k}={v!r}" for k, v in variant.params.items())
            typer.echo(f"{variant.id}  {params}\n    " + variant.prompt.rstrip("\n").replace("\n", "\n    "))


@app.command("run")
def run_family(
    file: FileArg,
    target: Annotated[
        str, typer.Option("--target", help="actor:AGENT_ID | command:CMD | recorded:FILE.jsonl", show_default=False)
    ],
    judge: JudgeOpt = None,
    embeddings: Annotated[
        str, typer.Option("--embeddings", help="openai-compatible[:MODEL] (DRIFT_OPENAI_BASE_URL) | scripted:hashing")
    ] = "openai-compatible",
    actor: Annotated[str | None, typer.Option("--actor", help="The actor behind actor: targets.")] = None,
    n: NOpt = None,
    output: Annotated[RunFormat, typer.Option("--format", help="table or json.")] = RunFormat.TABLE,
    out: Annotated[
        Path | None, typer.Option("--out", help="Resumable journal (JSONL); the run JSON goes beside it.")
    ] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Variants in flight.")] = 8,
    database: DatabaseOpt = None,
    propositions: PropositionsOpt = None,
) -> None:
    """Answer and score every variant; print each oracle's pass rate with its credible interval."""
    from engine.formats.metareason.loader import read_family

    if out is not None:
        from engine.bundled import writable_target

        writable_target(out, "a journal", "pass --out a path of your own")
    settings = settings_from(database=database, propositions=propositions)
    family = read_family(file)
    result = run(_execute(family, file, settings, target, judge, embeddings, actor, n, out, concurrency, output))
    if out is not None:
        sidecar = out.with_name(out.name + ".run.json")
        sidecar.write_text(result.model_dump_json(indent=2) + "\n", encoding="utf-8")
        typer.echo(f"wrote {out} (journal) and {sidecar} (the run)", err=True)
    if output is RunFormat.JSON:
        sys.stdout.write(result.model_dump_json(indent=2) + "\n")
    else:
        _print_table(result)
    _fail_when_nothing_measured(result)


def _fail_when_nothing_measured(result: FormatRun) -> None:
    """Exit 1, with the first target error, when no variant was answered: an empty run is not a result."""
    summary = result.summary
    if summary["answered"] > 0:
        return
    first = next((item.error for item in result.items if item.error), None)
    reason = f": {first}" if first else ""
    typer.echo(f"drift: 0/{summary['variants']} variants answered, nothing was measured{reason}", err=True)
    raise typer.Exit(1)


async def _execute(
    family: PromptFamily,
    file: Path,
    settings: Settings,
    target_spec: str,
    judge_spec: str | None,
    embeddings_spec: str,
    actor_spec: str | None,
    n: int | None,
    out: Path | None,
    concurrency: int,
    output: RunFormat,
) -> FormatRun:
    from engine.formats.metareason.runner import Runner
    from streams.cli.targets import build_target

    target = build_target(target_spec, settings, actor_spec=actor_spec)
    oracles, judge_name, clients = _scorers(family, settings, judge_spec, embeddings_spec)
    with _progress(output) as (on_start, on_result):
        runner = Runner(
            family,
            source=str(file),
            target=target,
            oracles=oracles,
            judge_name=judge_name,
            concurrency=concurrency,
            journal=out,
            n=n,
            on_result=on_result,
            on_start=on_start,
        )
        try:
            result = await runner.run()
        finally:
            for client in clients:
                await client.aclose()
    await _record(result, settings)
    return result


def _scorers(
    family: PromptFamily, settings: Settings, judge_spec: str | None, embeddings_spec: str
) -> tuple[list[Any], str, list[Any]]:
    """The oracles, the label of who scored, and the HTTP clients to close afterwards."""
    from engine.formats.metareason.custom import CustomOracles
    from engine.formats.metareason.embeddings import make_embeddings
    from engine.formats.metareason.oracles import build_oracles
    from engine.judges.factory import make_judge

    kinds = {o.type for o in family.oracles.values()}
    judge = make_judge(judge_spec or "", settings) if "llm_judge" in kinds else None
    vectors = (
        make_embeddings(embeddings_spec, base_url=settings.openai_base_url, environ=os.environ)
        if "embedding_similarity" in kinds
        else None
    )
    oracles = build_oracles(family, judge=judge, embeddings=vectors, custom=CustomOracles.installed())
    label = ", ".join(x for x in (judge.name if judge else "", vectors.name if vectors else "") if x) or "none"
    clients = [c for c in (judge, vectors) if c is not None and hasattr(c, "aclose")]
    return oracles, label, clients


async def _record(result: FormatRun, settings: Settings) -> None:
    if not settings.database_url:
        return
    from streams.store.formats import record_runs

    await record_runs(settings.database_url, [result], timeout_s=settings.connect_timeout_s)


class _progress:
    """A rich progress bar on stderr (table output on a terminal); yields the start and per-result hooks."""

    def __init__(self, output: RunFormat) -> None:
        self._enabled = output is RunFormat.TABLE and sys.stderr.isatty()
        self._bar: Any = None

    def __enter__(self) -> Any:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn("variants"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            disable=not self._enabled,
        )
        self._bar.start()
        task = self._bar.add_task("run", total=None)

        def start(total: int, todo: int) -> None:
            self._bar.update(task, total=total, completed=total - todo)

        def hook(_: ItemResult) -> None:
            self._bar.advance(task)

        return start, hook

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()


def _print_table(result: FormatRun) -> None:
    from rich.console import Console
    from rich.table import Table

    summary = result.summary
    console = Console()
    console.print(
        f"[bold]{summary['family']}[/]  target {result.target}  judge {result.judge}  run {result.run_id}\n"
        f"{summary['answered']}/{summary['variants']} variants answered ({summary['target_errors']} target errors, "
        f"{summary['cached_answers']} cached, {summary['resumed']} resumed); {summary['inference']}"
    )
    first = next(iter(summary["oracles"].values()))["interval"]
    table = Table("oracle", "type", "k/n", "mean", f"{first['level']:.0%} interval ({first['method']})", "errors")
    table.columns[0].no_wrap = True
    for name, entry in summary["oracles"].items():
        interval = entry["interval"]
        table.add_row(
            name,
            entry["type"],
            f"{entry['k']}/{entry['n']}",
            f"{entry['mean']:.3f}",
            f"[{interval['low']:.3f}, {interval['high']:.3f}]",
            str(entry["errors"]),
        )
    console.print(table)
    for name, entry in summary["oracles"].items():
        console.print(f"{name}: weakest {_weakest(entry)}", highlight=False)
    for name, entry in summary["oracles"].items():
        calibration = entry.get("calibration")
        if calibration and calibration["observed"] is None:
            console.print(f"{name}: no variant scored: calibration not measured", highlight=False)
        elif calibration:
            verdict = {True: "calibrated", False: "NOT calibrated", None: "too few samples"}[calibration["calibrated"]]
            within = calibration["probability_within_tolerance"]
            console.print(
                f"{name}: observed {calibration['observed']:.3f} vs expected {calibration['expected_confidence']:.3f}"
                f" ± {calibration['tolerance']:.3f}: {verdict} (P(within tolerance) = {within:.3f})",
                highlight=False,
            )


def _weakest(entry: dict[str, Any]) -> str:
    groups = [(axis, g) for axis, values in entry["by_axis"].items() for g in values if len(values) > 1]
    if not groups:
        return "-"
    axis, group = min(groups, key=lambda pair: pair[1]["mean"])
    return f"{axis}={group['value']} ({group['k']}/{group['n']}, mean {group['mean']:.2f})"
