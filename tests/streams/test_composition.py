"""The worker's composition root (issue 11 point 2): services take narrow ports, build_app wires each object once,
complete, in dependency order, and refuses settings it cannot run on. No broker or database is started here."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from engine.errors import ConfigurationError
from engine.judges.budget import EVAL_LANE, GATE_LANE, BudgetedJudge
from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from streams.runtime.history import HistoryFeed, HistoryView
from streams.services.configs import ConfigCache
from streams.services.context import DeadLetters
from streams.services.evaluations import EvaluationService
from streams.services.gate import GateDeps
from streams.services.stats import GateStats, TimedJudge
from streams.services.steps import CustomInterventions, StepProcessor, StepService
from streams.wire.payloads import EvaluationRequest, Step, encode
from streams.worker.app import build_app
from streams.worker.lanes import StateLane

SETTINGS = Settings(topic_prefix="t.")


class Sent:
    """A ``Send`` port that records and settles at once."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes, Any]] = []

    async def __call__(self, topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> Any:
        self.records.append((topic, key, None if value is None else orjson.loads(value)))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


class Letters:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    async def __call__(self, record: Any, reason: str) -> None:
        self.reasons.append(reason)


class Event:
    def __init__(self) -> None:
        self.acked = False

    def ack(self) -> None:
        self.acked = True


async def test_dead_letters_go_to_the_dlq_through_the_send_port_and_are_counted() -> None:
    send, stats = Sent(), GateStats()
    letters = DeadLetters(send, "t.dlq", stats)
    record = SimpleNamespace(topic="t.drafts", partition=1, offset=7, key=b"jim", value=b"{bad")
    await letters.record(record, "not json")
    await letters.batch("t.drafts", 2, 10, 12, "undecodable batch")
    assert [topic for topic, _, _ in send.records] == ["t.dlq", "t.dlq"]
    assert send.records[0][2]["error"] == "not json" and stats.dead_letters == 4


async def test_the_evaluation_service_runs_on_its_ports_and_waits_for_the_store() -> None:
    opened, send, letters = asyncio.Event(), Sent(), Letters()

    async def store() -> Any:  # the awaitable store: not open until the test says so
        await opened.wait()
        raise RuntimeError("no such store")  # not the database away (that waits: test_evaluation_service.py)

    service = EvaluationService(SETTINGS, ScriptedJudge.from_rules({"default": 5}), store, send, letters)
    event = Event()
    request = EvaluationRequest(request_id="r1", agent_id="jim", reason="manual")
    work = asyncio.ensure_future(service.work((event, request)))
    await asyncio.sleep(0)
    assert not work.done() and not event.acked  # built before the store, it waits for it
    opened.set()
    await asyncio.wait_for(work, 5)
    assert event.acked and letters.reasons == ["evaluation request not processed: no such store"]
    assert send.records == []


async def test_the_step_service_sends_directives_on_its_send_port() -> None:
    send, letters = Sent(), Letters()
    view = HistoryView()
    feed = HistoryFeed(SETTINGS, view)  # never started: the step waits for it at most its catch-up share
    configs = ConfigCache()
    judge, library = ScriptedJudge.from_rules({"default": 9}), PropositionLibrary(BUNDLED_PROPOSITIONS)
    processor = StepProcessor(SETTINGS.with_(step_deadline_s=0.2), judge, configs, library, view, feed,
                              CustomInterventions(()))  # fmt: skip
    service = StepService(SETTINGS, processor, feed, send, letters)
    event = Event()
    await service.dispatcher.submit("r1", (event, Step(run_id="r1", step=1, agent_ids=["jim"]), time.monotonic()))
    await service.dispatcher.wait_idle()
    assert [(topic, key, value["step"]) for topic, key, value in send.records] == [("t.directives", b"r1", 1)]
    assert event.acked and letters.reasons == []


class Counts(dict[str, int]):
    """The windowed counts table as the state lane reads it (``table[key].current()``)."""

    def __getitem__(self, key: str) -> Any:
        return _Window(self.get(key, 0))


class _Window(int):
    """A window's value: ``current()`` reads it, ``+=`` gives the plain sum back to the table."""

    def current(self) -> int:
        return int(self)


async def test_the_state_lane_counts_acks_and_requests_an_evaluation_on_its_ports() -> None:
    send, letters = Sent(), Letters()
    bound: list[Any] = []
    acked: list[Any] = []
    gate = GateDeps(SETTINGS, ScriptedJudge.from_rules({"default": 9}), PropositionLibrary(BUNDLED_PROPOSITIONS),
                    ConfigCache(default=AgentConfig()), send, {}, {})  # fmt: skip
    consumer = SimpleNamespace(ack=acked.append, release=lambda message: None)
    lane = StateLane(gate, Counts(), consumer, letters, send, bind=bound.append, requests="t.evaluation-requests",
                     threshold=2)  # fmt: skip
    records = [
        SimpleNamespace(key=b"jim", value=encode_message(n), partition=0, offset=n, topic="t.messages", headers=[])
        for n in range(3)
    ]
    await lane(records)
    await lane.flush_counts()
    assert acked == records and bound == [records[-1]] and letters.reasons == []
    assert [(topic, value["agent_id"], value["reason"]) for topic, _, value in send.records] == [
        ("t.evaluation-requests", "jim", "threshold")
    ]
    assert gate.recent["jim"][-1]["id"] == "m2"  # an external action entered the recent table


def encode_message(n: int) -> bytes:
    from streams.wire.payloads import Message

    return encode(Message(message_id=f"m{n}", agent_id="jim", text=f"external action {n}"))


def test_build_app_wires_each_service_with_the_objects_built_before_it(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, topic_prefix="w.", judge_concurrency=8, eval_judge_share=0.25)
    judge = ScriptedJudge.from_rules({"default": 9})
    app, worker = build_app(settings, judge, partitions=1)
    send = worker.output.send
    assert app.settings is settings and app.closing is worker.output and app.skipped == worker.letters.batch
    assert worker.gate.send == send and worker.steps.processor.view is worker.gate.view is worker.gate.feed.view  # type: ignore[union-attr]
    assert worker.steps.feed is worker.gate.feed and worker.evaluations.store is worker.store
    assert worker.gate.configs is worker.steps.processor.configs is worker.configs and not worker.configs.loaded
    assert worker.gate_lane.gate is worker.state_lane.gate is worker.gate
    assert app.fast_lanes == {"w.drafts": worker.gate_lane, "w.messages": worker.state_lane}
    online, offline = worker.gate.judge, worker.evaluations.judge
    assert isinstance(online, BudgetedJudge) and isinstance(offline, BudgetedJudge)
    assert (
        online is worker.steps.processor.judge and online.deadline_s == offline.deadline_s == settings.judge_deadline_s
    )
    assert isinstance(online.inner, TimedJudge) and online.inner is offline.inner  # one timing, one budget
    assert (worker.budget.lanes[GATE_LANE].reserved, worker.budget.lanes[EVAL_LANE].cap) == (6, 2)
    tables: Any = (worker.gate.recent, worker.gate.pending, worker.gate.verdicts)
    assert [t.topic.rsplit("-", 3)[-3:-1] for t in tables] == [["recent", "messages"], ["pending", "attempts"],
                                                             ["verdict", "records"]]  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"judge_concurrency": 1}, "DRIFT_JUDGE_CONCURRENCY: must be greater than or equal to 2"),
        ({"judge_deadline_s": 0.0}, "DRIFT_JUDGE_DEADLINE_S: must be greater than 0"),
        ({"eval_threshold": 0}, "DRIFT_EVAL_THRESHOLD: must be greater than or equal to 1"),
        ({"topic_prefix": ""}, "DRIFT_TOPIC_PREFIX: must have at least 1 character"),
        ({"eval_cron": "every night"}, "DRIFT_EVAL_CRON: must be a crontab expression"),
    ],
)
def test_settings_a_worker_cannot_run_on_are_refused_when_they_are_built(
    tmp_path: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Settings(data_dir=tmp_path, **changes)


def test_build_app_takes_settings_never_a_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="one Settings object"):
        build_app(None, ScriptedJudge.from_rules({"default": 9}))  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        build_app(ScriptedJudge.from_rules({"default": 9}))  # type: ignore[call-arg,arg-type]


async def test_a_stopping_worker_closes_its_output_after_the_services_that_send_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker stopping with an evaluation in flight: its dispatchers (gate, evaluations, steps) stop, the
    evaluation with them, before the output producer closes, so nothing sends on a closed producer (what put
    ProducerClosed errors in the log of a worker stopped while it evaluated)."""
    from streams.runtime.dispatch import KeyedDispatcher
    from streams.runtime.output import Output
    from streams.services.context import WorkerStore

    order: list[str] = []
    started, names = asyncio.Event(), dict[int, str]()
    close_dispatcher = KeyedDispatcher.close

    async def store(self: WorkerStore) -> Any:
        started.set()
        try:
            await asyncio.Event().wait()  # the database does not answer: the evaluation stays in flight
        finally:
            order.append("evaluation ended")

    async def stop_dispatcher(self: KeyedDispatcher[Any]) -> None:
        await close_dispatcher(self)
        order.append(f"{names[id(self)]} stopped")

    async def close_output(self: Output) -> None:
        order.append("output closed")

    monkeypatch.setattr(WorkerStore, "__call__", store)
    monkeypatch.setattr(KeyedDispatcher, "close", stop_dispatcher)
    monkeypatch.setattr(Output, "close", close_output)
    app, worker = build_app(Settings(data_dir=tmp_path, topic_prefix="w."), ScriptedJudge.from_rules({"default": 9}))
    dispatchers = {"gate": worker.gate_lane.dispatcher, "evaluations": worker.evaluations.dispatcher,
                   "steps": worker.steps.dispatcher}  # fmt: skip
    names.update({id(dispatcher): name for name, dispatcher in dispatchers.items()})
    request = EvaluationRequest(request_id="r1", agent_id="jim", reason="manual")
    await worker.evaluations.dispatcher.submit("jim", (Event(), request))
    await asyncio.wait_for(started.wait(), 5)
    await asyncio.wait_for(app.stop(), 10)
    assert sorted(order[:-1]) == ["evaluation ended", "evaluations stopped", "gate stopped", "steps stopped"]
    assert order[-1] == "output closed" and order.index("evaluation ended") < order.index("evaluations stopped")
