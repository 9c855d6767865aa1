"""The view's shadow pages' API: every shadow with its agreement, κ and cost, and one shadow's full report
(the numbers of ``drift shadow report NAME --format json``)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

from aiohttp import web

from engine.pricing import PriceTable
from engine.settings import Settings
from engine.shadow_report.agreement import agreement, cohens_kappa
from engine.shadow_report.render import as_dict
from engine.shadow_report.report import build_report
from streams.store.shadow_report import ShadowReports
from streams.view.queries import ViewQueries


def _json(data: Any, status: int = 200) -> web.Response:
    return web.json_response(data, status=status, dumps=lambda d: json.dumps(d, default=str))


async def shadows(_: web.Request, queries: ViewQueries) -> web.Response:
    """``/api/shadows``: the newest 200 shadows, each with its decision agreement, κ, flips and own meter."""
    listed = []
    for info, table, stored, last in await ShadowReports(queries.store).summaries():
        listed.append({
            "name": info.name, "agents": info.agents, "status": info.status, "sample": info.sample,
            "judge": info.judge, "propositions": info.propositions, "settings": dict(info.settings),
            "stored": stored, "compared": table.n, "flips": table.flips,
            "agreement": agreement(table), "kappa": cohens_kappa(table), "skipped": info.skipped,
            "spent_tokens": info.spent_tokens, "spent_usd": info.spent_usd, "budget_usd": info.budget_usd,
            "max_tokens": info.max_tokens, "created_at": info.created_at, "last_verdict": last,
        })  # fmt: skip
    return _json({"shadows": listed})


async def shadow(request: web.Request, queries: ViewQueries, settings: Settings) -> web.Response:
    """``/api/shadows/{name}?since=ISO``: the shadow's report; 404 for an unknown shadow. The statistics run in
    a worker thread (a long shadow's bootstrap is CPU work)."""
    name = request.match_info["name"]
    since = None
    if request.query.get("since"):
        try:
            since = datetime.fromisoformat(request.query["since"])
        except ValueError:
            return _json({"error": "since must be an ISO-8601 time"}, status=400)
    found = await ShadowReports(queries.store).inputs(name, since)
    if found is None:
        return _json({"error": f"no shadow {name!r}"}, status=404)
    prices = PriceTable.load(Path(settings.prices_file) if settings.prices_file else None)
    build = partial(build_report, *found, live_judge=settings.judge or None, prices=prices, since=since)
    return _json(as_dict(await asyncio.to_thread(build)))
