"""The gate's streaming side of the TinyTroupe fidelity points: silence (skip) and the minimum of actions."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson

from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from streams.services.configs import ConfigCache
from streams.services.gate import GateDeps, committed_actions, process_draft, remember_commit
from streams.wire.payloads import CorrectionLog, Draft, Verdict

Sent = list[tuple[str, dict[str, Any]]]


def make_deps(config: AgentConfig, judge: ScriptedJudge | None = None) -> tuple[GateDeps, Sent]:
    sent: Sent = []

    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> asyncio.Future[Any]:
        sent.append((topic.rsplit(".", 1)[-1], orjson.loads(value or b"null")))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    deps = GateDeps(Settings(), judge or ScriptedJudge.from_rules({"default": 1}),
                    PropositionLibrary(BUNDLED_PROPOSITIONS), ConfigCache(default=config), send,
                    recent={}, pending={})  # fmt: skip
    return deps, sent


def draft(**changes: Any) -> Draft:
    return Draft.model_validate({"draft_id": "d-1", "agent_id": "michael", "text": "Hello", **changes})


def by_topic(sent: Sent, suffix: str) -> list[dict[str, Any]]:
    return [value for topic, value in sent if topic.endswith(suffix)]


async def test_a_skip_passes_at_once_commits_nothing_and_is_logged() -> None:
    judge = ScriptedJudge.from_rules({"default": 0})  # would fail every dimension
    deps, sent = make_deps(AgentConfig(gate_adherence_enabled=True, gate_similarity_enabled=True), judge)
    deps.pending["d-1"] = [{"attempt": 1, "text": "Hello", "total_score": 0.0}]
    await process_draft(deps, draft(attempt=2, text="", skip=True), time.monotonic())
    (verdict,) = by_topic(sent, "verdicts")
    (log,) = by_topic(sent, "logs")
    assert by_topic(sent, "messages") == []  # nothing committed
    v = Verdict.model_validate(verdict)
    assert (v.decision, v.outcome, v.text, v.committed_attempt, v.scores) == ("skip", "skipped", "", None, {})
    assert CorrectionLog.model_validate(log).outcome == "skipped"
    assert v.judge is None  # no judge was asked
    assert "michael" not in deps.recent and "d-1" not in deps.pending  # the draft is finished
    assert deps.stats.snapshot()["outcomes"] == {"skipped": 1}


async def test_an_agent_below_the_minimum_of_actions_is_not_gated_yet() -> None:
    config = AgentConfig(gate_adherence_enabled=True, minimum_required_qty_of_actions=2)
    deps, sent = make_deps(config)  # the judge scores 1: every judged draft fails
    outcomes = []
    for n in range(3):
        sent.clear()
        await process_draft(deps, draft(draft_id=f"d-{n}", text=f"message number {n}"), time.monotonic())
        outcomes.append(by_topic(sent, "verdicts")[0]["outcome"])
    assert outcomes == ["not_gated_yet", "not_gated_yet", "corrected"]
    assert committed_actions(deps.recent["michael"]) == 2


def test_the_action_count_goes_beyond_the_ten_messages_kept() -> None:
    table: dict[str, Any] = {}
    for n in range(25):
        remember_commit(table, "pam", f"m{n}", f"text {n}", None)
    remember_commit(table, "pam", "m24", "text 24", None)  # recorded again (redelivery): not counted twice
    assert len(table["pam"]) == 10 and committed_actions(table["pam"]) == 25


def test_entries_without_an_ordinal_count_one_each() -> None:
    assert committed_actions([{"id": "a", "text": "x"}, {"id": "b", "text": "y"}]) == 2
