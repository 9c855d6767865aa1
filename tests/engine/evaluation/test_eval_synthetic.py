"""Synthetic conversations: the generators against the local fake LLM servers, and the round-robin."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.errors import ConfigurationError
from engine.evaluation.synthetic import (
    SYNTHETIC_CHANNEL,
    AnthropicGenerator,
    Generated,
    GenerationError,
    Generator,
    OpenAICompatibleGenerator,
    generate_conversation,
    make_generator,
)
from engine.models import Event, EventKind, Persona, TokenUsage
from engine.settings import Settings
from ops.fakes.chat_completions import ChatCompletionsServer
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour

DWIGHT = Persona(id="dwight", name="Dwight Schrute", style="Curt, declarative sentences.")
PAM = Persona(id="pam", name="Pam Beesly", style="Warm and gentle.")


class EchoGenerator:
    """Answers with who is speaking and how many events it saw."""

    name = "echo"

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def generate(self, persona: Persona, conversation: Sequence[Event], topic: str) -> Generated:
        self.seen.append(len(conversation))
        return Generated(f"{persona.name} says #{len(conversation)}", TokenUsage(1, 1))


async def test_anthropic_generator_speaks_the_messages_api() -> None:
    async with MessagesApiServer([Behaviour.answer("  Bears. Beets. Battlestar Galactica.  ")]) as server:
        generator = AnthropicGenerator(api_key="test-key", model="claude-test", base_url=server.base_url)
        assert isinstance(generator, Generator)
        try:
            history = [Event("pam", "Pam Beesly", "Any ideas?", EventKind.ACTION, SYNTHETIC_CHANNEL)]
            generated = await generator.generate(DWIGHT, history, "paper waste")
        finally:
            await generator.aclose()
    assert generated.text == "Bears. Beets. Battlestar Galactica."
    assert generated.usage.input_tokens > 0 and generated.usage.output_tokens > 0
    (request,) = server.requests
    assert request.body["model"] == "claude-test"
    assert "Dwight Schrute" in str(request.body["system"]) and "Curt, declarative" in str(request.body["system"])
    assert "Pam Beesly: Any ideas?" in request.body["messages"][0]["content"]


async def test_anthropic_errors_and_empty_answers_are_generation_errors() -> None:
    async with MessagesApiServer([Behaviour.server_error(400), Behaviour.answer("   ")]) as server:
        generator = AnthropicGenerator(api_key="k", model="m", base_url=server.base_url)
        try:
            with pytest.raises(GenerationError, match="failed"):
                await generator.generate(DWIGHT, [], "topic")
            with pytest.raises(GenerationError, match="empty message"):
                await generator.generate(DWIGHT, [], "topic")
        finally:
            await generator.aclose()


async def test_openai_compatible_generator_speaks_chat_completions() -> None:
    async with ChatCompletionsServer([Behaviour.answer("Under five minutes."), Behaviour.server_error()]) as server:
        generator = OpenAICompatibleGenerator(base_url=server.base_url, model="local", api_key="sk-test")
        try:
            generated = await generator.generate(PAM, [], "bets")
            with pytest.raises(GenerationError):
                await generator.generate(PAM, [], "bets")
        finally:
            await generator.aclose()
    assert generated.text == "Under five minutes."
    body = server.requests[0].body
    assert body["messages"][0]["role"] == "system" and "Pam Beesly" in body["messages"][0]["content"]
    assert server.requests[0].headers["authorization"] == "Bearer sk-test"


async def test_conversation_rounds_give_every_agent_n_messages() -> None:
    generator = EchoGenerator()
    progress: list[str] = []
    events = await generate_conversation(generator, [DWIGHT, PAM], 2, topic="paper", progress=progress.append)
    topic, *messages = events
    assert topic.kind is EventKind.STIMULUS and topic.text == "paper" and topic.agent_id == SYNTHETIC_CHANNEL
    assert [e.agent_id for e in messages] == ["dwight", "pam", "dwight", "pam"]
    assert generator.seen == [1, 2, 3, 4]  # each message sees everything written before it
    assert all(e.channel == SYNTHETIC_CHANNEL and e.ts is not None for e in events)
    assert [e.ts for e in events] == sorted(e.ts for e in events if e.ts is not None)
    assert progress == ["dwight", "pam", "dwight", "pam"]


async def test_conversation_arguments_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="at least 1"):
        await generate_conversation(EchoGenerator(), [DWIGHT], 0)
    with pytest.raises(ConfigurationError, match="persona"):
        await generate_conversation(EchoGenerator(), [], 1)


@pytest.mark.parametrize("spec", ["offline", "scripted:rules.yaml", "replay:tape.jsonl"])
def test_non_llm_judges_cannot_write_messages(spec: str) -> None:
    with pytest.raises(ConfigurationError, match="--synthetic needs an LLM"):
        make_generator(spec, Settings(), {})


async def test_generators_follow_the_judge_spec() -> None:
    with pytest.raises(ConfigurationError, match="ANTHROPIC_API_KEY"):
        make_generator("anthropic", Settings(), {})
    anthropic = make_generator("anthropic:claude-x", Settings(anthropic_api_key="k"), {})
    openai = make_generator("openai-compatible", Settings(openai_model="llama"), {"OPENAI_API_KEY": "t"})
    try:
        assert anthropic.name == "anthropic:claude-x" and openai.name == "openai-compatible:llama"
    finally:
        await anthropic.aclose()
        await openai.aclose()
