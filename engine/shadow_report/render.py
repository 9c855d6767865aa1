"""A shadow's report as JSON (for tools and the view), Markdown (for a pull request) and one HTML page.

All three render :func:`as_dict`, so they show the same numbers. Human output rounds shares and scores to 3 and
2 decimals; JSON keeps exact values. Undefined values (nothing compared, κ with one decision throughout) are
``null`` in JSON and "–" in text, never NaN. The HTML page comes from a sandboxed, autoescaping template: a
draft's text or a judge's reasoning is shown as text, whatever it holds.
"""

from __future__ import annotations

import html
import json
from datetime import datetime
from typing import Any

from jinja2 import StrictUndefined
from jinja2.sandbox import SandboxedEnvironment

from engine.pricing import format_cost
from engine.shadow_report.agreement import Interval
from engine.shadow_report.report import Cost, Flip, ShadowInfo, ShadowReport


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def _shadow(info: ShadowInfo) -> dict[str, Any]:
    return {
        "name": info.name, "agents": info.agents, "status": info.status, "sample": info.sample,
        "judge": info.judge, "propositions": info.propositions, "settings": dict(info.settings),
        "budget_usd": info.budget_usd, "max_tokens": info.max_tokens, "spent_tokens": info.spent_tokens,
        "spent_usd": info.spent_usd, "skipped": info.skipped, "created_at": _time(info.created_at),
        "stopped_at": _time(info.stopped_at), "promoted_at": _time(info.promoted_at),
    }  # fmt: skip


def _estimate(value: float | None, interval: Interval | None) -> dict[str, Any]:
    return {"value": value, "interval": None if interval is None else list(interval)}


def _cost(cost: Cost) -> dict[str, Any]:
    return {"priced_as": cost.priced_as, "tokens": cost.tokens, "usage": cost.usage.as_dict(), "usd": cost.usd,
            "tokens_per_1000_drafts": cost.tokens_per_1000, "usd_per_1000_drafts": cost.usd_per_1000}  # fmt: skip


def _flip(flip: Flip) -> dict[str, Any]:
    return {
        "draft_id": flip.draft_id, "attempt": flip.attempt, "agent_id": flip.agent_id, "run_id": flip.run_id,
        "text": flip.text, "created_at": _time(flip.created_at),
        "live": {"decision": flip.live_decision, "total_score": flip.live_total,
                 "dimensions": {k: dict(v) for k, v in flip.live_dimensions.items()}},
        "shadow": {"decision": flip.decision, "total_score": flip.total,
                   "dimensions": {k: dict(v) for k, v in flip.dimensions.items()}},
    }  # fmt: skip


def note(report: ShadowReport) -> str | None:
    """Why the report has no statistics, or ``None`` when it has."""
    window = f" since {report.since.isoformat()}" if report.since else ""
    if report.stored == 0:
        return (f"no shadow verdicts{window} yet: shadow {report.shadow.name!r} is {report.shadow.status}; the "
                "workers record one for each sampled draft once its live verdict was sent")  # fmt: skip
    if report.compared == 0:
        return f"{report.stored} shadow verdicts{window}, all of silent drafts (skip): nothing was gated to compare"
    return None


def as_dict(report: ShadowReport) -> dict[str, Any]:
    """The report as plain JSON-ready data (the shape ``--format json`` prints and ``/api/shadows/NAME`` serves)."""
    t, m = report.table, report.method
    return {
        "shadow": _shadow(report.shadow), "since": _time(report.since), "note": note(report),
        "method": {"kind": "percentile bootstrap, paired", "resamples": m.resamples, "seed": m.seed,
                   "level": m.level, "description": m.describe()},
        "stored": report.stored, "compared": report.compared, "silent": report.silent,
        "skipped": report.shadow.skipped,
        "agreement": _estimate(report.agreement, report.agreement_interval),
        "kappa": _estimate(report.kappa, report.kappa_interval),
        "confusion": {"live_commit": {"shadow_commit": t.commit_commit, "shadow_retry": t.commit_retry},
                      "live_retry": {"shadow_commit": t.retry_commit, "shadow_retry": t.retry_retry}},
        "dimensions": [{"dimension": d.dimension, "n": d.n, "mean_difference": d.mean, "interval": list(d.interval)}
                       for d in report.dimensions],
        "flips": {"total": t.flips, "listed": [_flip(f) for f in report.flips], "omitted": report.flips_omitted},
        "cost": {"live": _cost(report.live_cost), "shadow": _cost(report.shadow_cost),
                 "shadow_meter": {"spent_tokens": report.shadow.spent_tokens, "spent_usd": report.shadow.spent_usd,
                                  "budget_usd": report.shadow.budget_usd, "max_tokens": report.shadow.max_tokens}},
    }  # fmt: skip


def as_json(report: ShadowReport) -> str:
    return json.dumps(as_dict(report), indent=2)


def share(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def interval(bounds: list[float] | None, digits: int = 3, signed: bool = False) -> str:
    if bounds is None:
        return ""
    spec = f"+.{digits}f" if signed else f".{digits}f"
    return f"[{bounds[0]:{spec}}, {bounds[1]:{spec}}]"


def _dollars(value: float | None) -> str:
    return format_cost(value)


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def cost_rows(data: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(side, priced as, tokens, dollars, per 1,000 drafts) for both sides."""
    rows = []
    for side in ("live", "shadow"):
        c = data["cost"][side]
        per = f"{_number(c['tokens_per_1000_drafts'])} tokens, {_dollars(c['usd_per_1000_drafts'])}"
        rows.append((side, c["priced_as"] or "unknown (pass --live-judge)", f"{c['tokens']:,}", _dollars(c["usd"]),
                     per if c["tokens_per_1000_drafts"] is not None else "–"))  # fmt: skip
    return rows


def _environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(autoescape=True, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(share=share, interval=interval, dollars=_dollars)
    return env


def as_html(report: ShadowReport) -> str:
    """One self-contained page (no scripts, no external resources)."""
    from engine.shadow_report.templates import PAGE

    data = as_dict(report)
    return _environment().from_string(PAGE).render(r=data, costs=cost_rows(data))


def markdown(report: ShadowReport) -> str:
    from engine.shadow_report.templates import MARKDOWN

    data = as_dict(report)
    env = SandboxedEnvironment(autoescape=False, undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(share=share, interval=interval, dollars=_dollars, cell=_cell)
    return env.from_string(MARKDOWN).render(r=data, costs=cost_rows(data)).rstrip() + "\n"


def _cell(text: object, limit: int = 200) -> str:
    """Text for one line of Markdown: one line, cut to ``limit`` characters, pipes and HTML escaped (a Markdown
    renderer that passes HTML through must show a draft's ``<script>`` as text)."""
    flat = " ".join(str(text).split())
    flat = flat if len(flat) <= limit else flat[: limit - 1] + "…"
    return html.escape(flat, quote=False).replace("|", "\\|")
