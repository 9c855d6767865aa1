"""The :class:`Actor` port and its request/result records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine.models import ZERO_USAGE, Event, Persona, TokenUsage


@dataclass(frozen=True, slots=True)
class ActRequest:
    """Everything an actor needs to produce one message.

    ``trajectory`` is what the agent has seen and said so far (stimuli and actions, oldest first);
    ``stimulus`` is what it is asked to answer now, if anything beyond the trajectory (a facilitator's prompt,
    an evaluation's input); ``nudge`` is an intervention's thought; ``feedback`` is the gate's retry feedback
    for the previous attempt (``attempt`` > 1).
    """

    agent_id: str
    persona: Persona | None
    trajectory: tuple[Event, ...] = ()
    stimulus: str | None = None
    nudge: str | None = None
    feedback: str | None = None
    attempt: int = 1
    channel: str | None = None


@dataclass(frozen=True, slots=True)
class ActResult:
    """The actor's message, or ``text=None`` when the agent chose silence."""

    text: str | None
    actor: str
    usage: TokenUsage = ZERO_USAGE
    latency_ms: float = 0.0

    @property
    def silent(self) -> bool:
        return self.text is None


@runtime_checkable
class Actor(Protocol):
    """Anything that speaks for an agent. ``name`` labels every output it contributed to."""

    @property
    def name(self) -> str: ...

    async def act(self, request: ActRequest) -> ActResult: ...
