"""Experiment reports as Markdown (for a paper or a pull request), JSON (for tools) and HTML (with charts).

Human output rounds scores to 2 decimals and p-values to 3 significant figures; JSON keeps exact values.
"""

from __future__ import annotations

import base64
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jinja2

from engine.experiments.analysis import ArmSummary, ExperimentReport, MetricRow


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "–"
    if math.isinf(value):
        return "∞" if value > 0 else "−∞"
    return f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "–" if value is None else f"{value:.3g}"


def _ci(interval: tuple[float, float] | None) -> str:
    return "–" if interval is None else f"[{interval[0]:+.2f}, {interval[1]:+.2f}]"


def _arm(summary: ArmSummary) -> str:
    if summary.mean is None:
        return f"n={summary.n}"
    return f"{_num(summary.mean)} ± {_num(summary.sd)} (n={summary.n})"


def _agrees(row: MetricRow) -> str:
    if row.direction_agrees is None:
        return "–"
    return "yes" if row.direction_agrees else "NO"


def _paper(row: MetricRow) -> str:
    if row.paper is None:
        return "–"
    return f"{row.paper.control:.3f} → {row.paper.treatment:.3f} (p {row.paper.p:.3g})"


HEADER = (
    "metric", "control", "treatment", "Δ", "95% CI of Δ", "Welch t", "p", "p (Holm)", "Cohen's d", "cluster CI of Δ",
    "cluster p", "paper", "direction agrees",
)  # fmt: skip


def cells(row: MetricRow) -> list[str]:
    """The human-readable cells of one metric row, in :data:`HEADER` order (Markdown and HTML render these)."""
    cluster_ci = _ci(row.cluster.interval) if row.cluster else "–"
    cluster_p = _p(row.cluster.p) if row.cluster else "–"
    return [
        row.title, _arm(row.control), _arm(row.treatment), _num(row.delta), _ci(row.delta_interval),
        _num(row.welch_t), _p(row.p), _p(row.p_holm), _num(row.cohens_d), cluster_ci, cluster_p, _paper(row),
        _agrees(row),
    ]  # fmt: skip


def _md_cell(text: str) -> str:
    """A Markdown table cell: a ``|`` (metric names come from raw JSON keys) is escaped, a newline flattened."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_row(values: Sequence[str]) -> str:
    return "| " + " | ".join(_md_cell(v) for v in values) + " |"


def markdown(
    reports: Sequence[ExperimentReport],
    charts: Mapping[str, Sequence[Path]] | None = None,
    links_from: Path | None = None,
) -> str:
    """Table 1 per report; chart links are relative to ``links_from`` (the report's folder; default: the
    current directory), so they resolve wherever the report is opened from."""
    base = (links_from or Path.cwd()).absolute()
    lines: list[str] = []
    for report in reports:
        lines += [
            f"## {report.name}",
            "",
            f"Source: `{report.source}`",
            "",
            _md_row(HEADER),
            "|---" * len(HEADER) + "|",
        ]
        lines += [_md_row(cells(row)) for row in report.rows]
        lines += (
            [""] + [f"- {note}" for note in report.notes] + [f"- {r.title}: {r.note}" for r in report.rows if r.note]
        )
        for path in (charts or {}).get(report.name, ()):
            lines.append(f"![{path.stem}]({Path(os.path.relpath(path.absolute(), base)).as_posix()})")
        lines.append("")
    return "\n".join(lines)


def _jsonable(value: float | None) -> float | str | None:
    if value is not None and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value


def row_json(row: MetricRow) -> dict[str, Any]:
    return {
        "metric": row.metric,
        "kind": row.kind,
        "control": {"n": row.control.n, "mean": row.control.mean, "sd": row.control.sd},
        "treatment": {"n": row.treatment.n, "mean": row.treatment.mean, "sd": row.treatment.sd},
        "delta": row.delta,
        "delta_ci95": list(row.delta_interval) if row.delta_interval else None,
        "welch_t": _jsonable(row.welch_t),
        "df": row.df,
        "p": row.p,
        "p_holm": row.p_holm,
        "cohens_d": _jsonable(row.cohens_d),
        "cohens_d_ci95": list(row.d_interval) if row.d_interval else None,
        "cluster_bootstrap": None
        if row.cluster is None
        else {
            "clusters_control": row.cluster.clusters_control,
            "clusters_treatment": row.cluster.clusters_treatment,
            "delta_ci95": list(row.cluster.interval),
            "p": row.cluster.p,
        },
        "paper": None
        if row.paper is None
        else {"control": row.paper.control, "treatment": row.paper.treatment, "p": row.paper.p},
        "direction_agrees": row.direction_agrees,
        "note": row.note,
    }


def as_json(reports: Sequence[ExperimentReport]) -> str:
    body = {
        "experiments": [
            {"name": r.name, "source": r.source, "notes": list(r.notes), "metrics": [row_json(x) for x in r.rows]}
            for r in reports
        ]
    }
    return json.dumps(body, indent=2)


_PAGE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html><html><head><meta charset="utf-8"><title>persona-drift experiment report</title><style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}table{border-collapse:collapse;margin:1rem 0}
td,th{border:1px solid #ccc;padding:.3rem .5rem;text-align:right}
td:first-child,th:first-child{text-align:left}
img{max-width:48%;margin:.5rem;border:1px solid #eee}</style></head><body>
<h1>Experiment report</h1>
{% for report in reports %}
<h2>{{ report.name }}</h2><p>Source: <code>{{ report.source }}</code></p>
<table><tr>{% for name in header %}<th>{{ name }}</th>{% endfor %}</tr>
{% for row in report.rows %}<tr>{% for cell in row %}<td>{{ cell }}</td>{% endfor %}</tr>
{% endfor %}</table>
{% for note in report.notes %}<p class="note">{{ note }}</p>
{% endfor %}{% for chart in report.charts %}<img alt="{{ chart.alt }}" src="data:image/png;base64,{{ chart.data }}">
{% endfor %}{% endfor %}</body></html>
"""
)


def as_html(reports: Sequence[ExperimentReport], charts: Mapping[str, Sequence[Path]] | None = None) -> str:
    """One self-contained page: the tables, the notes, and every chart embedded as a PNG data URI, rendered from
    the rows' cells (never from the Markdown) through an autoescaping template."""
    pages = [
        {
            "name": report.name,
            "source": report.source,
            "rows": [cells(row) for row in report.rows],
            "notes": list(report.notes),
            "charts": [
                {"alt": path.stem, "data": base64.b64encode(path.read_bytes()).decode()}
                for path in (charts or {}).get(report.name, ())
            ],
        }
        for report in reports
    ]
    return _PAGE.render(reports=pages, header=HEADER)
