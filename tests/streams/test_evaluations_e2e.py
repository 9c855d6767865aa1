"""End-to-end: evaluation requests on the embedded stack (real worker, Tansu, PostgreSQL), the schedule, the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from engine.evaluation.run import EvaluationRun, RunStatus
from engine.models import Dimension
from engine.propositions import load_set
from engine.settings import BUNDLED_PROPOSITIONS
from streams.client import GateClient
from streams.services.evaluations import schedule_evaluations
from streams.store import PostgresEvaluationStore, Store
from streams.wire.payloads import EvaluationRequest, Message
from tests.stack import DRIFT, Scenario, eventually, read_topic
from tests.terminal import error_lines

pytestmark = pytest.mark.e2e

RULES = """
default: 8
default_count: 2
rules:
  - message_contains: "slow"
    value: 5
    delay_s: 4
  - proposition: "fluency-[vn]*"        # varied language, natural chat
    value: 3
    reasoning: "the same opener every time"
  - proposition: "fluency-[rf]*"        # the inverted claims: repeated phrases, fixed template
    value: 1
  - proposition: "consistency-contradicts-self"
    value: 1
  - proposition: "consistency-sudden-new-personality"
    value: 1
"""
#: Without a persona file (test agents have none) a default request leaves adherence out.
NO_PERSONA_DIMS = {"consistency", "fluency", "convergence", "ideas_quantity"}


def stored_messages(agent_id: str, texts: Sequence[str], channel: str, run_id: str | None = None) -> list[Message]:
    start = datetime.now(UTC) - timedelta(minutes=len(texts))
    return [
        Message(message_id=uuid.uuid4().hex, agent_id=agent_id, text=text, channel=channel, run_id=run_id,
                ts=start + timedelta(seconds=i))
        for i, text in enumerate(texts)
    ]  # fmt: skip


def request(agent_id: str, request_id: str, **fields: Any) -> tuple[bytes, bytes]:
    return agent_id.encode(), orjson.dumps({"request_id": request_id, "agent_id": agent_id, **fields})


async def publish(scenario: Scenario, topic: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()
    try:
        for key, value in records:
            await producer.send_and_wait(scenario.settings.topic(topic), value, key=key)
    finally:
        await producer.stop()


async def fetch(scenario: Scenario, sql: str, *args: Any) -> list[dict[str, Any]]:
    async with await Store.connect(scenario.settings.database()) as store:
        return [dict(r) for r in await store.pool.fetch(sql, *args)]


def expected_rows(dimensions: set[str], agent_id: str) -> set[tuple[str, str]]:
    return {(d, p.id) for d in dimensions for p in load_set(BUNDLED_PROPOSITIONS, Dimension(d), agent_id).propositions}


async def check_stored_runs(scenario: Scenario, dwight: str, creed: str, error: str) -> None:
    """One completed run with a row per proposition for dwight; one failed run, with its reason, for creed."""
    runs = await fetch(scenario, "SELECT * FROM evaluation_runs WHERE agent_id = ANY($1)", [dwight, creed])
    assert {(r["request_id"], r["status"]) for r in runs} == {
        (f"ok-{dwight}", "completed"),
        (f"slow-{creed}", "failed"),
        (f"future-{dwight}", "failed"),
    }
    failed = next(r for r in runs if r["agent_id"] == creed)
    assert failed["error"] == error and failed["completed_at"] is not None
    rows = await fetch(
        scenario, "SELECT * FROM evaluation_scores WHERE evaluation_run_id = ANY($1)", [r["id"] for r in runs]
    )
    assert {(r["dimension"], r["proposition_id"]) for r in rows} == expected_rows(NO_PERSONA_DIMS, dwight)
    completed = next(r for r in runs if r["status"] == "completed")
    assert all(r["evaluation_run_id"] == completed["id"] for r in rows)
    reasons = {r["proposition_id"]: r["reasoning"] for r in rows}
    assert reasons["fluency-varied-language"] == reasons["fluency-natural-chat"] == "the same opener every time"


async def test_requests_complete_fail_and_redeliver(scenario: Scenario) -> None:
    dwight, creed = scenario.agent("dwight"), scenario.agent("creed")
    await scenario.create_topics()
    worker = scenario.worker(judge=scenario.rules(RULES))
    async with await Store.connect(scenario.settings.database()) as store:
        await store.write_messages(
            stored_messages(dwight, ["Assistant to the regional manager.", "Beets.", "Bears."], "sales")
            + stored_messages(creed, ["I am slow today.", "Very slow."], "quality")
        )
    worker.start()
    await publish(
        scenario,
        "evaluation-requests",
        [
            request(dwight, f"ok-{dwight}"),
            request(creed, f"slow-{creed}", dimensions=["fluency"], reason="manual"),
            request(dwight, f"ok-{dwight}"),  # redelivered
            (dwight.encode(), b"{not json"),
            request(dwight, "bad-dims", dimensions=["charisma"]),
            request(dwight, f"future-{dwight}", window_start="2040-01-01T00:00:00Z"),  # an empty window
        ],
    )
    summaries = await read_topic(scenario.settings, scenario.settings.topic("evaluations"), 4, timeout_s=20)
    ok, slow, empty = (
        [s for s in summaries if s["request_id"] == f"{r}-{a}"]
        for r, a in (("ok", dwight), ("slow", creed), ("future", dwight))
    )

    assert len(ok) == 2 and ok[0]["evaluation_run_id"] == ok[1]["evaluation_run_id"]
    assert (ok[0]["status"], ok[0]["sample_size"], set(ok[0]["dimensions"])) == ("completed", 3, NO_PERSONA_DIMS)
    assert ok[0]["dimensions"]["fluency"] < ok[0]["dimensions"]["consistency"]
    assert slow[0]["status"] == "failed" and "JudgeTimeout" in slow[0]["error"]
    assert (empty[0]["status"], empty[0]["error"]) == ("failed", f"no message of {dwight} in the evaluation window")

    await check_stored_runs(scenario, dwight, creed, slow[0]["error"])

    letters = await read_topic(scenario.settings, scenario.settings.topic("dlq"), 2, timeout_s=10)
    assert len(letters) == 2 and any("charisma" in letter["error"] for letter in letters)


async def test_threshold_requests_and_the_cli_over_stored_messages(scenario: Scenario) -> None:
    stanley = scenario.agent("stanley")
    run_id = f"run-{uuid.uuid4().hex[:6]}"
    rules = scenario.rules(RULES)
    await scenario.create_topics()
    worker = scenario.worker(judge=rules, env={"DRIFT_EVAL_THRESHOLD": "3"}).start()
    async with GateClient(settings=scenario.settings, timeout_s=20) as gate:
        for text in ("Did I stutter?", "Pretzel day is the best day.", "I do crosswords in meetings."):
            verdict = await gate.check(agent_id=stanley, text=text, run_id=run_id, channel="annex")
            assert verdict.decision == "commit"

    summaries = await read_topic(scenario.settings, scenario.settings.topic("evaluations"), 1, timeout_s=20)
    assert len(summaries) == 1 and summaries[0]["agent_id"] == stanley
    assert (summaries[0]["status"], summaries[0]["sample_size"]) == ("completed", 3)
    requests = await read_topic(scenario.settings, scenario.settings.topic("evaluation-requests"), 1, timeout_s=5)
    assert [(r["reason"], r["message_count"]) for r in requests] == [("threshold", 3)]
    runs = await fetch(scenario, "SELECT status, request_id FROM evaluation_runs WHERE agent_id = $1", stanley)
    assert runs == [{"status": "completed", "request_id": requests[0]["request_id"]}]

    done = subprocess.run(
        [DRIFT, "eval", "run", "--run-id", run_id, "--judge", rules, "--format", "json", "--no-interval",
         "--dimensions", "fluency,consistency"],
        env=worker.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert set(report["agents"]) == {stanley}
    assert set(report["agents"][stanley]) == {"fluency", "consistency"}
    assert report["agents"][stanley]["fluency"]["score"] < report["agents"][stanley]["consistency"]["score"]
    await _on_demand_requests(scenario, worker.env, stanley)


async def _on_demand_requests(scenario: Scenario, env: dict[str, str], covered: str) -> None:
    """``GateClient.evaluate`` and ``drift eval request``: a manual request through the running worker, its
    summary awaited (issue 29: before, only hand-written JSON could ask for one)."""
    oscar = scenario.agent("oscar")
    async with await Store.connect(scenario.settings.database()) as store:
        await store.write_messages(stored_messages(oscar, ["Actually, that is a common misconception.", "No."], "acc"))
    async with GateClient(settings=scenario.settings, timeout_s=30) as gate:
        summary = await gate.evaluate(agent_id=oscar, dimensions=["fluency", "fluency"])
    assert (summary.status, summary.sample_size, set(summary.dimensions)) == ("completed", 2, {"fluency"})
    runs = await fetch(scenario, "SELECT status, dimensions FROM evaluation_runs WHERE agent_id = $1", oscar)
    assert runs == [{"status": "completed", "dimensions": ["fluency"]}]  # stored: the view's chart shows it

    def drift(*args: str) -> subprocess.CompletedProcess[str]:
        command = [DRIFT, "eval", "request", *args, "--prefix", scenario.prefix]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)

    waited = drift(covered, "--dimensions", "fluency", "--wait", "--timeout", "30")
    assert waited.returncode == 1, waited.stderr  # everything was covered by the threshold run: nothing to evaluate
    assert waited.stdout.startswith(f"{covered}: evaluation failed (run ")
    assert f"error: no message of {covered} in the evaluation window" in waited.stdout
    sent = drift(oscar, "--json")
    assert sent.returncode == 0 and json.loads(sent.stdout)["reason"] == "manual"
    wrong = drift(oscar, "--dimensions", "charisma")
    assert wrong.returncode == 2
    assert "drift: unknown dimension(s) charisma; choose from adherence, consistency, fluency, " in wrong.stderr


async def record_runs(store: Store, *, covered: str, failed: str) -> None:
    """A completed run covering every message of ``covered``; a failed run (covering nothing) of ``failed``."""
    runs = PostgresEvaluationStore(store)
    for agent_id in (covered, failed):
        run_id = await runs.create_run(agent_id, (Dimension.FLUENCY,), False)
        await runs.mark_running(run_id)
        if agent_id == covered:
            run = EvaluationRun(agent_id, (Dimension.FLUENCY,), RunStatus.COMPLETED, window_end=datetime.now(UTC))
            await runs.complete_run(run_id, run, [])
        else:
            await runs.fail_run(run_id, "JudgeTimeout: no answer")


async def schedule(scenario: Scenario, store: Store, now: datetime) -> list[EvaluationRequest]:
    """Call the crontab body directly, publishing with a plain producer."""
    producer = AIOKafkaProducer(bootstrap_servers=scenario.settings.broker)
    await producer.start()

    async def send(topic: str, key: bytes, value: bytes) -> Any:
        return await producer.send(topic, value, key=key)

    try:
        return await schedule_evaluations(store, send, scenario.prefix, now)
    finally:
        await producer.stop()


async def test_the_schedule_requests_agents_with_new_actions(scenario: Scenario) -> None:
    phyllis, bob, toby = scenario.agent("phyllis"), scenario.agent("bob"), scenario.agent("toby")
    await scenario.create_topics()
    async with await Store.connect(scenario.settings.database()) as store:
        await store.write_messages(
            stored_messages(phyllis, ["Bob and I are going to Niagara."], "sales")
            + stored_messages(bob, ["Vance Refrigeration, how may I help?"], "sales")
            + stored_messages(toby, ["Reminder: HR training at noon."], "hr")
        )
        await record_runs(store, covered=bob, failed=toby)
        now = datetime(2032, 1, 2, 3, 0, tzinfo=UTC)
        first = await schedule(scenario, store, now)
        again = await schedule(scenario, store, now)

    mine = {phyllis, bob, toby}
    scheduled = {r.agent_id: r for r in first if r.agent_id in mine}
    assert set(scheduled) == {phyllis, toby}
    assert scheduled[phyllis].reason == "schedule" and scheduled[phyllis].message_count == 1
    assert {r.request_id for r in again} == {r.request_id for r in first}  # the same tick: the same request ids
    topic = scenario.settings.topic("evaluation-requests")
    published = await eventually(lambda: _published(scenario, topic, 2 * len(first)), timeout_s=10)
    assert {(r["agent_id"], r["request_id"]) for r in published if r["agent_id"] in mine} == {
        (a, r.request_id) for a, r in scheduled.items()
    }


async def _published(scenario: Scenario, topic: str, count: int) -> list[dict[str, Any]]:
    records = await read_topic(scenario.settings, topic, count, timeout_s=2)
    return records if len(records) >= count else []


def test_bad_cron_expression_is_a_configuration_error(scenario: Scenario) -> None:
    done = subprocess.run(
        [DRIFT, "worker", "--prefix", scenario.prefix],
        env={**scenario.worker().env, "DRIFT_EVAL_CRON": "every night"},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode != 0 and "DRIFT_EVAL_CRON" in done.stderr


async def test_a_worker_stopped_mid_evaluation_stops_cleanly_and_the_request_is_redelivered(
    scenario: Scenario,
) -> None:
    """The output producer closes after the evaluations stopped: before, the evaluation in flight sent its summary
    on the closed producer (ProducerClosed in the log). The evaluation cut short is not lost: the next worker
    evaluates the request again (or, if the first finished it just before stopping, re-sends its summary)."""
    dwight, creed = scenario.agent("dwight"), scenario.agent("creed")
    await scenario.create_topics()
    slow = scenario.rules('default: 8\nrules:\n  - {message_contains: "slow", value: 5, delay_s: 1}\n')
    worker = scenario.worker(judge=slow, env={"DRIFT_JUDGE_DEADLINE_S": "20"})
    async with await Store.connect(scenario.settings.database()) as store:
        await store.write_messages(stored_messages(dwight, ["Beets.", "Bears."], "sales"))
        await store.write_messages(stored_messages(creed, ["I am slow today.", "Very slow."], "quality"))
    worker.start()
    topic = scenario.settings.topic("evaluations")
    await publish(scenario, "evaluation-requests", [request(dwight, f"fast-{dwight}", dimensions=["fluency"])])
    await read_topic(scenario.settings, topic, 1, timeout_s=20)  # the output producer has sent
    await publish(scenario, "evaluation-requests", [request(creed, f"slow-{creed}", dimensions=["fluency"])])

    async def evaluating() -> bool:
        rows = await fetch(scenario, "SELECT status FROM evaluation_runs WHERE agent_id = $1", creed)
        return any(r["status"] == "running" for r in rows)

    assert await eventually(evaluating, 30, interval_s=0.05)
    await asyncio.to_thread(worker.stop)
    log = worker.log_path.read_text(errors="replace")
    assert [line for line in error_lines(log) if "ProducerClosed" in line or "evaluation" in line] == []
    assert "ProducerClosed" not in log
    scenario.worker(judge=slow, env={"DRIFT_JUDGE_DEADLINE_S": "20"}).start()
    summaries = await read_topic(scenario.settings, topic, 2, timeout_s=30)
    slow_summaries = [s for s in summaries if s["request_id"] == f"slow-{creed}"]
    # At least once: if the first worker finished the run before its offset was committed, the redelivered
    # request re-publishes the finished run's summary instead of evaluating again (the same run, never a second).
    assert slow_summaries and {s["status"] for s in slow_summaries} == {"completed"}
    assert len({s["evaluation_run_id"] for s in slow_summaries}) == 1
    runs = await fetch(scenario, "SELECT status FROM evaluation_runs WHERE agent_id = $1", creed)
    assert [r["status"] for r in runs] == ["completed"]
