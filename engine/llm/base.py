"""The :class:`TextModel` port: a conversation in, one text reply out, with its usage and latency.

Implementations never raise for a provider fault they can classify: transient faults are retried under the
call policy and a final failure raises :class:`engine.errors.JudgeError` (or a subclass), so every caller has
one exception family to catch. ``name`` labels every output the model contributed to (a scripted model says
``scripted…`` so no reader mistakes it for an LLM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from engine.models import ZERO_USAGE, TokenUsage

Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class CompletionRequest:
    """What to send: an optional system text and the turns, oldest first (the last one is the user's)."""

    messages: tuple[ChatMessage, ...]
    system: str = ""
    temperature: float = 0.0
    max_tokens: int = 1024
    #: a short label for accounting and logs, e.g. ``actor``, ``plexus:classifier`` (never message text)
    purpose: str = ""

    @classmethod
    def single(cls, prompt: str, *, system: str = "", temperature: float = 0.0, purpose: str = "") -> CompletionRequest:
        return cls((ChatMessage("user", prompt),), system=system, temperature=temperature, purpose=purpose)

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return ""


@dataclass(frozen=True, slots=True)
class Completion:
    text: str
    model: str
    usage: TokenUsage = ZERO_USAGE
    latency_ms: float = 0.0


@runtime_checkable
class TextModel(Protocol):
    """Anything that answers a conversation with text."""

    @property
    def name(self) -> str: ...

    async def complete(self, request: CompletionRequest) -> Completion: ...
