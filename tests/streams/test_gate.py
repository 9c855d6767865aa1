"""The gate's output records: the hot path builds plain dicts, which must match the published models."""

from __future__ import annotations

import asyncio

import orjson

from engine.gate import AttemptResult, DimensionCheck, GateDecision, SimilarityCheck
from engine.models import Decision, Dimension, Outcome, TokenUsage
from streams.runtime.dispatch import KeyedDispatcher
from streams.services.gate import remember_commit, utcnow_iso
from streams.services.records import build_log, build_verdict, committed_message
from streams.wire.payloads import CorrectionLog, Draft, Message, Verdict


def make_draft(**changes: object) -> Draft:
    fields: dict[str, object] = {"draft_id": "d-1", "attempt": 2, "agent_id": "michael", "text": "Hello there",
                                 "run_id": "r", "channel": "#general"}  # fmt: skip
    return Draft.model_validate({**fields, **changes})


def make_result() -> AttemptResult:
    check = DimensionCheck(Dimension.ADHERENCE, 4.5, 7.0, False, reasoning="flat", usage=TokenUsage(10, 2, 3, 4))
    similarity = SimilarityCheck(0.7, 0.6, False, "Hello there!")
    return AttemptResult(attempt=2, text="Hello there", checks=(check,), similarity=similarity)


def roundtrip(record: dict[str, object]) -> dict[str, object]:
    loaded: dict[str, object] = orjson.loads(orjson.dumps(record))
    return loaded


def test_verdict_dict_validates_as_the_published_model() -> None:
    decision = GateDecision(Decision.RETRY, Outcome.CORRECTED, "Hello there", None, feedback="do better")
    verdict = build_verdict(make_draft(), make_result(), decision, 12.5, "scripted:x")
    model = Verdict.model_validate(roundtrip(verdict))
    assert model.model_dump(mode="json") == roundtrip(verdict)
    assert model.scores["adherence"].passed is False and model.similarity is not None
    assert model.token_usage.cache_creation_input_tokens == 4


def test_correction_log_and_message_validate_as_the_published_models() -> None:
    decision = GateDecision(Decision.COMMIT, Outcome.FORCED_THROUGH, "Earlier text", 1)
    verdict = build_verdict(make_draft(), make_result(), decision, 3.0, "scripted:x")
    log = CorrectionLog.model_validate(roundtrip(build_log(make_draft(), verdict, utcnow_iso())))
    assert (log.corrected_text, log.outcome, log.similarity_score) == ("Earlier text", "forced_through", 0.7)
    message = Message.model_validate(roundtrip(committed_message(make_draft(), "Earlier text", utcnow_iso())))
    assert (message.origin, message.message_id, message.text) == ("gate", "d-1", "Earlier text")


def test_recent_history_keeps_the_last_ten() -> None:
    table: dict[str, object] = {}
    for n in range(15):
        remember_commit(table, "pam", f"m{n}", f"text {n}", "#art")
    history = table["pam"]
    assert isinstance(history, list) and [h["id"] for h in history] == [f"m{n}" for n in range(5, 15)]


async def test_dispatcher_orders_per_key_and_runs_keys_concurrently() -> None:
    seen: list[str] = []
    slow_started = asyncio.Event()

    async def handler(item: tuple[str, float]) -> None:
        name, delay = item
        if delay:
            slow_started.set()
        await asyncio.sleep(delay)
        seen.append(name)

    dispatcher: KeyedDispatcher[tuple[str, float]] = KeyedDispatcher(handler, max_in_flight=100)
    await dispatcher.submit("a", ("a1", 0.2))
    await dispatcher.submit("a", ("a2", 0.0))
    await slow_started.wait()
    await dispatcher.submit("b", ("b1", 0.0))
    assert dispatcher.busy("a")
    await dispatcher.wait_idle()
    assert seen == ["b1", "a1", "a2"]  # b is not blocked by a's slow item; a stays in order
    assert not dispatcher.busy("a")


async def test_a_redelivered_draft_is_not_compared_with_its_own_commit() -> None:
    from engine.judges.scripted import ScriptedJudge
    from engine.library import PropositionLibrary
    from engine.models import AgentConfig
    from engine.settings import BUNDLED_PROPOSITIONS, Settings
    from streams.services.configs import ConfigCache
    from streams.services.gate import GateDeps, judge_attempt

    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> asyncio.Future[object]:
        raise AssertionError("judge_attempt sends nothing")

    own = {"id": "d-1", "text": "Hello there", "channel": "#general"}
    other = {"id": "d-0", "text": "Hello there", "channel": "#general"}
    deps = GateDeps(Settings(), ScriptedJudge.from_rules({"default": 9}), PropositionLibrary(BUNDLED_PROPOSITIONS),
                    ConfigCache(default=AgentConfig(gate_similarity_enabled=True)), send,
                    recent={"michael": [own]}, pending={})  # fmt: skip
    _, decision = await judge_attempt(deps, make_draft(attempt=1))
    assert decision.outcome is Outcome.PASSED  # its own earlier commit (same draft id) is skipped
    deps.recent["michael"] = [other, own]
    _, decision = await judge_attempt(deps, make_draft(attempt=1))
    assert decision.decision is Decision.RETRY  # another draft with the same text still counts
