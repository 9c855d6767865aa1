"""``drift experiment``: treatment-vs-control experiments and their Table 1 reports.

``drift experiment report --raw FILE.json …`` reads result files in the TinyTroupe paper's format and prints
Table 1 for each (Markdown, JSON or a self-contained HTML page), with PNG charts when ``--charts DIR`` is given.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from engine.errors import ConfigurationError

app = typer.Typer(help="Experiments: treatment vs control, Table 1 reports with charts.", no_args_is_help=True)


class ReportFormat(StrEnum):
    MARKDOWN = "markdown"
    JSON = "json"
    HTML = "html"


@app.command("report")
def report(
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
) -> None:
    """Table 1 per experiment: n, mean ± sd, Δ with a bootstrap interval, Welch's t and p (Holm-adjusted),
    Cohen's d, a cluster-bootstrap test when agent ids are known, and the paper's values beside ours."""
    from engine.experiments.analysis import analyse
    from engine.experiments.charts import draw
    from engine.experiments.raw import load_raw
    from engine.experiments.render import as_html, as_json, markdown

    if not raw:
        raise ConfigurationError("give --raw FILE.json (results in the paper's format)")
    datasets = [load_raw(path) for path in raw]
    reports = [analyse(data, seed=seed) for data in datasets]
    drawn: dict[str, list[Path]] = {}
    if charts is not None or output_format is ReportFormat.HTML:
        folder = charts or (output.parent if output else Path.cwd()) / "charts"
        drawn = {d.name: draw(d, r, folder) for d, r in zip(datasets, reports, strict=True)}
    if output_format is ReportFormat.JSON:
        text = as_json(reports)
    elif output_format is ReportFormat.HTML:
        text = as_html(reports, drawn)
    else:
        text = markdown(reports, drawn)
    if output is None:
        typer.echo(text)
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    typer.echo(f"wrote {output}" + (f" and {sum(map(len, drawn.values()))} charts" if drawn else ""), err=True)
