"""Synthetic conversations: when no real messages exist, let an LLM write them from the personas.

A facilitator opens one channel with a topic; then, round after round, every agent writes its next message
in turn, seeing the conversation so far. ``N`` messages per agent cost ``N × agents`` LLM calls, made one
after the other (each message depends on the previous ones). The result is ordinary conversation events,
evaluated like a JSONL file.

Generators sit behind the small :class:`Generator` protocol: :class:`AnthropicGenerator` (the ``anthropic``
SDK) and :class:`OpenAICompatibleGenerator` (``POST /chat/completions`` over httpx).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, runtime_checkable

import anthropic
import httpx
from anthropic.types import TextBlock

from engine.errors import ConfigurationError, DriftError
from engine.models import Event, EventKind, Persona, TokenUsage
from engine.settings import Settings

SYNTHETIC_CHANNEL = "#synthetic"
DEFAULT_TOPIC = (
    "The team has to agree on three concrete ways to cut the office's paper waste before Friday. "
    "Discuss, propose ideas and react to each other."
)
FACILITATOR = "Facilitator"
HISTORY_EVENTS = 30
MAX_MESSAGE_TOKENS = 300

_INSTRUCTIONS = """\
You are taking part in a group chat at work as the person described below. Stay in character: write the \
way this person writes, with their opinions, habits and quirks. Reply with the text of your next chat \
message only: no name prefix, no quotation marks, no stage directions about being an AI. Keep it to a few \
sentences."""


class GenerationError(DriftError):
    """The LLM that writes synthetic messages failed or answered with nothing."""


@dataclass(frozen=True, slots=True)
class Generated:
    text: str
    usage: TokenUsage


@runtime_checkable
class Generator(Protocol):
    """Writes an agent's next message from its persona and the conversation so far."""

    @property
    def name(self) -> str: ...

    async def generate(self, persona: Persona, conversation: Sequence[Event], topic: str) -> Generated: ...


def system_prompt(persona: Persona) -> str:
    return f"{_INSTRUCTIONS}\n\n# Who you are\n{persona.render()}"


def _speaker(event: Event) -> str:
    return (event.source or FACILITATOR) if event.kind is EventKind.STIMULUS else event.agent_name


def user_prompt(persona: Persona, conversation: Sequence[Event], topic: str) -> str:
    chat = "\n".join(f"{_speaker(e)}: {e.text}" for e in conversation[-HISTORY_EVENTS:]) or "(nobody has written yet)"
    return f"Topic: {topic}\n\nThe chat so far:\n{chat}\n\nWrite {persona.name}'s next message."


class AnthropicGenerator:
    """Messages written by a Claude model (``base_url`` may point at a compatible server)."""

    def __init__(self, *, api_key: str, model: str, base_url: str | None = None, temperature: float = 1.0) -> None:
        self._model = model
        self._extra_body = {"temperature": temperature}
        self._client = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=2)

    @property
    def name(self) -> str:
        return f"anthropic:{self._model}"

    async def aclose(self) -> None:
        await self._client.close()

    async def generate(self, persona: Persona, conversation: Sequence[Event], topic: str) -> Generated:
        try:
            message = await self._client.messages.create(
                model=self._model,
                max_tokens=MAX_MESSAGE_TOKENS,
                system=system_prompt(persona),
                messages=[{"role": "user", "content": user_prompt(persona, conversation, topic)}],
                extra_body=self._extra_body,
            )
        except anthropic.AnthropicError as error:
            raise GenerationError(f"{self.name}: generating a message failed ({type(error).__name__})") from None
        text = "".join(block.text for block in message.content if isinstance(block, TextBlock))
        usage = TokenUsage(input_tokens=message.usage.input_tokens, output_tokens=message.usage.output_tokens)
        return Generated(_non_empty(text, self.name), usage)


class OpenAICompatibleGenerator:
    """Messages written through an OpenAI-compatible ``/chat/completions`` endpoint."""

    def __init__(self, *, base_url: str, model: str, api_key: str | None = None, timeout_s: float = 60.0) -> None:
        self._model = model
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout_s)

    @property
    def name(self) -> str:
        return f"openai-compatible:{self._model}"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def generate(self, persona: Persona, conversation: Sequence[Event], topic: str) -> Generated:
        body = {
            "model": self._model,
            "max_tokens": MAX_MESSAGE_TOKENS,
            "messages": [
                {"role": "system", "content": system_prompt(persona)},
                {"role": "user", "content": user_prompt(persona, conversation, topic)},
            ],
        }
        try:
            response = await self._http.post("chat/completions", json=body)
            response.raise_for_status()
            data: Any = response.json()
            text = data["choices"][0]["message"]["content"]
            usage = data.get("usage") or {}
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError) as error:
            raise GenerationError(f"{self.name}: generating a message failed ({type(error).__name__})") from None
        tokens = TokenUsage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
        return Generated(_non_empty(str(text), self.name), tokens)


def _non_empty(text: str, name: str) -> str:
    cleaned = text.strip()
    if not cleaned:
        raise GenerationError(f"{name}: the model answered with an empty message")
    return cleaned


def make_generator(
    spec: str, settings: Settings, environ: Mapping[str, str]
) -> AnthropicGenerator | OpenAICompatibleGenerator:
    """The generator for an LLM judge spec (``anthropic[:MODEL]`` or ``openai-compatible[:MODEL]``)."""
    kind, _, model = spec.strip().partition(":")
    if kind == "anthropic":
        if not settings.anthropic_api_key:
            raise ConfigurationError("--synthetic with the anthropic model needs ANTHROPIC_API_KEY")
        return AnthropicGenerator(
            api_key=settings.anthropic_api_key.get_secret_value(),
            model=model or settings.anthropic_model,
            base_url=settings.anthropic_base_url,
        )
    if kind == "openai-compatible":
        return OpenAICompatibleGenerator(
            base_url=settings.openai_base_url,
            model=model or settings.openai_model,
            api_key=environ.get("OPENAI_API_KEY") or None,
        )
    raise ConfigurationError(
        f"--synthetic needs an LLM to write messages, but the judge is {spec!r}: "
        "use --judge anthropic or --judge openai-compatible"
    )


async def generate_conversation(
    generator: Generator,
    personas: Sequence[Persona],
    messages_per_agent: int,
    *,
    topic: str = DEFAULT_TOPIC,
    start: datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[Event, ...]:
    """A channel conversation: the topic, then ``messages_per_agent`` rounds of every persona in turn."""
    if messages_per_agent < 1:
        raise ConfigurationError(f"--synthetic must be at least 1, not {messages_per_agent}")
    if not personas:
        raise ConfigurationError("--synthetic needs at least one agent with a persona file")
    clock = start or datetime.now(UTC)
    events = [
        Event(SYNTHETIC_CHANNEL, SYNTHETIC_CHANNEL, topic, EventKind.STIMULUS, SYNTHETIC_CHANNEL, FACILITATOR, clock)
    ]
    for _ in range(messages_per_agent):
        for persona in personas:
            generated = await generator.generate(persona, events, topic)
            clock += timedelta(seconds=30)
            events.append(
                Event(persona.id, persona.name, generated.text, EventKind.ACTION, SYNTHETIC_CHANNEL, None, clock)
            )
            if progress is not None:
                progress(persona.id)
    return tuple(events)
