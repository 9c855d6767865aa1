"""The view's drift-monitor API: open alerts, and an agent's first-attempt gate scores with the detector's
evidence replayed beside them (the chart marks where it alerted)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from aiohttp import web

from engine.models import AgentConfig
from engine.monitor.stream import StreamPolicy, trace
from streams.view.queries import ViewQueries

#: The newest first-attempt scores an agent's monitor chart replays.
CHART_SCORES = 500

_SCORES = """
SELECT dimension_scores, created_at FROM correction_logs
WHERE agent_id = $1 AND attempt_number = 1 AND dimension_scores IS NOT NULL
ORDER BY created_at DESC LIMIT $2"""

#: How each live stream took its reference: from a baseline (``warmup_n`` 0: the reference itself) or from
#: its first ``warmup_n`` observations (recomputed by the replay from the same scores).
_REFERENCES = """
SELECT dimension, (state->>'reference')::double precision AS reference, (state->>'warmup_n')::int AS warmup_n
FROM monitor_streams WHERE agent_id = $1 AND source = 'gate' AND state->>'reference' IS NOT NULL
ORDER BY updated_at DESC"""


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda d: json.dumps(d, default=str))


async def alerts(request: web.Request, queries: ViewQueries) -> web.Response:
    """``/api/alerts?open=1&agent=ID``: the newest 200 alerts."""
    rows = await queries.store.alerts(
        agent_id=request.query.get("agent") or None, open_only=request.query.get("open") == "1", limit=200
    )
    return _json({"alerts": rows})


async def agent_monitor(request: web.Request, queries: ViewQueries, reference_n: int) -> web.Response:
    """``/api/agents/{agent}/monitor``: per dimension, the scores, the reference, the evidence and the alerts."""
    agent = request.match_info["agent"]
    pool = queries.store.pool
    config = await queries.store.get_config(agent) or AgentConfig()
    live = {r["dimension"]: (r["reference"], r["warmup_n"]) for r in reversed(await pool.fetch(_REFERENCES, agent))}
    series: dict[str, list[tuple[datetime, float]]] = {}
    for row in reversed(await pool.fetch(_SCORES, agent, CHART_SCORES)):
        for dimension, score in (row["dimension_scores"] or {}).items():
            if isinstance(score, dict) and isinstance(score.get("score"), int | float) and not score.get("error"):
                series.setdefault(dimension, []).append((row["created_at"], float(score["score"])))
    dimensions = {}
    for dimension, points in sorted(series.items()):
        reference, warmup = live.get(dimension, (None, reference_n))
        baseline, size = (reference, reference_n) if warmup == 0 else (None, warmup)
        policy = StreamPolicy(config.monitor_alpha, config.monitor_min_shift, size, baseline)
        replayed = trace(policy, [s for _, s in points])
        dimensions[dimension] = {"times": [t for t, _ in points], "scores": [s for _, s in points],
                                 "reference": replayed.reference, "evidence": replayed.evidence,
                                 "threshold": replayed.threshold, "alerted_at": replayed.alerts}  # fmt: skip
    stored = await queries.store.alerts(agent_id=agent, limit=200)
    return _json({"agent_id": agent, "monitor_enabled": config.monitor_enabled, "dimensions": dimensions,
                  "alerts": stored})  # fmt: skip
