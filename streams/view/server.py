"""The view's aiohttp application: JSON API, server-sent events, static front end, token check.

Bound to loopback by default. Bound anywhere else it requires ``DRIFT_VIEW_TOKEN``: the browser presents it
once at ``/login?token=…`` and gets an HttpOnly, SameSite=Strict cookie; API clients may send
``Authorization: Bearer …``. There is no access log (paths and filters could name agents; message text is
never logged either way).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp_sse import EventSourceResponse, sse_response

from engine.evaluation.baseline import load_baseline
from engine.evaluation.regression import REGRESSION_DROP
from engine.settings import Settings
from streams.view import monitor, shadows
from streams.view.live import LiveVerdicts
from streams.view.queries import DEFAULT_LIMIT, MAX_LIMIT, Page, ViewQueries

COOKIE = "drift_view_token"
STATIC = Path(str(resources.files("streams.view") / "static"))
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

QUERIES = web.AppKey("queries", ViewQueries)
LIVE = web.AppKey("live", LiveVerdicts)
SETTINGS = web.AppKey("settings", Settings)
TOKEN = web.AppKey("token", str)
KEEPALIVE = web.AppKey("keepalive", float)
#: seconds between keep-alive comments on an idle live stream (proxies commonly cut a silent one after 30-60 s)
KEEPALIVE_S = 15.0


def _bad(message: str) -> web.HTTPBadRequest:
    return web.HTTPBadRequest(text=json.dumps({"error": message}), content_type="application/json")


def page_of(request: web.Request) -> Page:
    query = request.query
    try:
        limit = int(query.get("limit", DEFAULT_LIMIT))
        offset = int(query.get("offset", 0))
    except ValueError:
        raise _bad("limit and offset must be whole numbers") from None
    if not 1 <= limit <= MAX_LIMIT or offset < 0:
        raise _bad(f"limit must be between 1 and {MAX_LIMIT}, offset at least 0")
    before = None
    if query.get("before"):
        try:
            before = datetime.fromisoformat(query["before"])
        except ValueError:
            raise _bad("before must be an ISO-8601 time") from None
    return Page(limit, before, offset)


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda d: json.dumps(d, default=str))


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    token = request.app.get(TOKEN, "")
    if not token or request.path == "/login":
        return await handler(request)
    presented = request.cookies.get(COOKIE) or request.headers.get("Authorization", "").removeprefix("Bearer ")
    if presented and hmac.compare_digest(presented.encode(), token.encode()):
        return await handler(request)
    raise web.HTTPUnauthorized(text="open the login URL that `drift view` printed", content_type="text/plain")


async def login(request: web.Request) -> web.StreamResponse:
    token = request.app.get(TOKEN, "")
    given = request.query.get("token", "")
    if not token or not hmac.compare_digest(given.encode(), token.encode()):
        raise web.HTTPUnauthorized(text="wrong or missing token", content_type="text/plain")
    response = web.HTTPFound("/")
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict")
    raise response


async def index(_: web.Request) -> web.StreamResponse:
    return web.FileResponse(STATIC / "index.html")


async def live(request: web.Request) -> web.StreamResponse:
    """Server-sent events of the verdicts matching the query's filters, with a keep-alive comment every
    ``KEEPALIVE`` seconds (proxies cut idle streams). A failed keep-alive or send means the page is gone: the
    subscription ends then, even when the filter matched nothing since."""
    filters = {k: request.query.get(k, "") for k in ("agent", "run", "outcome")}
    async with sse_response(request, ping_interval=request.app[KEEPALIVE]) as response:
        forward = asyncio.create_task(_forward(response, request.app[LIVE].subscribe(filters)))
        try:
            await response.wait()  # returns once a keep-alive or a send fails (the client is gone)
        finally:
            forward.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError, TimeoutError):
                await forward
    return response


async def _forward(response: EventSourceResponse, verdicts: AsyncIterator[dict[str, Any]]) -> None:
    """Send each verdict; however this ends (a failed send included), the stream ends with it."""
    try:
        async for verdict in verdicts:
            await response.send(json.dumps(verdict))
    finally:
        response.stop_streaming()


async def verdicts(request: web.Request) -> web.Response:
    q = request.query
    rows = await request.app[QUERIES].verdicts(page_of(request), q.get("agent"), q.get("run"), q.get("outcome"))
    return _json({"verdicts": rows})


async def draft(request: web.Request) -> web.Response:
    return _json({"attempts": await request.app[QUERIES].draft(request.match_info["draft_id"])})


async def agents(request: web.Request) -> web.Response:
    return _json({"agents": await request.app[QUERIES].agents(page_of(request))})


async def agent_scores(request: web.Request) -> web.Response:
    agent = request.match_info["agent"]
    runs = await request.app[QUERIES].agent_scores(agent, page_of(request))
    return _json({"agent_id": agent, "runs": runs, "baseline": _baseline(request.app[SETTINGS], agent)})


def _baseline(settings: Settings, agent: str) -> dict[str, Any] | None:
    try:
        baseline = load_baseline(Path(settings.propositions_dir) / "baselines", agent)
    except Exception:
        return None
    if baseline is None:
        return None
    scores = {d.value: b.score for d, b in baseline.dimensions.items()}
    return {"judge": baseline.judge, "scores": scores, "regression_drop": REGRESSION_DROP}


async def evaluation_runs(request: web.Request) -> web.Response:
    return _json({"runs": await request.app[QUERIES].evaluation_runs(page_of(request))})


async def format_runs(request: web.Request) -> web.Response:
    runs = await request.app[QUERIES].format_runs(page_of(request), request.query.get("format") or None)
    return _json({"runs": runs})


async def experiments(request: web.Request) -> web.Response:
    return _json({"experiments": await request.app[QUERIES].experiments(page_of(request))})


async def _experiment_report(request: web.Request) -> tuple[Any, Any]:
    from engine.errors import DriftError
    from engine.experiments.analysis import analyse
    from streams.store.experiments import ExperimentStore, experiment_data

    store = ExperimentStore(request.app[QUERIES].store)
    experiment_id = request.match_info["experiment_id"]
    try:
        stored = await store.get(experiment_id)
    except DriftError:
        raise web.HTTPNotFound(text=json.dumps({"error": f"no experiment {experiment_id}"})) from None
    data = experiment_data(stored, await store.samples(experiment_id))
    return data, analyse(data)


async def experiment_json(request: web.Request) -> web.Response:
    from engine.experiments.render import as_json

    _, report = await _experiment_report(request)
    return web.Response(text=as_json([report]), content_type="application/json")


async def experiment_html(request: web.Request) -> web.Response:
    """The experiment's Table 1 with its charts, drawn in a worker thread (matplotlib is CPU-bound)."""
    import asyncio
    import tempfile

    from engine.experiments.charts import draw
    from engine.experiments.render import as_html

    data, report = await _experiment_report(request)

    def render() -> str:
        with tempfile.TemporaryDirectory(prefix="drift-view-") as folder:
            return as_html([report], {data.name: draw(data, report, Path(folder))})

    return web.Response(text=await asyncio.to_thread(render), content_type="text/html")


async def format_items(request: web.Request) -> web.Response:
    items = await request.app[QUERIES].format_items(request.match_info["run_id"], page_of(request))
    return _json({"items": items})


def build_app(
    settings: Settings, queries: ViewQueries, live_verdicts: LiveVerdicts, token: str = "",
    *, keepalive_s: float = KEEPALIVE_S,
) -> web.Application:  # fmt: skip
    app = web.Application(middlewares=[require_token])
    app[QUERIES], app[LIVE], app[SETTINGS], app[TOKEN] = queries, live_verdicts, settings, token
    app[KEEPALIVE] = keepalive_s
    app.router.add_get("/", index)
    app.router.add_get("/login", login)
    app.router.add_static("/static/", STATIC)
    app.router.add_get("/api/live", live)
    app.router.add_get("/api/verdicts", verdicts)
    app.router.add_get("/api/drafts/{draft_id}", draft)
    app.router.add_get("/api/agents", agents)
    app.router.add_get("/api/agents/{agent}/scores", agent_scores)
    app.router.add_get("/api/runs/evaluations", evaluation_runs)
    app.router.add_get("/api/runs/formats", format_runs)
    app.router.add_get("/api/runs/formats/{run_id}/items", format_items)
    app.router.add_get("/api/runs/experiments", experiments)
    app.router.add_get("/api/experiments/{experiment_id}", experiment_json)
    app.router.add_get("/experiments/{experiment_id}", experiment_html)
    app.router.add_get("/api/alerts", lambda r: monitor.alerts(r, queries))
    app.router.add_get("/api/agents/{agent}/monitor",
                       lambda r: monitor.agent_monitor(r, queries, settings.monitor_reference_n))  # fmt: skip
    app.router.add_get("/api/shadows", lambda r: shadows.shadows(r, queries))
    app.router.add_get("/api/shadows/{name}", lambda r: shadows.shadow(r, queries, settings))
    return app
