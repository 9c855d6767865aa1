"""An :class:`~engine.actors.base.Actor` over any :class:`~engine.llm.base.TextModel`: the persona speaks.

The system text is the persona's whole specification and how to behave; the user turn holds the numbered
trajectory (what the agent saw and said), the current prompt, an intervention's thought and the gate's retry
feedback. The agent answers with the message text only, or with :data:`SILENCE` to say nothing this turn
(the gate's feedback tells it that stopping beats acting poorly).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from engine.actors.base import ActRequest, ActResult
from engine.llm.base import ChatMessage, CompletionRequest, TextModel
from engine.models import Event, EventKind, Persona

SILENCE = "[SILENCE]"
#: How many trajectory events the actor sees (oldest dropped first); the gate judges its own window.
TRAJECTORY_LIMIT = 60

_RULES = f"""You speak as this person in a group conversation, in the first person, in their own voice.
Stay true to every part of the specification: their background, traits, beliefs, preferences and style.
Write only the message you send now: no name prefix, no stage directions, no quotation marks.
Keep it to a few sentences unless the moment asks for more.
If you have nothing worth saying now, answer exactly {SILENCE} and nothing else."""


def actor_system(persona: Persona | None, agent_id: str) -> str:
    who = persona.render() if persona is not None else f"Name: {agent_id}"
    return f"{_RULES}\n\n# Who you are\n{who}"


def render_events(events: Sequence[Event], me: str) -> list[str]:
    """Numbered lines, oldest first: ``#3 Ana: text`` for messages, ``#4 Facilitator -> you: text``."""
    lines = []
    start = max(len(events) - TRAJECTORY_LIMIT, 0)
    for number, event in enumerate(events[start:], start=start + 1):
        if event.kind is EventKind.STIMULUS:
            lines.append(
                f"#{number} {event.source or 'someone'} -> {'you' if event.agent_id == me else 'all'}: {event.text}"
            )
        else:
            speaker = "you" if event.agent_id == me else event.agent_name
            lines.append(f"#{number} {speaker}: {event.text}")
    return lines


def actor_prompt(request: ActRequest) -> str:
    parts = []
    if request.trajectory:
        lines = render_events(request.trajectory, request.agent_id)
        parts.append("# The conversation so far (numbered events)\n" + "\n".join(lines))
        parts.append(f"The next event will be #{len(request.trajectory) + 1}.")
    if request.stimulus:
        parts.append(f"# Asked of you now\n{request.stimulus}")
    if request.nudge:
        parts.append(f"# A thought that strikes you now\n{request.nudge}")
    if request.feedback:
        parts.append(
            f"# Your previous attempt was not good enough (attempt {request.attempt - 1})\n{request.feedback}\n"
            f"Write a different message that fixes this; the more attempts fail, the more radical the change. "
            f"Saying nothing ({SILENCE}) is better than acting poorly."
        )
    parts.append("Your message:")
    return "\n\n".join(parts)


class LlmActor:
    """Speaks for agents with a text model; its name is the model's (``anthropic:claude-…``)."""

    def __init__(self, model: TextModel, *, temperature: float = 1.0, max_tokens: int = 400) -> None:
        self._model = model
        self._temperature = temperature
        self._max_tokens = max_tokens

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def model(self) -> TextModel:
        return self._model

    async def act(self, request: ActRequest) -> ActResult:
        started = time.perf_counter()
        completion = await self._model.complete(
            CompletionRequest(
                (ChatMessage("user", actor_prompt(request)),),
                system=actor_system(request.persona, request.agent_id),
                temperature=self._temperature,
                max_tokens=self._max_tokens,
                purpose="actor",
            )
        )
        text = completion.text.strip().strip('"').strip()
        silent = not text or text.upper().startswith(SILENCE)
        return ActResult(None if silent else text, self.name, completion.usage, (time.perf_counter() - started) * 1000)
