"""Rendering a regression :class:`~engine.evaluation.regression.Report`: table, JSON, Markdown, JUnit XML.

The Markdown rendering is the pull-request comment; it starts with :data:`REPORT_MARKER` so the CI
workflow finds and updates its own comment instead of adding a new one.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from xml.etree import ElementTree as ET

from engine.evaluation.harness import DimensionResult
from engine.evaluation.regression import NOT_COMPARABLE, DimensionComparison, Report, Verdict

REPORT_MARKER = "<!-- persona-drift-report -->"
FORMATS = ("table", "json", "markdown", "junit")

_VERDICT_MARKS = {
    Verdict.OK: "✅ ok",
    Verdict.REGRESSION: "❌ regression",
    Verdict.LIKELY_REGRESSION: "❌ likely regression",
    Verdict.STALE: "⚠️ stale baseline",
    Verdict.OTHER_JUDGE: "⚠️ other judge",
    Verdict.OTHER_CONVERSATION: "⚠️ other conversation",
    Verdict.NO_BASELINE: "➖ no baseline",
}

_NOT_COMPARED = NOT_COMPARABLE | {Verdict.NO_BASELINE}


def _num(value: float | None, digits: int = 2, signed: bool = False) -> str:
    if value is None:
        return "–"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def _interval(value: tuple[float, float] | None) -> str:
    return "–" if value is None else f"[{value[0]:+.2f}, {value[1]:+.2f}]"


def _rounded(value: float | None) -> float | None:
    """JSON keeps the exact value (issue 18, point 14): only human output rounds (two decimals)."""
    return value


def _propositions(result: DimensionResult) -> list[dict[str, Any]]:
    inverted = {p.id: p.inverted for p in result.pset.propositions}
    return [
        {
            "id": p.id,
            "claim": p.claim,
            "weight": p.weight,
            "inverted": inverted.get(p.id, False),
            "hard": result.pset.hard,
            "raw": p.raw,
            "score": _rounded(p.score),
            "skipped": p.skipped,
            "reasoning": p.reasoning,
            **({"items": list(p.items)} if p.items else {}),
        }
        for p in result.detail.propositions
    ]


def comparison_json(c: DimensionComparison) -> dict[str, Any]:
    spread = c.current.spread
    return {
        "score": _rounded(c.score),
        "baseline": _rounded(c.baseline),
        "delta": _rounded(c.delta),
        "regression": c.regression,
        "likely_regression": c.likely_regression,
        "stale": c.stale,
        "verdict": c.verdict.value,
        "interval": None if c.interval is None else [_rounded(c.interval[0]), _rounded(c.interval[1])],
        "units": len(c.current.units),
        "spread": None
        if spread is None
        else {
            "scores": [_rounded(s) for s in spread.scores],
            "sd": _rounded(spread.sd),
            "range": _rounded(spread.range),
        },
        "propositions": _propositions(c.current),
    }


def render_json(report: Report) -> str:
    agents = {a: {c.dimension.value: comparison_json(c) for c in report.for_agent(a)} for a in report.agents()}
    brief = [
        {
            "agent_id": c.agent_id,
            "dimension": c.dimension.value,
            "score": _rounded(c.score),
            "baseline": _rounded(c.baseline),
            "delta": _rounded(c.delta),
            "likely": c.likely_regression,
        }
        for c in report.regressions
    ]
    stale = [{"agent_id": c.agent_id, "dimension": c.dimension.value} for c in report.stale]
    document = {
        "judge": report.judge,
        "agents": agents,
        "regressions": brief,
        "stale": stale,
        "notes": list(report.notes),
    }
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _rows(report: Report) -> list[list[str]]:
    rows = []
    for c in report.comparisons:
        spread = c.current.spread
        rows.append(
            [
                c.agent_id,
                c.dimension.value,
                _num(c.baseline),
                _num(c.score),
                _num(c.delta, signed=True),
                _interval(c.interval),
                "–" if spread is None else f"{spread.sd:.2f} / {spread.range:.2f}",
                c.verdict.value,
            ]
        )
    return rows


_HEADERS = ["agent", "dimension", "baseline", "current", "delta", "95% CI of delta", "sd / range", "verdict"]


def _summary(report: Report) -> str:
    found = len(report.regressions)
    agents = len(report.agents())
    text = f"{agents} agent(s), {found} regression(s)"
    return text + (f", {len(report.stale)} stale" if report.stale else "")


def render_table(report: Report) -> str:
    rows = [_HEADERS, *_rows(report)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEADERS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    lines += ["", f"judge {report.judge}: {_summary(report)}", *(f"note: {n}" for n in report.notes)]
    return "\n".join(lines) + "\n"


def render_markdown(report: Report) -> str:
    lines = [
        REPORT_MARKER,
        "## Persona regression report",
        "",
        f"Judge `{report.judge}` · {_summary(report)}. A regression is a drop of more than 1.0 below the "
        "golden baseline; *likely* when the 95% bootstrap interval of the drop excludes 0.",
        "",
        "| Agent | Dimension | Baseline | Current | Δ | 95% CI of Δ | Verdict |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for c in report.comparisons:
        lines.append(
            f"| {c.agent_id} | {c.dimension.value} | {_num(c.baseline)} | {_num(c.score)} | "
            f"{_num(c.delta, signed=True)} | {_interval(c.interval)} | {_VERDICT_MARKS[c.verdict]} |"
        )
    if report.notes:
        lines += ["", "**Notes**", "", *(f"- {n}" for n in report.notes)]
    return "\n".join(lines) + "\n"


def _testcase(suite: ET.Element, agent: str, c: DimensionComparison) -> None:
    case = ET.SubElement(suite, "testcase", classname=f"persona.{agent}", name=c.dimension.value)
    detail = (
        f"current {_num(c.score)}, baseline {_num(c.baseline)}, delta {_num(c.delta, signed=True)}, "
        f"interval {_interval(c.interval)}"
    )
    if c.regression:
        failure = ET.SubElement(case, "failure", message=f"{c.verdict.value}: {detail}", type=c.verdict.value)
        failure.text = "\n".join(f"[{p.id}] {p.score:.2f}: {p.reasoning}" for p in c.current.detail.propositions)
    elif c.verdict in _NOT_COMPARED:
        ET.SubElement(case, "skipped", message=c.verdict.value)
    ET.SubElement(case, "system-out").text = detail


def render_junit(report: Report) -> str:
    """One ``testsuite`` per agent, one ``testcase`` per dimension; a regression is a ``failure``."""
    root = ET.Element(
        "testsuites",
        name="persona-regression",
        tests=str(len(report.comparisons)),
        failures=str(len(report.regressions)),
    )
    for agent in report.agents():
        comparisons = report.for_agent(agent)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=agent,
            tests=str(len(comparisons)),
            failures=str(sum(1 for c in comparisons if c.regression)),
            errors="0",
            skipped=str(sum(1 for c in comparisons if c.verdict in _NOT_COMPARED)),
        )
        for c in comparisons:
            _testcase(suite, agent, c)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


RENDERERS: dict[str, Callable[[Report], str]] = {
    "table": render_table,
    "json": render_json,
    "markdown": render_markdown,
    "junit": render_junit,
}
