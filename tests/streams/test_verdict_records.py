"""Verdicts are a function of (draft_id, attempt): a redelivered attempt is re-emitted from the record of its
first verdict, never judged again (issue 10, defect 1)."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import orjson

from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from streams.runtime.tables import DirectTable
from streams.services.configs import ConfigCache
from streams.services.gate import GateDeps, process_draft, remember_commit
from streams.wire.payloads import Draft
from tests.streams.judging import uniform_judge


class Recorder:
    """A sender that keeps every record in order and resolves its future at once."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, bytes | None]] = []

    async def __call__(self, topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> Any:
        self.sent.append((topic, value))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    def values(self, topic: str) -> list[dict[str, Any]]:
        return [orjson.loads(v) for t, v in self.sent if t == topic and v is not None]


def make_deps(score: int, config: AgentConfig, send: Recorder) -> GateDeps:
    configs = ConfigCache(default=config)
    judge = uniform_judge(score)
    return GateDeps(Settings(), judge, PropositionLibrary(BUNDLED_PROPOSITIONS), configs, send, {}, {})


SUITABILITY = AgentConfig(gate_suitability_enabled=True, gate_similarity_enabled=True, max_correction_attempts=2)
DRAFT = Draft(draft_id="d-7", attempt=1, agent_id="michael", text="Let us plan the paper drive for Friday")


async def test_a_redelivered_attempt_gets_its_first_verdict_even_if_a_new_judgement_would_differ() -> None:
    send = Recorder()
    deps = make_deps(9, SUITABILITY, send)
    await process_draft(deps, DRAFT, time.monotonic())
    deps.judge = uniform_judge(1)  # the model now answers differently
    await process_draft(deps, DRAFT, time.monotonic())  # the same attempt, redelivered

    first, second = send.values(deps.topics.verdicts)
    assert first["decision"] == "commit" and second == first
    assert send.values(deps.topics.correction_logs)[1] == send.values(deps.topics.correction_logs)[0]
    messages = send.values(deps.topics.messages)
    assert len(messages) == 2 and messages[0] == messages[1]  # the same commit again (the sink keeps one row)
    assert [h["id"] for h in deps.recent["michael"]] == ["d-7"]  # the history holds it once
    assert deps.judge.log.count() == 0  # never judged a second time


async def test_a_retry_verdict_is_re_emitted_and_the_next_attempt_is_judged() -> None:
    send = Recorder()
    deps = make_deps(2, SUITABILITY, send)
    await process_draft(deps, DRAFT, time.monotonic())
    deps.judge = uniform_judge(9)
    await process_draft(deps, DRAFT, time.monotonic())
    await process_draft(deps, DRAFT.model_copy(update={"attempt": 2, "text": "Friday: paper drive, bring boxes"}),
                        time.monotonic())  # fmt: skip
    decisions = [(v["attempt"], v["decision"], v["outcome"]) for v in send.values(deps.topics.verdicts)]
    assert decisions == [(1, "retry", "corrected"), (1, "retry", "corrected"), (2, "commit", "passed_after_retry")]


async def test_when_the_first_verdict_is_unknown_the_draft_is_not_compared_with_its_own_commit() -> None:
    send = Recorder()
    deps = make_deps(9, AgentConfig(gate_similarity_enabled=True), send)
    # its commit reached the history (changelog) but the verdict record did not survive
    remember_commit(deps.recent, "michael", DRAFT.draft_id, DRAFT.text, None)
    await process_draft(deps, DRAFT, time.monotonic())
    (verdict,) = send.values(deps.topics.verdicts)
    assert verdict["decision"] == "commit" and verdict["similarity"]["score"] == 0.0


async def test_the_verdict_record_is_on_the_broker_before_the_verdict_is_sent() -> None:
    send = Recorder()
    deps = make_deps(9, SUITABILITY, send)
    table = SimpleNamespace(
        data={},
        changelog_topic=SimpleNamespace(get_topic_name=lambda: "verdict-records-log"),
        _store=None,
        app=SimpleNamespace(conf=SimpleNamespace(store="memory://")),  # DirectTable takes in-memory stores only
        apply_changelog_batch=lambda batch: None,  # how Faust restores it (not exercised here)
    )
    deps.verdicts = DirectTable(table, send)
    await process_draft(deps, DRAFT, time.monotonic(), partition=0)
    topics = [topic for topic, _ in send.sent]
    assert topics.index("verdict-records-log") < topics.index(deps.topics.verdicts)
    assert set(table.data["d-7"]) == {"1"}


def test_the_wire_enums_have_one_source_of_truth() -> None:
    from engine.models import Decision, Outcome
    from streams.wire.payloads import CorrectionLog, Verdict

    for model in (Verdict, CorrectionLog):
        assert model.model_fields["decision"].annotation is Decision
        assert model.model_fields["outcome"].annotation is Outcome
