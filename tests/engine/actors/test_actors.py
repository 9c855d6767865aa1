"""Actors: the LLM actor through the real anthropic SDK against the fake (prompt, silence, retries), the
scripted actor's persona-aware, deterministic behaviours, and ``make_actor``'s defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.actors.base import ActRequest
from engine.actors.factory import make_actor
from engine.actors.llm import SILENCE, LlmActor
from engine.actors.scripted import DRIFT_MARKER, ScriptedActor, ScriptedListModel, ScriptedRules
from engine.errors import ConfigurationError, PropositionFileError
from engine.judges.llm import CallPolicy
from engine.llm.anthropic import AnthropicTextModel
from engine.llm.base import CompletionRequest
from engine.models import Event, EventKind, Persona
from engine.settings import Settings
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour

ANA = Persona.model_validate({
    "id": "ana", "name": "Ana Lima", "age": 34,
    "occupation": {"title": "baker", "description": "runs a night bakery"},
    "personality": {"traits": ["warm"], "big_five": {"extraversion": "high"}},
    "beliefs": ["Bread should be cheap."],
})  # fmt: skip
TRAJECTORY = (
    Event("ana", "Ana Lima", "Introduce yourselves.", EventKind.STIMULUS, "room", "Facilitator"),
    Event("bo", "Bo", "I sell bikes.", channel="room"),
    Event("ana", "Ana Lima", "I bake bread.", channel="room"),
)


async def test_llm_actor_sends_persona_numbered_trajectory_nudge_and_feedback() -> None:
    async with MessagesApiServer([Behaviour.rate_limited(0.01), Behaviour.answer(' "Fresh rolls at dawn!" ')]) as fake:
        model = AnthropicTextModel(api_key="k", base_url=fake.root_url, policy=CallPolicy(backoff_base_s=0.01))
        actor = LlmActor(model)
        result = await actor.act(ActRequest("ana", ANA, TRAJECTORY, stimulus="Propose an idea.",
                                            nudge="Try something new.", feedback="Too bland.", attempt=2))  # fmt: skip
        await model.aclose()
    assert result.text == "Fresh rolls at dawn!" and result.actor == "anthropic:claude-haiku-4-5"
    assert len(fake.requests) == 2 and result.usage.output_tokens > 0
    body = fake.requests[-1].body
    system = body["system"][0]["text"]
    assert "big_five" in system and "night bakery" in system
    prompt = body["messages"][0]["content"]
    assert "#1 Facilitator -> you: Introduce yourselves." in prompt and "#2 Bo: I sell bikes." in prompt
    assert "#3 you: I bake bread." in prompt and "The next event will be #4." in prompt
    assert "Try something new." in prompt and "Too bland." in prompt and SILENCE in prompt


@pytest.mark.parametrize("reply", [SILENCE, "  ", "[silence]"])
async def test_llm_actor_silence(reply: str) -> None:
    async with MessagesApiServer([Behaviour.answer(reply)]) as fake:
        model = AnthropicTextModel(api_key="k", base_url=fake.root_url)
        result = await LlmActor(model).act(ActRequest("ana", ANA))
        await model.aclose()
    assert result.silent and result.text is None


def _request(n_own: int, **changes: object) -> ActRequest:
    own = tuple(Event("ana", "Ana Lima", f"old idea {i} 'X{i}'", channel="room") for i in range(n_own))
    return ActRequest("ana", ANA, own, **changes)  # type: ignore[arg-type]


async def test_scripted_actor_is_deterministic_and_persona_aware() -> None:
    one = await ScriptedActor().act(_request(1))
    two = await ScriptedActor().act(_request(1))
    assert one.text == two.text and one.actor == "scripted:actor"
    assert one.text is not None and "Ana" in one.text and "baker" in one.text and "bread should be cheap" in one.text
    other = await ScriptedActor(ScriptedRules(seed=5)).act(_request(1))
    retry = await ScriptedActor().act(_request(1, feedback="no", attempt=2))
    assert len({one.text, other.text, retry.text}) == 3


async def test_scripted_actor_repeats_drifts_and_falls_silent_on_schedule() -> None:
    repeat = ScriptedActor(ScriptedRules(repeat_every=2))
    assert (await repeat.act(_request(2))).text == "old idea 1 'X1'"
    assert (await repeat.act(_request(2, nudge="new!"))).text != "old idea 1 'X1'"  # a nudge breaks the loop
    assert (await repeat.act(_request(3))).text != "old idea 2 'X2'"
    drift = ScriptedActor(ScriptedRules(drift_after=3))
    assert DRIFT_MARKER not in str((await drift.act(_request(2))).text)
    assert DRIFT_MARKER in str((await drift.act(_request(3))).text)
    assert DRIFT_MARKER not in str((await drift.act(_request(3, feedback="stay in character", attempt=2))).text)
    silent = ScriptedActor(ScriptedRules(silence_every=2))
    turns = [(await silent.act(_request(n))).silent for n in range(12)]
    assert any(turns) and not all(turns) and turns == [(await silent.act(_request(n))).silent for n in range(12)]
    stubborn = ScriptedActor(ScriptedRules(stubborn=True))
    assert (await stubborn.act(_request(1))).text == (await stubborn.act(_request(1, feedback="x", attempt=3))).text


async def test_consolidation_lists_the_ideas_and_the_list_model_extracts_them() -> None:
    trajectory = (
        Event("bo", "Bo", "My idea is 'Bike Library', lend bikes.", channel="room"),
        Event("ana", "Ana Lima", "My idea is 'Night Pantry', bread at 3am.", channel="room"),
        Event("bo", "Bo", "Again 'Bike Library'.", channel="room"),
    )
    summary = await ScriptedActor().act(ActRequest("ana", ANA, trajectory, stimulus="Please consolidate the ideas."))
    assert summary.text is not None and summary.text.count("\n- ") == 2
    reply = await ScriptedListModel().complete(CompletionRequest.single(f"Extract.\n<text>\n{summary.text}\n</text>"))
    assert [item["name"] for item in json.loads(reply.text)] == ["Bike Library", "Night Pantry"]


def test_make_actor_defaults_and_rules_files(tmp_path: Path) -> None:
    assert make_actor("", Settings()).name == "scripted:actor"
    with_key = Settings(anthropic_api_key="k")
    assert with_key.effective_actor() == "anthropic"
    assert make_actor("anthropic:claude-y", with_key).name == "anthropic:claude-y"
    assert make_actor("openai-compatible:m", Settings()).name == "openai-compatible:m"
    rules = tmp_path / "rules.yaml"
    rules.write_text("seed: 3\nrepeat_evry: 2\n", encoding="utf-8")
    with pytest.raises(PropositionFileError, match=r"rules.yaml:2: repeat_evry: unknown key"):
        make_actor(f"scripted:{rules}", Settings())
    rules.write_text("seed: 3\nrepeat_every: 2\n", encoding="utf-8")
    assert make_actor(f"scripted:{rules}", Settings()).name == "scripted:rules.yaml"
    with pytest.raises(ConfigurationError, match="unknown actor"):
        make_actor("gpt", Settings())
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        make_actor("anthropic", Settings())
