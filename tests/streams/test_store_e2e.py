"""The evaluation side of the store on the embedded PostgreSQL: run lifecycle, idempotent requests, history."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.errors import ConfigurationError, ServiceError
from engine.evaluation.messages import MessageSource
from engine.evaluation.run import EvaluationRun, RunStatus, ScoreRow, run_evaluation
from engine.judges.base import JudgeRequest, JudgeResult
from engine.judges.scripted import ScriptedJudge
from engine.models import Dimension, Event, EventKind, TokenUsage
from engine.propositions import load_set
from engine.scoring import DimensionScore
from engine.settings import BUNDLED_PROPOSITIONS
from streams.store import DuplicateRequest, PostgresEvaluationStore, PostgresMessageSource, Store
from streams.wire.payloads import Message
from tests.stack import Stack

pytestmark = pytest.mark.e2e

T0 = datetime(2031, 3, 4, 9, 0, tzinfo=UTC)
#: The evaluation dimensions that need no persona file (test agents have none).
DIMS = (Dimension.CONSISTENCY, Dimension.FLUENCY, Dimension.CONVERGENCE, Dimension.IDEAS_QUANTITY)
MessageFactory = Callable[..., Message]


@pytest.fixture
async def store(stack: Stack) -> AsyncIterator[Store]:
    async with await Store.connect(stack.database.url) as connected:
        yield connected


@pytest.fixture
def agent() -> Callable[[str], str]:
    suffix = uuid.uuid4().hex[:8]
    return lambda name: f"{name}-{suffix}"


@pytest.fixture
def message() -> MessageFactory:
    """A committed message ``minute`` minutes after T0."""

    def make(agent_id: str, text: str, minute: int, **fields: Any) -> Message:
        return Message(
            message_id=uuid.uuid4().hex, agent_id=agent_id, text=text, ts=T0 + timedelta(minutes=minute), **fields
        )

    return make


def finished_run(agent_id: str, *, score: float = 6.5, end: datetime = T0) -> EvaluationRun:
    dims = (DimensionScore(Dimension.FLUENCY, agent_id, score, (), "scripted"),)
    return EvaluationRun(
        agent_id=agent_id,
        dimensions=(Dimension.FLUENCY,),
        status=RunStatus.COMPLETED,
        window_start=end - timedelta(hours=1),
        window_end=end,
        sample_size=4,
        overall_score=score,
        token_usage=TokenUsage(input_tokens=120, output_tokens=30),
        dimension_scores=dims,
    )


async def run_row(store: Store, run_id: str) -> dict[str, Any]:
    row = await store.pool.fetchrow("SELECT * FROM evaluation_runs WHERE id = $1", uuid.UUID(run_id))
    assert row is not None
    return dict(row)


async def score_rows(store: Store, run_id: str) -> list[tuple[str, str, float, str, str | None]]:
    rows = await store.pool.fetch(
        "SELECT dimension, proposition_id, score, reasoning, context_snippet FROM evaluation_scores "
        "WHERE evaluation_run_id = $1 ORDER BY proposition_id",
        uuid.UUID(run_id),
    )
    return [tuple(r) for r in rows]


async def test_transitions_pending_running_completed(store: Store, agent: Callable[[str], str]) -> None:
    runs = PostgresEvaluationStore(store)
    dwight = agent("dwight")
    run_id = await runs.create_run(dwight, (Dimension.FLUENCY, Dimension.ADHERENCE), False)
    created = await run_row(store, run_id)
    assert (created["status"], created["sample_size"], created["dimensions"]) == (
        "pending",
        0,
        ["fluency", "adherence"],
    )
    assert created["completed_at"] is None and not created["is_baseline"]

    await runs.mark_running(run_id)
    assert (await run_row(store, run_id))["status"] == "running"

    rows = [
        ScoreRow("fluency", "fluency-varied", 7.0, "varied phrasing", "general: Bears."),
        ScoreRow("fluency", "fluency-natural", 5.0, "stiff", None),
    ]
    await runs.complete_run(run_id, finished_run(dwight), rows)
    done = await run_row(store, run_id)
    assert (done["status"], done["sample_size"], done["overall_score"]) == ("completed", 4, 6.5)
    assert (done["window_start"], done["window_end"]) == (T0 - timedelta(hours=1), T0)
    assert done["token_usage"]["input_tokens"] == 120 and done["completed_at"] is not None
    assert done["dimension_scores"] == {"fluency": 6.5}
    assert await score_rows(store, run_id) == sorted(tuple(r) for r in rows)


async def test_illegal_transitions_are_refused(store: Store, agent: Callable[[str], str]) -> None:
    runs = PostgresEvaluationStore(store)
    run_id = await runs.create_run(agent("jim"), (Dimension.FLUENCY,), True)
    with pytest.raises(ServiceError, match=r"cannot complete .* it is pending"):
        await runs.complete_run(run_id, finished_run("jim"), [])
    await runs.mark_running(run_id)
    with pytest.raises(ServiceError, match=r"cannot start .* it is running"):
        await runs.mark_running(run_id)
    await runs.fail_run(run_id, "JudgeTimeout: too slow")
    with pytest.raises(ServiceError, match=r"cannot fail .* it is failed"):
        await runs.fail_run(run_id, "again")
    with pytest.raises(ServiceError, match="does not exist"):
        await runs.mark_running(str(uuid.uuid4()))
    with pytest.raises(ConfigurationError, match="not an evaluation run id"):
        await runs.mark_running("run-7")
    failed = await run_row(store, run_id)
    assert (failed["status"], failed["error"], failed["is_baseline"]) == ("failed", "JudgeTimeout: too slow", True)
    assert await score_rows(store, run_id) == []


async def test_a_request_id_keeps_one_run(store: Store, agent: Callable[[str], str]) -> None:
    pam = agent("pam")
    request_id = f"req-{pam}"
    first = PostgresEvaluationStore(store, request_id=request_id)
    run_id = await first.create_run(pam, (Dimension.FLUENCY,), False)
    await first.mark_running(run_id)
    again = PostgresEvaluationStore(store, request_id=request_id)  # a redelivery while the run was in flight
    assert await again.create_run(pam, (Dimension.FLUENCY,), False) == run_id
    assert (await run_row(store, run_id))["status"] == "pending"
    await again.mark_running(run_id)
    await again.complete_run(run_id, finished_run(pam, score=8.0), [ScoreRow("fluency", "f-1", 8.0, "ok", None)])
    with pytest.raises(DuplicateRequest):
        await PostgresEvaluationStore(store, request_id=request_id).create_run(pam, (Dimension.FLUENCY,), False)

    count = await store.pool.fetchval("SELECT count(*) FROM evaluation_runs WHERE request_id = $1", request_id)
    assert count == 1
    stored = await first.find_run(request_id=request_id)
    assert stored is not None and stored == await first.find_run(run_id=run_id)
    assert (stored.id, stored.status, stored.dimension_scores, stored.sample_size) == (
        run_id, "completed", {"fluency": 8.0}, 4,
    )  # fmt: skip
    assert await first.find_run(request_id="no-such-request") is None


class GatedJudge:
    """A scripted judge that holds every call until ``opened`` is set."""

    def __init__(self) -> None:
        self.inner = ScriptedJudge.from_rules({"default": 6, "default_count": 2})
        self.opened = asyncio.Event()

    @property
    def name(self) -> str:
        return self.inner.name

    async def evaluate(self, request: JudgeRequest) -> JudgeResult:
        await self.opened.wait()
        return await self.inner.evaluate(request)


async def test_run_evaluation_through_the_postgres_store(store: Store, agent: Callable[[str], str]) -> None:
    oscar, kevin = agent("oscar"), agent("kevin")
    events = [
        Event(oscar, "Oscar", "Actually, the numbers do not add up.", channel="accounting", ts=T0),
        Event(kevin, "Kevin", "I like chili.", channel="accounting", ts=T0 + timedelta(minutes=1)),
        Event(oscar, "Oscar", "Let me explain compound interest.", channel="accounting", ts=T0 + timedelta(minutes=2)),
    ]
    judge, runs = GatedJudge(), PostgresEvaluationStore(store)
    task = asyncio.create_task(run_evaluation(judge, runs, oscar, events, DIMS, BUNDLED_PROPOSITIONS))
    while runs.run_id is None:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    assert (await run_row(store, runs.run_id))["status"] == "running"  # the judge is still held
    judge.opened.set()
    run = await task

    stored = await run_row(store, runs.run_id)
    assert (stored["status"], stored["sample_size"]) == ("completed", 2)
    assert (stored["window_start"], stored["window_end"]) == (T0, T0 + timedelta(minutes=2))
    assert stored["overall_score"] == pytest.approx(run.overall_score)
    expected = {(d.value, p.id) for d in DIMS for p in load_set(BUNDLED_PROPOSITIONS, d, oscar).propositions}
    rows = await score_rows(store, runs.run_id)
    assert {(r[0], r[1]) for r in rows} == expected and len(rows) == len(expected)
    assert all(r[3] for r in rows)  # every row has its reasoning
    assert stored["dimension_scores"] == {d.dimension.value: d.score for d in run.dimension_scores}


async def test_message_events_share_channels_within_the_window(
    store: Store, agent: Callable[[str], str], message: MessageFactory
) -> None:
    angela, dwight, toby = agent("angela"), agent("dwight"), agent("toby")
    r1, r2 = agent("r1"), agent("r2")  # run ids of this test alone: the database is shared by the session
    await store.write_messages(
        [
            message(angela, "Sprinkles is a perfect angel.", 0, channel="annex", run_id=r1),
            message(dwight, "Mose could guard the annex.", 1, channel="annex", run_id=r1),
            message(toby, "HR reminder.", 2, channel="hr", run_id=r1),
            message(dwight, "Just to Angela: meet at the farm.", 3, run_id=r1),  # no channel: not shared
            message(angela, "New topic", 4, channel="annex", kind="stimulus", source="facilitator", run_id=r1),
            message(angela, "Another run, same channel.", 5, channel="annex", run_id=r2),
            message(dwight, "Fire drill!", 6, channel="annex", run_id=r1),
        ]
    )
    everything = await store.message_events([angela], r1)
    assert [e.text for e in everything] == [
        "Sprinkles is a perfect angel.", "Mose could guard the annex.", "New topic", "Fire drill!",
    ]  # fmt: skip
    assert everything[2].kind is EventKind.STIMULUS and everything[2].source == "facilitator"
    assert everything[1] == Event(
        dwight, dwight, "Mose could guard the annex.", EventKind.ACTION, "annex", None, T0 + timedelta(minutes=1)
    )

    window = await store.message_events([angela], None, T0 + timedelta(minutes=1), T0 + timedelta(minutes=5))
    assert [e.text for e in window] == ["Mose could guard the annex.", "New topic", "Another run, same channel."]
    newest = await store.message_events([angela], None, limit=2)
    assert [e.text for e in newest] == ["Another run, same channel.", "Fire drill!"]
    every_agent = await store.message_events(None, r1)
    assert {e.agent_id for e in every_agent} == {angela, dwight, toby} and len(every_agent) == 6
    assert await store.message_events([agent("nobody")], None) == []


async def test_postgres_message_source(
    stack: Stack, store: Store, agent: Callable[[str], str], message: MessageFactory
) -> None:
    meredith = agent("meredith")
    await store.write_messages([message(meredith, f"message {i}", i, channel="bar", run_id="r9") for i in range(3)])
    source = PostgresMessageSource(stack.database.url)
    assert isinstance(source, MessageSource)
    unpooled = await source.events([meredith], "r9", T0 + timedelta(minutes=1))
    async with PostgresMessageSource(stack.database.url, limit=1) as pooled:
        latest = await pooled.events([meredith], None, None)
    assert [e.text for e in unpooled] == ["message 1", "message 2"]
    assert [e.text for e in latest] == ["message 2"]


async def test_due_agents_and_the_last_evaluated_message(
    store: Store, agent: Callable[[str], str], message: MessageFactory
) -> None:
    fresh, evaluated, failed, later = agent("fresh"), agent("evaluated"), agent("failed"), agent("later")
    mine = {fresh, evaluated, failed, later}
    await store.write_messages(
        [
            message(fresh, "one", 0), message(fresh, "two", 1),
            message(fresh, "heard", 2, kind="stimulus", source="boss"),  # stimuli are not activity
            message(evaluated, "old news", 0), message(failed, "tried", 0),
            message(later, "before", 0), message(later, "after", 30),
        ]
    )  # fmt: skip
    runs = PostgresEvaluationStore(store)
    for agent_id, end in ((evaluated, T0), (later, T0 + timedelta(minutes=10))):
        run_id = await runs.create_run(agent_id, (Dimension.FLUENCY,), False)
        await runs.mark_running(run_id)
        await runs.complete_run(run_id, finished_run(agent_id, end=end), [])
    run_id = await runs.create_run(failed, (Dimension.FLUENCY,), False)
    await runs.mark_running(run_id)
    await runs.fail_run(run_id, "JudgeTimeout: slow")

    due = {agent_id: count for agent_id, count in await runs.due_agents() if agent_id in mine}
    assert due == {fresh: 2, failed: 1, later: 1}
    assert await runs.last_evaluated(later) == T0 + timedelta(minutes=10)
    assert await runs.last_evaluated(failed) is None
    assert await runs.count_actions(fresh, T0 + timedelta(minutes=1), None) == 1
