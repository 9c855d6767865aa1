"""AutoGen AgentChat (``autogen-agentchat`` 0.7): any chat agent, gated (``pip install persona-drift[autogen]``).

    async with gate_session("127.0.0.1:9092", channel="standup") as session:
        team = RoundRobinGroupChat([GatedAgent(michael, session), GatedAgent(dwight, session), ...])
        result = await team.run(task="Plan the office party.")

Per turn a :class:`GatedAgent` asks the steps service for its directives (given to the wrapped agent as one more
incoming message), lets the wrapped agent reply, and sends the reply to the gate as a draft. On ``retry`` the
wrapped agent is asked again with the gate's feedback (a message from ``drift_gate``), as often as the agent's
gate configuration allows; on ``commit`` the team sees the committed text, as a ``TextMessage`` from this agent
with the verdict's labels in ``metadata``; a skip or a refusal leaves the agent silent: an empty ``TextMessage``
labelled ``drift_status`` (a chat agent must answer its team with a message). Rejected drafts and the feedback
stay in the wrapped agent's own context, never in the team's. Replies that are not text (a handoff, a stop, a
tool-call summary) pass through ungated. It works in ``RoundRobinGroupChat`` and ``SelectorGroupChat`` unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.errors import ConfigurationError

try:
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import BaseChatMessage, TextMessage
    from autogen_core import CancellationToken
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigurationError(
        f"the AutoGen adapter needs autogen-agentchat: pip install 'persona-drift[autogen]' ({exc})"
    ) from exc

from streams.adapters.session import GATE_SOURCE, GateSession, Turn, render_directives


class GatedAgent(BaseChatAgent):
    """``agent`` behind the persona gate, under the same name and description.

    ``session``: the conversation's :class:`~streams.adapters.session.GateSession`. ``agent_id``: the gate's id
    for this agent (default: the agent's name). ``agent_name`` / ``persona``: sent with every draft (they
    override the gate's persona files)."""

    def __init__(
        self,
        agent: BaseChatAgent,
        session: GateSession,
        *,
        agent_id: str | None = None,
        agent_name: str | None = None,
        persona: str | None = None,
    ) -> None:
        super().__init__(agent.name, agent.description)
        self.inner = agent
        self.session = session
        self.agent_id = agent_id or agent.name
        self.agent_name = agent_name
        self.persona = persona
        self.last_turn: Turn | None = None
        session.register(agent.name, self.agent_id)

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return tuple(dict.fromkeys([TextMessage, *self.inner.produced_message_types]))

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        for message in messages:
            await self.session.stimulus(message_id=message.id, source=message.source, text=message.to_text())
        nudges = await self.session.directives(self.agent_id)
        directives = [TextMessage(content=render_directives(nudges), source=GATE_SOURCE)] if nudges else []
        response = await self.inner.on_messages([*messages, *directives], cancellation_token)
        if not isinstance(response.chat_message, TextMessage):
            return response

        async def regenerate(feedback: str) -> str | None:
            asked = [TextMessage(content=feedback, source=GATE_SOURCE)]
            return (await self.inner.on_messages(asked, cancellation_token)).chat_message.to_text()

        turn = await self.session.turn(
            agent_id=self.agent_id, draft=response.chat_message.content, regenerate=regenerate,
            agent_name=self.agent_name, persona=self.persona,
        )  # fmt: skip
        self.last_turn = turn
        said = TextMessage(content=turn.text or "", source=self.name, metadata=turn.metadata())
        return Response(chat_message=said)

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        await self.inner.on_reset(cancellation_token)

    async def save_state(self) -> Mapping[str, Any]:
        return await self.inner.save_state()

    async def load_state(self, state: Mapping[str, Any]) -> None:
        await self.inner.load_state(state)
