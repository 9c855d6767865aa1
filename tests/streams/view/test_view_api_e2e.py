"""The view's JSON API on the embedded PostgreSQL: shapes, filters, pagination, empty state, the token."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from aiokafka import AIOKafkaProducer

from engine.formats.results import FormatRun, ItemResult
from engine.settings import BUNDLED_PROPOSITIONS
from streams.store import Store
from streams.store.formats import PostgresRunRecorder
from streams.view.live import LiveVerdicts
from streams.view.queries import ViewQueries
from streams.view.server import build_app
from streams.wire.kafka import create_topics
from streams.wire.payloads import CorrectionLog, Verdict, encode
from tests.stack import Stack

pytestmark = pytest.mark.e2e
T0 = datetime(2032, 1, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
async def store(stack: Stack) -> AsyncIterator[Store]:
    async with await Store.connect(stack.database.url) as connected:
        yield connected


async def _client(
    stack: Stack, store: Store, token: str = "", live: LiveVerdicts | None = None
) -> TestClient[Any, Any]:
    settings = stack.settings("view.")
    app = build_app(settings, ViewQueries(store), live or LiveVerdicts(settings), token)
    client = TestClient(TestServer(app))
    await client.start_server()
    return client


def _log(agent: str, draft: str, attempt: int, outcome: str, minutes: int, text: str) -> CorrectionLog:
    decision = "retry" if outcome == "corrected" else "commit"
    return CorrectionLog(
        draft_id=draft, attempt_number=attempt, agent_id=agent, run_id="run-v", original_text=text,
        decision=decision, outcome=outcome, created_at=T0 + timedelta(minutes=minutes),
    )  # fmt: skip


async def test_verdicts_agents_and_drafts(stack: Stack, store: Store) -> None:
    agent, draft = f"creed-{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    logs = [_log(agent, draft, 1, "corrected", 0, "I am Creed."), _log(agent, draft, 2, "passed_after_retry", 1, "Hi.")]
    logs += [_log(agent, uuid.uuid4().hex, 1, "passed", 2 + i, f"m{i}") for i in range(5)]
    await store.write_correction_logs(logs)
    client = await _client(stack, store)
    try:
        page = await (await client.get("/api/verdicts", params={"agent": agent, "limit": "3"})).json()
        assert len(page["verdicts"]) == 3
        assert page["verdicts"][0]["created_at"] > page["verdicts"][-1]["created_at"]  # newest first
        before = page["verdicts"][-1]["created_at"]
        rest = await (await client.get("/api/verdicts", params={"agent": agent, "before": before})).json()
        assert len(rest["verdicts"]) == 4 and all(v["created_at"] < before for v in rest["verdicts"])
        corrected = await (await client.get("/api/verdicts", params={"agent": agent, "outcome": "corrected"})).json()
        assert [v["draft_id"] for v in corrected["verdicts"]] == [draft]
        attempts = (await (await client.get(f"/api/drafts/{draft}")).json())["attempts"]
        assert [(a["attempt_number"], a["original_text"]) for a in attempts] == [(1, "I am Creed."), (2, "Hi.")]
        agents = (await (await client.get("/api/agents", params={"limit": "200"})).json())["agents"]
        row = next(a for a in agents if a["agent_id"] == agent)
        assert (row["drafts"], row["attempts"], row["retries"]) == (6, 7, 1)
        assert (await client.get("/api/verdicts", params={"limit": "0"})).status == 400
        assert (await client.get("/api/verdicts", params={"limit": "201"})).status == 400
        assert (await client.get("/api/verdicts", params={"before": "yesterday"})).status == 400
    finally:
        await client.close()


async def test_agent_scores_over_time_with_the_baseline(stack: Stack, store: Store) -> None:
    agent = "michael"  # a bundled agent: its golden baseline draws the band
    for day, score in enumerate((7.5, 6.0)):
        await store.pool.execute("INSERT INTO agents (id) VALUES ($1) ON CONFLICT DO NOTHING", agent)
        await store.pool.execute(
            "INSERT INTO evaluation_runs (agent_id, status, dimensions, sample_size, dimension_scores, overall_score,"
            " created_at) VALUES ($1, 'completed', $2, 10, $3, $4, $5)",
            agent, ["adherence"], {"adherence": score}, score, T0 + timedelta(days=day),
        )  # fmt: skip
    client = await _client(stack, store)
    try:
        body = await (await client.get(f"/api/agents/{agent}/scores")).json()
        ours = [r for r in body["runs"] if r["created_at"].startswith("2032-01-0")]
        assert [r["dimension_scores"]["adherence"] for r in ours] == [6.0, 7.5]  # newest first
        assert body["baseline"]["scores"]["adherence"] > 0 and body["baseline"]["regression_drop"] == 1.0
        assert (BUNDLED_PROPOSITIONS / "baselines" / "michael.json").is_file()
        none = await (await client.get("/api/agents/nobody-at-all/scores")).json()
        assert none == {"agent_id": "nobody-at-all", "runs": [], "baseline": None}
    finally:
        await client.close()


async def test_format_runs_and_their_items(stack: Stack, store: Store) -> None:
    run = FormatRun(format="plexus", source="card.yaml", target="recorded:x", judge="scripted:r",
                    items=(ItemResult(item_id="i1", score=1.0, verdict="yes"),), summary={"accuracy": 1.0})  # fmt: skip
    await PostgresRunRecorder(store).record(run)
    client = await _client(stack, store)
    try:
        runs = (await (await client.get("/api/runs/formats", params={"format": "plexus", "limit": "200"})).json())[
            "runs"
        ]
        assert any(r["run_id"] == run.run_id and r["summary"] == {"accuracy": 1.0} for r in runs)
        items = (await (await client.get(f"/api/runs/formats/{run.run_id}/items")).json())["items"]
        assert [(i["item_id"], i["verdict"]) for i in items] == [("i1", "yes")]
        assert (await (await client.get("/api/runs/formats/not-a-uuid/items")).json()) == {"items": []}
        evals = await client.get("/api/runs/evaluations")
        assert evals.status == 200 and "runs" in await evals.json()
    finally:
        await client.close()


async def test_live_events_are_filtered_server_sent_events(stack: Stack, store: Store) -> None:
    live = LiveVerdicts(stack.settings("view."))
    client = await _client(stack, store, live=live)
    try:
        response = await client.get("/api/live", params={"agent": "pam"})
        assert response.headers["Content-Type"] == "text/event-stream"
        live.publish({"agent_id": "jim", "draft_id": "d0", "outcome": "passed"})
        live.publish({"agent_id": "pam", "draft_id": "d1", "outcome": "passed"})
        line = await asyncio.wait_for(response.content.readline(), 5)
        assert line.startswith(b"data: ") and b'"d1"' in line  # jim's was filtered out
        response.close()
    finally:
        await client.close()


async def test_a_token_guards_everything_but_the_login(stack: Stack, store: Store) -> None:
    client = await _client(stack, store, token="s3cret-token")
    try:
        assert (await client.get("/api/agents")).status == 401
        assert (await client.get("/")).status == 401
        assert (await client.get("/login", params={"token": "wrong"}, allow_redirects=False)).status == 401
        login = await client.get("/login", params={"token": "s3cret-token"}, allow_redirects=False)
        assert login.status == 302 and "HttpOnly" in login.headers["Set-Cookie"]
        assert (await client.get("/api/agents")).status == 200  # the cookie jar holds the cookie now
        bearer = await client.session.get(
            client.make_url("/api/agents"), headers={"Authorization": "Bearer s3cret-token"}, cookies={}
        )
        assert bearer.status == 200
    finally:
        await client.close()


async def test_experiments_list_and_their_table1(stack: Stack, store: Store) -> None:
    experiment = f"exp-{uuid.uuid4().hex[:8]}"
    await store.pool.execute(
        "INSERT INTO experiments (id, scenario, status) VALUES ($1, 'brainstorming-average', 'completed')", experiment
    )
    await store.pool.executemany(
        "INSERT INTO experiment_sessions (experiment_id, arm, session_key, run_id, grp) VALUES ($1, $2, $3, $4, 'g')",
        [(experiment, arm, f"s{k}", f"{experiment}-{arm}-{k}") for arm in ("control", "treatment") for k in (0, 1)],
    )
    rows = [
        (experiment, arm, f"s{i % 2}", "fluency", f"{arm}-{i}", f"p{i}", float(base + i % 3))
        for arm, base in (("control", 4), ("treatment", 7))
        for i in range(6)
    ]
    await store.pool.executemany(
        "INSERT INTO experiment_scores (experiment_id, arm, session_key, metric, subject, cluster, value) "
        "VALUES ($1, $2, $3, $4, $5, $6, $7)",
        rows,
    )
    client = await _client(stack, store)
    try:
        listed = (await (await client.get("/api/runs/experiments", params={"limit": "200"})).json())["experiments"]
        assert any(x["experiment_id"] == experiment and x["status"] == "completed" for x in listed)
        body = await (await client.get(f"/api/experiments/{experiment}")).json()
        (metric,) = body["experiments"][0]["metrics"]
        assert metric["metric"] == "fluency" and metric["delta"] == pytest.approx(3.0)
        assert metric["cluster_bootstrap"]["clusters_control"] == 6
        page = await client.get(f"/experiments/{experiment}")
        assert page.status == 200 and (await page.text()).count("data:image/png;base64,") == 2
        assert (await client.get("/api/experiments/no-such-experiment")).status == 404
    finally:
        await client.close()


async def test_a_hundred_thousand_verdicts_come_back_a_page_at_a_time(stack: Stack, store: Store) -> None:
    agent = f"bulk-{uuid.uuid4().hex[:6]}"
    await store.pool.execute("INSERT INTO agents (id) VALUES ($1)", agent)
    await store.pool.execute(
        "INSERT INTO correction_logs (draft_id, agent_id, original_text, attempt_number, decision, outcome, created_at)"
        " SELECT $1 || i, $2, 'text ' || i, 1, 'commit', 'passed', $3::timestamptz + i * interval '1 second'"
        " FROM generate_series(1, 100000) AS i",
        f"{agent}-", agent, T0,
    )  # fmt: skip
    client = await _client(stack, store)
    try:
        seen: set[str] = set()
        params = {"agent": agent, "limit": "200"}
        for _ in range(3):  # three pages, each bounded, each older than the last
            page = (await (await client.get("/api/verdicts", params=params)).json())["verdicts"]
            assert len(page) == 200 and not seen & {v["draft_id"] for v in page}
            seen |= {v["draft_id"] for v in page}
            params["before"] = page[-1]["created_at"]
        agents = (await (await client.get("/api/agents", params={"limit": "200"})).json())["agents"]
        assert next(a for a in agents if a["agent_id"] == agent)["attempts"] == 100_000
    finally:
        await client.close()


async def test_a_page_opened_after_verdicts_starts_with_the_last_200_then_follows(stack: Stack) -> None:
    """Issue 29: the view started after two sessions showed "Waiting for verdicts…"; it read from the end."""
    settings = stack.settings(f"t{uuid.uuid4().hex[:8]}.")
    await create_topics(settings, partitions=3)
    topic, base = settings.topic("verdicts"), int(time.time() * 1000) - 600_000
    producer = AIOKafkaProducer(bootstrap_servers=settings.broker)
    await producer.start()

    async def send(i: int) -> None:
        verdict = Verdict(draft_id=f"d{i}", attempt=1, agent_id="a", decision="commit", outcome="passed", text="t")
        await producer.send_and_wait(topic, encode(verdict), key=b"k", partition=i % 3, timestamp_ms=base + 10 * i)

    live = LiveVerdicts(settings)
    try:
        for i in range(250):  # spread over the three partitions, in time order
            await send(i)
        await live.start()
        await asyncio.wait_for(live.ready.wait(), 30)
        stream = live.subscribe({})
        first = [await asyncio.wait_for(anext(stream), 5) for _ in range(200)]
        assert [v["draft_id"] for v in first] == [f"d{i}" for i in range(50, 250)]  # the newest 200, oldest first
        assert first[0]["at"] == base + 500
        await send(250)
        assert (await asyncio.wait_for(anext(stream), 10))["draft_id"] == "d250"  # then what happens next
    finally:
        await live.stop()
        await producer.stop()
