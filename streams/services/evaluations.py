"""Offline evaluation inside the service: requests from ``evaluation-requests``, runs in Postgres, summaries.

Where requests come from:

- the gate, when an agent's windowed message count reaches ``DRIFT_EVAL_THRESHOLD`` (reason ``threshold``);
- the crontab job on the leader (``DRIFT_EVAL_CRON``, nightly by default): one request per agent with
  actions newer than its last run (reason ``schedule``; :func:`schedule_evaluations`);
- anyone else (reason ``manual``), e.g. an operator or a CI job.

A request is evaluated over the agent's stored history: the request's ``window_start``/``window_end``, else
everything after the last message its last completed run covered; at most the :data:`HISTORY_LIMIT` newest
events of the agent and its channels. The run goes through ``pending → running → completed | failed`` in
``evaluation_runs`` and a summary is published on ``evaluations``. Delivery is at-least-once: a request is
acked once its run is stored, and a redelivered request id reuses its run (a finished one is only
summarised again). Evaluations run as tasks, at most :data:`EVAL_CONCURRENCY` at once, so a long one never
holds up requests of other agents for longer than that cap implies.

Judge calls: the worker hands :class:`EvaluationService` the evaluations' lane of its one judge budget
(:class:`engine.judges.budget.JudgeBudget`: ``DRIFT_EVAL_JUDGE_SHARE`` of ``DRIFT_JUDGE_CONCURRENCY``, each
call under ``DRIFT_JUDGE_DEADLINE_S`` once it holds its slot). Nothing here adds a cap or a deadline per call;
the whole run has ``DRIFT_EVAL_DEADLINE_S``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from engine.errors import ConfigurationError, PayloadError, ServiceError
from engine.evaluation.run import run_evaluation
from engine.judges.base import Judge
from engine.models import EVALUATION_DIMENSIONS, Dimension, Event, EventKind
from engine.personas import load_persona
from engine.retry import RetryCounter, RetryPolicy, no_count, retrying
from engine.settings import Settings
from streams.runtime.dispatch import KeyedDispatcher
from streams.runtime.faust_app import DriftApp, decoded_events, raw_topic
from streams.runtime.supervise import contained
from streams.services.context import STORE_BACKOFF, DeadLetter, StoreAccess
from streams.store import DuplicateRequest, PostgresEvaluationStore, Store, StoredRun
from streams.store.errors import classify
from streams.wire.payloads import MAX_ID_CHARS, EvaluationRequest, EvaluationSummary, decode, encode, utcnow
from streams.wire.topics import Topics

log = logging.getLogger(__name__)

#: Newest events (the agent's and its channels') one evaluation reads.
HISTORY_LIMIT = 200
#: Evaluation requests in flight per worker (running, or queued behind a request of the same agent).
EVAL_CONCURRENCY = 2
#: How long a threshold request waits for the message sink to store the messages that triggered it.
SINK_WAIT_S = 3.0
_TICK = timedelta(microseconds=1)
FINISHED = frozenset({"completed", "failed"})

#: Queues a record; may return an awaitable that resolves once the broker has it (then it is awaited too).
Sender = Callable[[str, bytes, bytes], Awaitable[object]]


async def deliver(send: Sender, topic: str, key: bytes, value: bytes) -> None:
    """Send a record and wait until the broker acknowledged it, whatever style of sender ``send`` is."""
    pending = await send(topic, key, value)
    if inspect.isawaitable(pending):
        await pending


def decode_request(key: Any, value: bytes | None) -> EvaluationRequest:
    """A valid request whose key is its agent id and whose dimensions exist, else :class:`PayloadError`."""
    request = decode(EvaluationRequest, value)
    record_key = key.decode("utf-8", "replace") if isinstance(key, bytes) else key
    if record_key != request.agent_id:
        raise PayloadError(f"record key {record_key!r} must equal agent_id {request.agent_id!r}")
    request_dimensions(request)
    return request


def request_dimensions(request: EvaluationRequest) -> tuple[Dimension, ...]:
    if not request.dimensions:
        return EVALUATION_DIMENSIONS
    known = {d.value: d for d in Dimension}
    unknown = [name for name in request.dimensions if name not in known]
    if unknown:
        raise PayloadError(f"unknown dimension(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    return tuple(dict.fromkeys(known[name] for name in request.dimensions))


def _dimensions_for(request: EvaluationRequest, settings: Settings) -> tuple[Dimension, ...]:
    """The requested dimensions; by default the evaluation ones, without adherence for an agent with no persona."""
    if request.dimensions:
        return request_dimensions(request)
    try:
        persona = load_persona(settings.propositions_dir, request.agent_id)
    except ConfigurationError:
        return EVALUATION_DIMENSIONS  # the run fails with this reason
    return tuple(d for d in EVALUATION_DIMENSIONS if persona is not None or d is not Dimension.ADHERENCE)


def summary_of(run: StoredRun) -> EvaluationSummary:
    """The ``evaluations`` record of a finished run."""
    return EvaluationSummary.model_validate(
        {
            "evaluation_run_id": run.id,
            "request_id": run.request_id,
            "agent_id": run.agent_id,
            "status": run.status,
            "dimensions": run.dimension_scores,
            "overall_score": run.overall_score,
            "sample_size": run.sample_size,
            "error": run.error,
        }
    )


async def _window(runs: PostgresEvaluationStore, request: EvaluationRequest) -> tuple[datetime | None, datetime | None]:
    if request.window_start is not None:
        return request.window_start, request.window_end
    covered = await runs.last_evaluated(request.agent_id)
    return (None if covered is None else covered + _TICK), request.window_end


async def _await_sink(runs: PostgresEvaluationStore, request: EvaluationRequest, since: datetime | None) -> None:
    """Give the message sink a moment to store the messages that triggered a threshold request."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + SINK_WAIT_S
    while loop.time() < deadline:
        if await runs.count_actions(request.agent_id, since, request.window_end) >= request.message_count:
            return
        await asyncio.sleep(0.1)


def _own_actions(events: Sequence[Event], agent_id: str) -> int:
    return sum(1 for e in events if e.kind is EventKind.ACTION and e.agent_id == agent_id)


async def evaluate_request(store: Store, judge: Judge, settings: Settings, request: EvaluationRequest) -> StoredRun:
    """Evaluate one request and return its stored, finished run (see the module docstring)."""
    runs = PostgresEvaluationStore(store, request_id=request.request_id)
    finished = await runs.find_run(request_id=request.request_id)
    if finished is not None and finished.status in FINISHED:
        return finished
    dims = _dimensions_for(request, settings)
    since, until = await _window(runs, request)
    if request.reason == "threshold":
        await _await_sink(runs, request, since)
    events = await store.message_events([request.agent_id], None, since, until, HISTORY_LIMIT)
    try:
        if _own_actions(events, request.agent_id) == 0:
            await _fail_empty(runs, request, dims)
        else:
            await run_evaluation(
                judge,
                runs,
                request.agent_id,
                events,
                dims,
                settings.propositions_dir,
                deadline_s=settings.eval_deadline_s,
            )
    except DuplicateRequest:
        log.info("evaluation request %s finished elsewhere", request.request_id)
    except Exception:
        if runs.run_id is None:
            raise
        log.exception("evaluation run %s failed", runs.run_id)  # run_evaluation stored the failure
    stored = await runs.find_run(request_id=request.request_id)
    if stored is None or stored.status not in FINISHED:
        raise ServiceError(f"the run of evaluation request {request.request_id!r} did not finish")
    return stored


async def _fail_empty(runs: PostgresEvaluationStore, request: EvaluationRequest, dims: Sequence[Dimension]) -> None:
    run_id = await runs.create_run(request.agent_id, dims, False)
    await runs.mark_running(run_id)
    await runs.fail_run(run_id, f"no message of {request.agent_id} in the evaluation window")


def _schedule_request_id(agent_id: str, tick: str) -> str:
    request_id = f"schedule:{tick}:{agent_id}"
    if len(request_id) <= MAX_ID_CHARS:
        return request_id
    return f"schedule:{tick}:{hashlib.sha256(agent_id.encode()).hexdigest()[:40]}"


async def schedule_evaluations(
    store: Store, send: Sender, topic_prefix: str, now: datetime | None = None
) -> list[EvaluationRequest]:
    """The crontab body: request an evaluation of every agent with actions newer than its last run.

    Request ids are derived from the tick (to the minute), so a repeated tick does not evaluate twice.
    """
    now = now or utcnow()
    tick = now.strftime("%Y%m%dT%H%M")
    due = await PostgresEvaluationStore(store).due_agents()
    requests = [
        EvaluationRequest(
            request_id=_schedule_request_id(agent_id, tick),
            agent_id=agent_id,
            reason="schedule",
            message_count=fresh,
            requested_at=now,
        )
        for agent_id, fresh in due
    ]
    topic = Topics(topic_prefix).evaluation_requests
    for request in requests:
        await deliver(send, topic, request.agent_id.encode(), encode(request))
    return requests


def _database_away(exc: BaseException) -> bool:
    """A database error that says nothing about the request (connection lost, server restarting…)."""
    return classify(exc) == "transient" and not isinstance(exc, ServiceError)


#: a request waits while the database is away (never dead-lettered for that)
DATABASE_AWAY = RetryPolicy("evaluation_database", _database_away, STORE_BACKOFF, level=logging.WARNING)


class EvaluationService:
    """The ``evaluation-requests`` agent and the crontab job that schedules evaluations.

    ``judge`` is the evaluations' judge (the worker passes its budget lane), ``store`` awaits the open store,
    ``send`` queues a record, ``dead_letter`` takes a request that could not be processed."""

    def __init__(self, settings: Settings, judge: Judge, store: StoreAccess, send: Sender, dead_letter: DeadLetter,
                 on_retry: RetryCounter = no_count) -> None:  # fmt: skip
        self.on_retry = on_retry
        self.settings = settings
        self.judge = judge
        self.store = store
        self.send = send
        self.dead_letter = dead_letter
        self.topics = Topics(settings.topic_prefix)
        # One agent's requests run in order (a redelivered request never races its first delivery).
        self.dispatcher: KeyedDispatcher[tuple[Any, EvaluationRequest]] = KeyedDispatcher(
            self.work, max_in_flight=EVAL_CONCURRENCY
        )

    async def work(self, item: tuple[Any, EvaluationRequest]) -> None:
        """Evaluate one request, publish its summary, ack it; a failure is dead-lettered (and acked). While
        the database is away the request waits and is tried again (never dead-lettered for that): a finished
        run is found by its request id, so a retry does not evaluate twice."""
        event, request = item

        async def attempt() -> StoredRun:
            return await evaluate_request(await self.store(), self.judge, self.settings, request)

        try:
            stored = await retrying(attempt, DATABASE_AWAY, self.on_retry)
            summary = encode(summary_of(stored))
            await deliver(self.send, self.topics.evaluations, request.agent_id.encode(), summary)
        except Exception as exc:
            log.exception("evaluation request %s could not be processed", request.request_id)
            await self.dead_letter(event, f"evaluation request not processed: {exc}")
        finally:
            event.ack()

    async def schedule(self) -> None:
        requests = await schedule_evaluations(await self.store(), self.send, self.settings.topic_prefix)
        log.info("scheduled %d evaluation(s)", len(requests))

    def install(self, app: DriftApp) -> None:
        """Subscribe ``app`` to ``evaluation-requests`` and add the crontab job (on the leader)."""
        app.close_before_output(self.dispatcher.close)

        @app.agent(raw_topic(app, self.topics.evaluation_requests), name="evaluations")
        async def evaluations(stream: Any) -> None:
            async for event, request, _ in decoded_events(self.dead_letter, stream, decode_request):
                await self.dispatcher.submit(request.agent_id, (event, request))

        @app.crontab(self.settings.eval_cron, on_leader=True)
        @contained("scheduled evaluations")
        async def scheduled_evaluations() -> None:
            await self.schedule()
