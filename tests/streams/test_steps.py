"""Unit tests of the step processor: the history view, step decoding, directive records and one step pass."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent
from typing import Any

import orjson
import pytest

from engine.errors import PayloadError
from engine.interventions import StepResult
from engine.interventions.types import Directive
from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig, EventKind
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from engine.windows import Gap
from streams.runtime import history
from streams.runtime.history import Following, HistoryFeed, HistoryView, event_of
from streams.services.configs import ConfigCache
from streams.services.stats import GateStats
from streams.services.steps import (
    CATCH_UP_MAX_S,
    CustomInterventions,
    StepProcessor,
    _handler,
    decode_step,
    directive_records,
    load_custom,
)
from streams.wire.payloads import Message, Step, decode, encode

MakeMessage = Callable[..., Message]
MakeProcessor = Callable[..., StepProcessor]


@pytest.fixture
def message() -> MakeMessage:
    def make(agent_id: str, text: str, **fields: Any) -> Message:
        fields.setdefault("message_id", uuid.uuid4().hex)
        fields.setdefault("run_id", "r1")
        fields.setdefault("channel", "sales")
        return Message(agent_id=agent_id, text=text, **fields)

    return make


def texts(events: Any) -> list[str]:
    return [e.text for e in events]


def test_event_of_keeps_the_recipient_and_source_of_a_stimulus(message: MakeMessage) -> None:
    event = event_of(message("pam", "Meeting in five.", kind="stimulus", source="michael", agent_name="Pam"))
    assert (event.agent_id, event.agent_name, event.kind, event.source) == ("pam", "Pam", EventKind.STIMULUS, "michael")
    assert event_of(message("jim", "Hi")).agent_name == "jim"  # no display name: the id


def test_history_is_per_agent_per_run_and_ignores_redelivery(message: MakeMessage) -> None:
    view = HistoryView()
    first = message("jim", "one")
    assert view.apply(first)
    assert not view.apply(first)  # the same message id again (at-least-once delivery)
    view.apply(message("jim", "no run", run_id=None))
    view.apply(message("jim", "other run", run_id="r2"))
    view.apply(message("pam", "not jim's"))

    assert texts(view.history("jim", "r1")) == ["one", "no run"]
    assert texts(view.history("jim", "r2")) == ["no run", "other run"]
    assert view.history("nobody", "r1") == []


def test_history_keeps_only_the_last_events(message: MakeMessage) -> None:
    view = HistoryView(agent_kept=3)
    for i in range(5):
        view.apply(message("jim", f"m{i}"))
    assert texts(view.history("jim", "r1")) == ["m2", "m3", "m4"]


def test_channel_trajectory_merges_run_and_runless_events_in_arrival_order(message: MakeMessage) -> None:
    view = HistoryView(channel_kept=4)
    view.apply(message("jim", "a"))
    view.apply(message("pam", "b", run_id=None))
    view.apply(message("dwight", "elsewhere", channel="warehouse"))
    view.apply(message("kevin", "other run", run_id="r2"))
    view.apply(message("jim", "c"))
    assert texts(view.trajectory("r1", "sales", ["jim"])) == ["a", "b", "c"]
    for text in ("d", "e"):
        view.apply(message("pam", text))
    assert texts(view.trajectory("r1", "sales", [])) == ["b", "c", "d", "e"]  # the last channel_kept


def test_a_long_channel_keeps_its_first_events_and_drops_old_ones_in_steps(message: MakeMessage) -> None:
    view = HistoryView()
    for n in range(100):
        view.apply(message("jim", f"m{n}"))
    below = view.conversation("r1", "sales")
    assert texts(below.items) == [f"m{n}" for n in range(100)] and below.gap is None  # below the cap: all
    assert texts(view.trajectory("r1", "sales", [])) == texts(below.items)
    view.apply(message("pam", "m100"))  # one past the cap: the 20 oldest after the first 10 go at once
    held = view.conversation("r1", "sales")
    assert texts(held.items) == [f"m{n}" for n in (*range(10), *range(30, 101))] and held.gap == Gap(10, 20)
    assert texts(view.trajectory("r1", "sales", [])) == [f"m{n}" for n in range(30, 101)]  # contiguous
    for n in range(101, 120):
        view.apply(message("pam", f"m{n}"))
    assert view.conversation("r1", "sales").items[: len(held.items)] == held.items  # append-only to the step
    view.apply(message("pam", "run-less", run_id=None))
    merged = view.conversation("r1", "sales", exclude=None)
    assert texts(merged.items)[-1] == "run-less" and merged.gap == Gap(10, 20)


def test_direct_trajectory_is_the_acting_agents_events_without_a_channel(message: MakeMessage) -> None:
    view = HistoryView()
    view.apply(message("jim", "hey pam", channel=None))
    view.apply(message("pam", "in the channel"))
    view.apply(message("pam", "hey jim", channel=None))
    view.apply(message("dwight", "not acting", channel=None))
    assert texts(view.trajectory("r1", None, ["jim", "pam", "jim"])) == ["hey pam", "hey jim"]


def test_a_broadcast_stimulus_appears_once_in_the_channel(message: MakeMessage) -> None:
    view = HistoryView()
    for who in ("jim", "pam", "dwight"):
        view.apply(message(who, "Fire drill!", kind="stimulus", source="michael"))
    view.apply(message("jim", "Again?"))
    view.apply(message("pam", "Fire drill!", kind="stimulus", source="michael"))

    assert texts(view.trajectory("r1", "sales", [])) == ["Fire drill!", "Again?", "Fire drill!"]
    assert texts(view.history("pam", "r1")) == ["Fire drill!", "Fire drill!"]  # each recipient keeps its own


def test_the_least_recently_written_agents_and_channels_are_forgotten(message: MakeMessage) -> None:
    view = HistoryView(max_agents=2, max_channels=2)
    view.apply(message("jim", "1", channel="a"))
    view.apply(message("pam", "2", channel="b"))
    view.apply(message("jim", "3", channel="a"))  # jim and channel a are used again
    view.apply(message("dwight", "4", channel="c"))
    assert view.history("pam", "r1") == [] and view.trajectory("r1", "b", []) == []
    assert texts(view.history("jim", "r1")) == ["1", "3"]
    assert texts(view.trajectory("r1", "a", [])) == ["1", "3"]


def test_decode_step_accepts_a_record_keyed_by_its_run() -> None:
    value = orjson.dumps({"run_id": "r1", "step": 3, "agent_ids": ["jim"], "channel": "sales"})
    assert decode_step(b"r1", value) == Step(run_id="r1", step=3, agent_ids=["jim"], channel="sales")
    assert decode_step("r1", value).step == 3


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        (b"r1", b"{oops", "not valid JSON"),
        (b"r1", b'{"run_id": "r1", "agent_ids": []}', "step: Field required"),
        (b"r1", b'{"run_id": "r1", "step": -1}', "greater than or equal to 0"),
        (b"r2", b'{"run_id": "r1", "step": 0}', "must equal run_id"),
        (None, b'{"run_id": "r1", "step": 0}', "must equal run_id"),
        (b"r1", None, "empty record value"),
    ],
)
def test_decode_step_rejects_malformed_records(key: bytes | None, value: bytes | None, reason: str) -> None:
    with pytest.raises(PayloadError, match=reason):
        decode_step(key, value)


def test_directive_records_mark_the_missing_interventions_as_timed_out() -> None:
    result = StepResult(
        directives=(Directive("jim", "repetition", "Use new words.", "overlap 0.5"),),
        timed_out=(("pam", "variety"),),
        errors=(("dwight", "anti_convergence", "judge broke"),),
    )
    records = directive_records(result, 2.5)
    assert [(r.agent_id, r.kind, r.timed_out) for r in records] == [
        ("jim", "repetition", False),
        ("pam", "variety", True),
    ]
    assert records[0].evidence == "overlap 0.5"
    assert "variety" in records[1].text and "2.5s" in records[1].text


CUSTOM = """
interventions:
  - name: wrap-up
    targets: [jim, pam]
    preconditions:
      functional: {min_messages: 2}
    effect: "{{agent_name}}, start wrapping up."
  - name: dormant
    enabled: false
    targets: all
    preconditions:
      functional: {min_messages: 0}
    effect: "never"
"""


@pytest.fixture
def propositions(tmp_path: Path) -> Path:
    (tmp_path / "interventions").mkdir()
    (tmp_path / "interventions" / "custom.yaml").write_text(dedent(CUSTOM))
    return tmp_path


def test_load_custom_skips_a_missing_folder(tmp_path: Path, propositions: Path) -> None:
    assert load_custom(tmp_path / "nowhere") == ()
    assert [s.name for s in load_custom(propositions)] == ["wrap-up", "dormant"]


def test_custom_interventions_are_built_for_the_acting_targets_once(propositions: Path) -> None:
    custom = CustomInterventions(load_custom(propositions))
    built = custom.for_agents(["jim", "dwight"])
    assert [(i.name, i.targets) for i in built] == [("wrap-up", ("jim",))]
    assert custom.for_agents(["jim", "dwight"]) is built
    assert CustomInterventions([]).for_agents(["jim"]) == []


class FakeBarrier:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def caught_up(self, timeout_s: float) -> bool:
        self.waits.append(timeout_s)
        return True


@pytest.fixture
def make_processor(propositions: Path) -> MakeProcessor:
    def make(rules: dict[str, Any], configs: dict[str, AgentConfig], deadline_s: float = 10.0) -> StepProcessor:
        cache = ConfigCache()
        for agent_id, config in configs.items():
            cache.apply(agent_id, config)
        return StepProcessor(
            settings=Settings(step_deadline_s=deadline_s),
            judge=ScriptedJudge.from_rules(rules),
            configs=cache,
            library=PropositionLibrary(BUNDLED_PROPOSITIONS),
            view=HistoryView(),
            feed=FakeBarrier(),
            custom=CustomInterventions(load_custom(propositions)),
            stats=GateStats(),
        )

    return make


async def test_a_step_gets_repetition_and_custom_directives(
    make_processor: MakeProcessor, message: MakeMessage
) -> None:
    processor = make_processor({"default": 9}, {"jim": AgentConfig(repetition_suppression_enabled=True)})
    for text in ("Bears, beets, Battlestar Galactica.", "Bears, beets, Battlestar Galactica, again.", "Hi"):
        processor.view.apply(message("jim", text))

    record = await processor.directives(Step(run_id="r1", step=4, agent_ids=["jim", "kevin"]), time.monotonic())

    assert (record.run_id, record.step, record.channel) == ("r1", 4, None)
    assert [(d.agent_id, d.kind) for d in record.directives] == [("jim", "repetition"), ("jim", "wrap-up")]
    assert "bears beets battlestar galactica" in str(record.directives[0].evidence).lower()
    assert record.directives[1].text == "Jim Halpert, start wrapping up."  # the bundled persona's name
    assert record.latency_ms >= 0
    assert isinstance(processor.feed, FakeBarrier) and processor.feed.waits == [CATCH_UP_MAX_S]


async def test_an_empty_step_still_gets_a_record(make_processor: MakeProcessor) -> None:
    processor = make_processor({"default": 9}, {})
    record = await processor.directives(Step(run_id="r1", step=0, agent_ids=[]), time.monotonic())
    assert (record.step, record.directives) == (0, [])


async def test_variety_asks_the_judge_and_counts_the_call(make_processor: MakeProcessor, message: MakeMessage) -> None:
    rules = {"default": 9, "rules": [{"proposition": "variety:textual", "agent": "pam", "value": True}]}
    config = AgentConfig(variety_intervention_enabled=True, variety_message_threshold=1)
    processor = make_processor(rules, {"pam": config}, deadline_s=2.0)
    processor.view.apply(message("pam", "The same drawing again."))

    record = await processor.directives(Step(run_id="r1", step=1, agent_ids=["pam"]), time.monotonic())

    assert [(d.agent_id, d.kind, d.timed_out) for d in record.directives] == [("pam", "variety", False)]
    assert processor.stats is not None and processor.stats.judge_calls == 1
    assert isinstance(processor.feed, FakeBarrier) and processor.feed.waits == [0.5]  # a quarter of 2 s


async def test_a_slow_check_is_reported_as_timed_out_at_the_deadline(
    make_processor: MakeProcessor, message: MakeMessage
) -> None:
    rules = {"default": 9, "rules": [{"proposition": "variety:textual", "value": True, "delay_s": 5}]}
    config = AgentConfig(variety_intervention_enabled=True, variety_message_threshold=0)
    processor = make_processor(rules, {"pam": config, "jim": AgentConfig(repetition_suppression_enabled=True)}, 0.3)
    for text in ("so so so so", "so so so so"):
        processor.view.apply(message("jim", text))

    started = time.monotonic()
    record = await processor.directives(Step(run_id="r1", step=2, agent_ids=["jim", "pam"]), started)

    assert time.monotonic() - started < 1.0
    assert [(d.agent_id, d.kind, d.timed_out) for d in record.directives] == [
        ("jim", "repetition", False),
        ("pam", "variety", True),
        ("jim", "wrap-up", True),  # never reached before the deadline
        ("pam", "wrap-up", True),
    ]


async def test_an_invalid_agent_id_has_no_persona_but_still_gets_a_record(make_processor: MakeProcessor) -> None:
    processor = make_processor({"default": 9}, {})
    record = await processor.directives(Step(run_id="r1", step=0, agent_ids=["../etc"]), time.monotonic())
    assert record.directives == []


async def test_an_agent_named_twice_acts_once(make_processor: MakeProcessor, message: MakeMessage) -> None:
    processor = make_processor({"default": 9}, {"jim": AgentConfig(repetition_suppression_enabled=True)})
    for _ in range(2):
        processor.view.apply(message("jim", "bears beets battlestar galactica"))
    record = await processor.directives(Step(run_id="r1", step=0, agent_ids=["jim", "jim"]), time.monotonic())
    assert [(d.agent_id, d.kind) for d in record.directives] == [("jim", "repetition"), ("jim", "wrap-up")]


def test_the_feed_applies_only_valid_messages_keyed_by_their_agent(message: MakeMessage) -> None:
    feed = HistoryFeed(Settings(topic_prefix="x."), HistoryView())
    feed._apply(b"jim", encode(message("jim", "kept")))
    feed._apply(b"pam", encode(message("jim", "wrong key")))
    feed._apply(b"jim", b"{broken")
    assert feed.topic == "x.messages"
    assert texts(feed.view.history("jim", "r1")) == ["kept"]


def test_the_feed_skips_a_message_the_view_has_without_validating_it(
    message: MakeMessage, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = HistoryView()
    own = message("jim", "decided here")
    view.apply(own)  # the gate records its commits when it decides them
    validated: list[str] = []
    real = decode

    def counting(model: Any, raw: bytes | None) -> Any:
        validated.append(orjson.loads(raw or b"null")["text"])
        return real(model, raw)

    monkeypatch.setattr(history, "decode", counting)
    feed = HistoryFeed(Settings(topic_prefix="x."), view)
    feed._apply(b"jim", encode(own))  # read back from the topic: already in the view
    feed._apply(b"jim", encode(message("jim", "decided elsewhere")))
    feed._apply(b"pam", encode(own))  # the key is not its agent: validated and ignored, as before
    assert validated == ["decided elsewhere", "decided here"]
    assert texts(view.history("jim", "r1")) == ["decided here", "decided elsewhere"]
    assert view.knows("jim", own.message_id) and not view.knows("pam", own.message_id)


class FakeEvent:
    def __init__(self) -> None:
        self.acked = False

    def ack(self) -> None:
        self.acked = True


class FakeRuntime:
    def __init__(self) -> None:
        self.settings = Settings(topic_prefix="x.")
        self.sent: list[tuple[str, bytes, dict[str, Any]]] = []
        self.letters: list[str] = []

    async def send(self, topic: str, key: bytes, value: bytes) -> None:
        self.sent.append((topic, key, orjson.loads(value)))

    async def dead_letter(self, event: Any, reason: str) -> None:
        self.letters.append(reason)


class BrokenProcessor:
    async def directives(self, step: Step, received: float) -> Any:
        raise RuntimeError("the view exploded")


@pytest.mark.parametrize("broken", [False, True])
async def test_the_handler_always_sends_one_record_then_acks(make_processor: MakeProcessor, broken: bool) -> None:
    rt, event = FakeRuntime(), FakeEvent()
    runtime: Any = rt
    processor: Any = BrokenProcessor() if broken else make_processor({"default": 9}, {})
    await _handler("x.directives", processor, runtime.send, runtime.dead_letter)(
        (event, Step(run_id="r9", step=5, agent_ids=["jim"]), time.monotonic())
    )

    assert [(topic, key, value["step"], value["directives"]) for topic, key, value in rt.sent] == [
        ("x.directives", b"r9", 5, [])
    ]
    assert event.acked
    assert rt.letters == (["internal error while computing directives: the view exploded"] if broken else [])


async def test_a_long_channels_interventions_see_its_first_events_and_true_numbers(
    make_processor: MakeProcessor, message: MakeMessage
) -> None:
    processor = make_processor({"default": 9}, {"jim": AgentConfig(anti_convergence_enabled=True)})
    for n in range(150):  # held: the first 10 and the last 80 (60 forgotten in three steps)
        processor.view.apply(message(("jim", "pam")[n % 2], f"m{n}"))

    await processor.directives(Step(run_id="r1", step=1, agent_ids=["jim"], channel="sales"), time.monotonic())

    assert isinstance(processor.judge, ScriptedJudge) and processor.judge.log.calls
    for request in processor.judge.log.calls:  # the intervention window: first 10, last 100
        assert (request.first_part, request.omitted, len(request.trajectory)) == (10, 60, 90)
        assert texts(request.trajectory) == [f"m{n}" for n in (*range(10), *range(70, 150))]


async def test_the_feed_runs_from_its_services_start_until_it_stops() -> None:
    """Following is added to the app as a dependency: it starts with the app, not after the first rebalance."""
    feed = HistoryFeed(Settings(topic_prefix="x."), HistoryView())
    running, stopped = asyncio.Event(), asyncio.Event()

    async def run_forever() -> None:
        running.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    feed.run_forever = run_forever  # type: ignore[method-assign]
    service = Following(feed)
    await service.start()
    async with asyncio.timeout(5):
        await running.wait()
    await service.stop()
    assert stopped.is_set()
