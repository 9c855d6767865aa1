"""LangGraph (``langgraph`` 1.x): an agent node of a multi-agent ``StateGraph``, gated
(``pip install persona-drift[langgraph]``).

    async with gate_session("127.0.0.1:9092", channel="standup") as session:
        graph = StateGraph(MessagesState)
        graph.add_node("michael", gated_node(michael_node, session, agent_id="michael", agent_name="Michael"))
        ...
        result = await graph.compile().ainvoke({"messages": [HumanMessage("Plan the office party.")]})

``node`` is an ordinary agent node: it reads ``state[messages_key]`` and returns an update whose
``messages_key`` list ends with the agent's reply (an ``AIMessage`` or a string), sync or async. Per turn the
wrapper asks the steps service for the agent's directives and lets the node reply; the reply is a draft. A failing
draft goes back to the node with the feedback in state: the node sees ``state["drift_feedback"]`` (and
``drift_directives``, ``drift_attempt``) and, in its private copy of the messages, its rejected draft followed by
the gate's feedback (a ``HumanMessage`` named ``drift_gate``). Only the committed text enters the shared
conversation: the update returns one ``AIMessage`` named after the agent, the verdict's labels in its
``response_metadata``; a skip or a refusal returns no message. The graph must run with ``ainvoke``/``astream``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

from engine.errors import ConfigurationError

try:
    from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigurationError(
        f"the LangGraph adapter needs langgraph and langchain-core: pip install 'persona-drift[langgraph]' ({exc})"
    ) from exc

from streams.adapters.session import GATE_SOURCE, GateSession, render_directives

#: The graph's state type (a TypedDict such as ``MessagesState``): the gated node takes what the node takes.
S = TypeVar("S")
S_contra = TypeVar("S_contra", contravariant=True)


class GatedNode(Protocol[S_contra]):
    """What :func:`gated_node` returns: an async LangGraph node over the same state as the node it wraps."""

    def __call__(self, state: S_contra) -> Awaitable[dict[str, Any]]: ...


def draft_of(update: Mapping[str, Any], key: str) -> BaseMessage | None:
    """The reply at the end of a node's update (None: the node said nothing, the agent is silent)."""
    replies = update.get(key)
    last = replies[-1] if isinstance(replies, list) and replies else replies
    if isinstance(last, str):
        return AIMessage(content=last)
    return last if isinstance(last, BaseMessage) else None


@dataclass
class _Drafting:
    """One turn's private side: the node's view of the state (its copy of the messages) and its latest update."""

    call: Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
    view: dict[str, Any]
    key: str
    update: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reply(self) -> BaseMessage | None:
        return draft_of(self.update, self.key)

    async def first(self) -> str | None:
        self.update = await self.call(self.view)
        return None if self.reply is None else self.reply.text

    async def again(self, feedback: str) -> str | None:
        """Back to the node: its rejected draft and the feedback in its messages, the feedback in state."""
        rejected = self.reply
        assert rejected is not None
        self.view[self.key] = [*self.view[self.key], rejected, HumanMessage(feedback, name=GATE_SOURCE)]
        self.view["drift_feedback"] = feedback
        self.view["drift_attempt"] += 1
        return await self.first()


async def _stimuli(session: GateSession, messages: list[AnyMessage]) -> None:
    """The human messages of the conversation, each published once (the session remembers their ids)."""
    for message in messages:
        if isinstance(message, HumanMessage) and message.id:
            await session.stimulus(message_id=message.id, source=message.name or "user", text=message.text)


def gated_node(
    node: Callable[[S], Any],
    session: GateSession,
    *,
    agent_id: str,
    agent_name: str | None = None,
    persona: str | None = None,
    messages_key: str = "messages",
) -> GatedNode[S]:
    """``node`` behind the persona gate (see the module docstring); ``agent_name`` names the committed messages."""
    session.register(agent_id, *([agent_name] if agent_name else []))
    name = agent_name or agent_id

    async def call(state: Mapping[str, Any]) -> Mapping[str, Any]:
        update = node(cast(S, state))
        done = await update if inspect.isawaitable(update) else update
        return cast(Mapping[str, Any], done)

    async def gated(state: S) -> dict[str, Any]:
        current = cast(Mapping[str, Any], state)
        shared: list[AnyMessage] = list(current.get(messages_key, []))
        await _stimuli(session, shared)
        nudges = await session.directives(agent_id)
        directives = [HumanMessage(render_directives(nudges), name=GATE_SOURCE)] if nudges else []
        view = {**current, messages_key: [*shared, *directives], "drift_directives": nudges}
        drafting = _Drafting(call, view | {"drift_feedback": None, "drift_attempt": 1}, messages_key)
        turn = await session.turn(agent_id=agent_id, draft=await drafting.first(), regenerate=drafting.again,
                                  agent_name=agent_name, persona=persona)  # fmt: skip
        rest = {k: v for k, v in drafting.update.items() if k != messages_key}
        if turn.text is None:
            return rest
        committed = AIMessage(content=turn.text, name=name, response_metadata=turn.metadata())
        return {**rest, messages_key: [committed]}

    gated.__name__ = f"gated_{getattr(node, '__name__', 'node')}"
    return gated
