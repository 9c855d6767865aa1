"""``drift shadow report NAME``: what a shadow's candidate would have changed, and what it costs.

Its own module (the ``shadow`` group's other commands live beside it): registered in :mod:`streams.cli` under the
``shadow`` group, so ``drift shadow --help`` lists them together whichever module the group's first entry is.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from streams.cli.common import DatabaseOpt, run, settings_from

if TYPE_CHECKING:
    from datetime import datetime

    from engine.settings import Settings
    from engine.shadow_report.report import Method, ShadowReport

app = typer.Typer(help="Shadow gating: a candidate judged beside the live gate, and what it would change.")


class ReportFormat(StrEnum):
    MARKDOWN = "markdown"
    JSON = "json"
    HTML = "html"


@app.command("report")
def shadow_report(
    name: Annotated[str, typer.Argument(help="The shadow's name (`drift shadow list`).")],
    since: Annotated[
        str | None, typer.Option("--since", help="Only verdicts since (RFC 3339 or relative: -2h, -1d).")
    ] = None,
    output_format: Annotated[ReportFormat, typer.Option("--format", help="markdown, json or html.")] = (
        ReportFormat.MARKDOWN
    ),
    output: Annotated[Path | None, typer.Option("--output", help="Write the report here instead of stdout.")] = None,
    live_judge: Annotated[
        str | None,
        typer.Option("--live-judge", help="Price the live side's tokens as this judge (default: DRIFT_JUDGE)."),
    ] = None,
    resamples: Annotated[int, typer.Option("--resamples", min=100, max=100_000, help="Bootstrap resamples.")] = 2000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap resampling.")] = 0,
    flips: Annotated[int, typer.Option("--flips", min=0, max=100_000, help="List at most this many flips.")] = 500,
    database: DatabaseOpt = None,
) -> None:
    """What the shadow's candidate would change: agreement, Cohen's κ, the drafts that would flip, cost.

    Drafts compared, decision agreement and Cohen's κ with seeded bootstrap intervals, the commit/retry table,
    the score difference per dimension, the drafts that would flip with both judges' reasoning, skipped samples,
    and the cost of both sides (so far and per 1,000 drafts). An unknown shadow: one line, exit 2."""
    from engine.shadow_report.report import Method
    from streams.client.replay import parse_time

    if output is not None:
        from engine.bundled import writable_target

        writable_target(output, "a report", "pass --output a path of your own")
    settings = settings_from(database=database)
    start = parse_time(since) if since else None
    method = Method(resamples=resamples, seed=seed)
    report = run(_report(settings, name, start, live_judge or settings.judge or None, method, flips))
    _write(_render(report, output_format), output)


def _render(report: ShadowReport, output_format: ReportFormat) -> str:
    from engine.shadow_report.render import as_html, as_json, markdown

    if output_format is ReportFormat.JSON:
        return as_json(report)
    if output_format is ReportFormat.HTML:
        return as_html(report)
    return markdown(report)


def _write(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text, nl=not text.endswith("\n"))
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}", err=True)


async def _report(
    settings: Settings, name: str, since: datetime | None, live_judge: str | None, method: Method, flips: int
) -> ShadowReport:
    from engine.errors import ConfigurationError
    from engine.pricing import PriceTable
    from streams.store import Store
    from streams.store.shadow_report import ShadowReports

    prices = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
    async with await Store.connect(settings.database(), timeout_s=settings.connect_timeout_s) as store:
        report = await ShadowReports(store).report(
            name, since, live_judge=live_judge, prices=prices, method=method, flip_limit=flips
        )
    if report is None:
        raise ConfigurationError(f"no shadow {name!r}: `drift shadow list` shows the shadows")
    return report
