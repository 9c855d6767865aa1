"""``drift shadow report`` and the view's shadow API on the embedded PostgreSQL (issue 30, point 3).

Shadow verdicts are inserted as the worker's shadow lane writes them: the live gate at threshold 6.5, a candidate
at 7.5 on the same scores. The test then computes, on the stored rows and without the product's code, which
drafts must flip and the decision agreement and Cohen's κ, and checks the report (CLI JSON, Markdown, HTML and
the view's API) says exactly that.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp.test_utils import TestClient, TestServer
from typer.testing import CliRunner, Result

from streams.cli import app
from streams.store import Store
from streams.view.live import LiveVerdicts
from streams.view.queries import ViewQueries
from streams.view.server import build_app
from tests.stack import DRIFT, Stack

pytestmark = pytest.mark.e2e
T = TypeVar("T")
LIVE_THRESHOLD, SHADOW_THRESHOLD = 6.5, 7.5
#: adherence score of each draft: below 6.5 both send it back, from 6.5 to 7.5 only the candidate does
SCORES = [5.0, 6.0, 6.6, 6.8, 7.0, 7.2, 7.4, 7.6, 8.0, 8.5, 9.0, 6.9, 7.7, 8.2, 5.5, 7.45, 8.8, 6.4, 7.9, 8.1]
T0 = datetime.now(UTC) - timedelta(hours=1)


@pytest.fixture
async def store(stack: Stack) -> AsyncIterator[Store]:
    async with await Store.connect(stack.database.url) as connected:
        yield connected


def _dimension(score: float, threshold: float, reasoning: str, **extra: Any) -> dict[str, Any]:
    return {"score": score, "threshold": threshold, "passed": score >= threshold, "reasoning": reasoning,
            "timed_out": False, "error": None, **extra}  # fmt: skip


def _verdict(shadow: str, index: int, score: float) -> tuple[Any, ...]:
    live = "commit" if score >= LIVE_THRESHOLD else "retry"
    candidate = "commit" if score >= SHADOW_THRESHOLD else ("reject" if index % 2 else "retry")
    live_dims = {"adherence": _dimension(score, LIVE_THRESHOLD, f"live says {score}"),
                 "fluency": _dimension(8.0, LIVE_THRESHOLD, "fluent")}  # fmt: skip
    dims = {"adherence": _dimension(score, SHADOW_THRESHOLD, f"<b>strict</b> says {score}"),
            "fluency": _dimension(0.0, SHADOW_THRESHOLD, "judge deadline passed", timed_out=True)}  # fmt: skip
    return (
        shadow, f"draft-{index}", 1, f"agent-{index % 3}", "run-s", f"draft {index} <i>text</i>", dims, None,
        score, candidate, live, live_dims, score + 8.0, {"input_tokens": 100, "output_tokens": 10},
        {"input_tokens": 300, "output_tokens": 30}, 12.5, T0 + timedelta(seconds=index),
    )  # fmt: skip


async def _shadow(store: Store, scores: list[float], *, silent: int = 0) -> str:
    name = f"strict-{uuid.uuid4().hex[:8]}"
    await store.pool.execute(
        "INSERT INTO shadows (name, agents, judge, settings, sample, spent_tokens, spent_usd, skipped) "
        "VALUES ($1, 'agent-*', 'scripted:strict.yaml', $2, 1.0, $3, 0, 4)",
        name, {"gate_adherence_threshold": SHADOW_THRESHOLD}, 330 * len(scores),
    )  # fmt: skip
    rows = [_verdict(name, i, s) for i, s in enumerate(scores)]
    rows += [(name, f"silent-{i}", 1, "agent-0", None, "", None, None, None, "skip", "skip", None, None, None, None,
              None, T0) for i in range(silent)]  # fmt: skip
    await store.pool.executemany(
        "INSERT INTO shadow_verdicts (shadow, draft_id, attempt_number, agent_id, run_id, original_text, "
        "dimension_scores, similarity_score, total_score, decision, live_decision, live_dimension_scores, "
        "live_total_score, live_token_usage, token_usage, latency_ms, created_at) "
        "VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17)",
        rows,
    )
    return name


async def _independent(store: Store, name: str) -> tuple[set[str], float, float]:
    """From the stored rows alone: the drafts that must flip (the stored scores between the two thresholds), the
    decision agreement and Cohen's κ (textbook formulas)."""
    rows = await store.pool.fetch(
        "SELECT draft_id, decision, live_decision, (dimension_scores->'adherence'->>'score')::float AS score "
        "FROM shadow_verdicts WHERE shadow = $1 AND decision <> 'skip' AND live_decision <> 'skip'", name
    )  # fmt: skip
    must_flip = {r["draft_id"] for r in rows if LIVE_THRESHOLD <= r["score"] < SHADOW_THRESHOLD}
    live = [r["live_decision"] == "commit" for r in rows]
    shadow = [r["decision"] == "commit" for r in rows]
    n = len(rows)
    observed = sum(a == b for a, b in zip(live, shadow, strict=True)) / n
    chance = (sum(live) / n) * (sum(shadow) / n) + (1 - sum(live) / n) * (1 - sum(shadow) / n)
    return must_flip, observed, (observed - chance) / (1 - chance)


def _report(stack: Stack, *args: str) -> Result:
    """``drift shadow report ARGS`` in this process (a subprocess costs seconds of start-up on a busy machine)."""
    result = CliRunner().invoke(app, ["shadow", "report", *args, "--database", stack.database.url])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _in_database(stack: Stack, call: Callable[[Store], Awaitable[T]]) -> T:
    async def go() -> T:
        async with await Store.connect(stack.database.url) as store:
            return await call(store)

    return asyncio.run(go())


def test_the_report_equals_an_independent_computation_on_the_stored_rows(stack: Stack, tmp_path: Path) -> None:
    name = _in_database(stack, lambda store: _shadow(store, SCORES, silent=2))
    must_flip, observed, kappa = _in_database(stack, lambda store: _independent(store, name))
    assert len(must_flip) == 7 and 0 < kappa < 1  # the data are what the test means them to be
    report = json.loads(_report(stack, name, "--format", "json", "--live-judge", "scripted:live.yaml").stdout)
    assert report["agreement"]["value"] == pytest.approx(observed, abs=1e-12)
    assert report["kappa"]["value"] == pytest.approx(kappa, abs=1e-12)
    low, high = report["kappa"]["interval"]
    assert low <= kappa <= high and report["agreement"]["interval"][0] <= observed <= report["agreement"]["interval"][1]
    assert {f["draft_id"] for f in report["flips"]["listed"]} == must_flip and report["flips"]["total"] == 7
    assert (report["stored"], report["compared"], report["silent"], report["skipped"]) == (22, 20, 2, 4)
    assert report["confusion"] == {"live_commit": {"shadow_commit": 9, "shadow_retry": 7},
                                   "live_retry": {"shadow_commit": 0, "shadow_retry": 4}}  # fmt: skip
    flip = next(f for f in report["flips"]["listed"] if f["draft_id"] == "draft-2")
    assert flip["agent_id"] == "agent-2" and flip["text"] == "draft 2 <i>text</i>"
    assert flip["live"]["decision"] == "commit" and flip["shadow"]["dimensions"]["adherence"]["score"] == 6.6
    assert flip["shadow"]["dimensions"]["adherence"]["reasoning"] == "<b>strict</b> says 6.6"
    (adherence,) = report["dimensions"]  # fluency timed out on the candidate's side: not compared
    assert adherence["dimension"] == "adherence" and adherence["n"] == 20 and adherence["mean_difference"] == 0.0
    assert report["method"]["resamples"] == 2000 and report["method"]["seed"] == 0
    assert report["cost"]["live"]["tokens"] == 20 * 110 and report["cost"]["shadow"]["tokens"] == 20 * 330
    assert report["cost"]["shadow"]["tokens_per_1000_drafts"] == pytest.approx(1000 * 20 * 330 / 22)
    assert report["cost"]["live"]["usd"] == 0.0 and report["cost"]["shadow"]["priced_as"] == "scripted:strict.yaml"
    again = _report(stack, name, "--format", "json", "--live-judge", "scripted:live.yaml")
    assert json.loads(again.stdout) == report  # the seeded bootstrap repeats
    page = tmp_path / "out" / "report.html"
    _report(stack, name, "--format", "html", "--output", str(page))
    assert "&lt;b&gt;strict&lt;/b&gt; says 6.6" in page.read_text() and "<b>strict</b>" not in page.read_text()
    text = _report(stack, name).stdout
    assert f"| decision agreement | {observed:.3f} [" in text and f"| Cohen's κ | {kappa:.3f} [" in text


def test_since_unknown_and_empty_shadows(stack: Stack) -> None:
    name = _in_database(stack, lambda store: _shadow(store, SCORES))
    since = (T0 + timedelta(seconds=10)).isoformat()
    later = json.loads(_report(stack, name, "--since", since, "--format", "json").stdout)
    assert later["compared"] == 10 and {f["draft_id"] for f in later["flips"]["listed"]} == {"draft-11", "draft-15"}
    empty = _in_database(stack, lambda store: _shadow(store, []))
    report = json.loads(_report(stack, empty, "--format", "json").stdout)
    assert report["compared"] == 0 and report["kappa"]["value"] is None and "no shadow verdicts yet" in report["note"]
    markdown = _report(stack, empty).stdout
    assert "no shadow verdicts yet" in markdown and "nan" not in markdown.lower()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DRIFT_")}
    env["DRIFT_DATABASE_URL"] = stack.database.url
    unknown = subprocess.run([DRIFT, "shadow", "report", "no-such-shadow"], env=env, capture_output=True, text=True,
                             timeout=60, check=False)  # fmt: skip
    assert unknown.returncode == 2 and unknown.stdout == ""
    assert unknown.stderr.splitlines() == ["drift: no shadow 'no-such-shadow': `drift shadow list` shows the shadows"]


async def test_the_views_shadow_api(stack: Stack, store: Store) -> None:
    name, empty = await _shadow(store, SCORES, silent=1), await _shadow(store, [])
    must_flip, observed, kappa = await _independent(store, name)
    settings = stack.settings("view.")
    client = TestClient(TestServer(build_app(settings, ViewQueries(store), LiveVerdicts(settings))))
    await client.start_server()
    try:
        listed = {s["name"]: s for s in (await (await client.get("/api/shadows")).json())["shadows"]}
        row = listed[name]
        assert row["agreement"] == pytest.approx(observed) and row["kappa"] == pytest.approx(kappa)
        assert (row["compared"], row["stored"], row["flips"], row["skipped"]) == (20, 21, 7, 4)
        assert row["status"] == "running" and row["judge"] == "scripted:strict.yaml"
        assert listed[empty]["compared"] == 0 and listed[empty]["kappa"] is None
        report = await (await client.get(f"/api/shadows/{name}")).json()
        assert report["kappa"]["value"] == pytest.approx(kappa) and report["compared"] == 20
        assert {f["draft_id"] for f in report["flips"]["listed"]} == must_flip
        assert (await client.get("/api/shadows/no-such-shadow")).status == 404
        assert (await client.get(f"/api/shadows/{name}", params={"since": "yesterday"})).status == 400
        page = await (await client.get("/")).text()
        assert 'data-page="shadows"' in page and "/static/shadows.js" in page
        assert (await client.get("/static/shadows.js")).status == 200
    finally:
        await client.close()


async def test_the_shadows_page_in_a_browser(stack: Stack, store: Store, tmp_path: Path) -> None:
    """The Shadows tab lists the shadow; its page shows the report; a flip opens both judges' reasoning as text."""
    from tests.streams.view.cdp import Browser, chromium

    binary = chromium()
    if binary is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium): browser test skipped")
    name = await _shadow(store, SCORES)
    settings = stack.settings("view.")
    client = TestClient(TestServer(build_app(settings, ViewQueries(store), LiveVerdicts(settings))))
    await client.start_server()
    browser = Browser(binary, tmp_path / "profile")
    try:
        await browser.start()
        await browser.goto(f"http://127.0.0.1:{client.port}/#/shadows")
        assert await browser.wait_for(f"!!document.querySelector('#shadows-table tr[data-shadow=\"{name}\"]')")
        await browser.evaluate(f"document.querySelector('#shadows-table tr[data-shadow=\"{name}\"]').click()")
        detail = "document.getElementById('shadow-detail')"
        assert await browser.wait_for(f"{detail}.querySelectorAll('tr.flip').length === 7")
        assert await browser.evaluate("location.hash") == f"#/shadows/{name}"
        await browser.evaluate(f"{detail}.querySelector('tr.flip').click()")
        opened = f"{detail}.querySelector('.flip-detail')"
        assert await browser.wait_for(f"!!{opened} && {opened}.textContent.includes('<b>strict</b> says 6.6')")
        assert await browser.evaluate(f"{opened}.querySelector('b') === null")  # shown as text, not markup
        assert await browser.evaluate(f"{opened}.querySelector('a').getAttribute('href')") == "#/live/draft/draft-2"
        await browser.screenshot(tmp_path / "shadow.png")
    finally:
        await browser.close()
        await client.close()
