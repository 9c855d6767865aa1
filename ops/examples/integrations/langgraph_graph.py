"""A gated LangGraph conversation, offline: three persona nodes whose models are LangChain's fake chat model.

    drift up --judge scripted:ops/examples/integrations/judge_rules.yaml &
    drift config set michael gate_adherence_enabled=true     # and the same for dwight and jim
    python ops/examples/integrations/langgraph_graph.py [--broker 127.0.0.1:9092] [--prefix drift.]

Each node is an ordinary LangGraph agent node (state in, ``{"messages": [reply]}`` out), wrapped with
``gated_node``. Dwight's first reply drifts into the generic-assistant voice; the gate sends it back to his node
with the feedback in state, his next reply is committed, and only committed messages enter the shared
``messages``. In a real graph the ``GenericFakeChatModel`` is your chat model; nothing else changes. Needs the
``[langgraph]`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

from streams.adapters import GatePolicy, GateSession, gate_session
from streams.adapters.langgraph import gated_node

TASK = "Plan the office party, one idea each."
REPLIES = {
    "michael": ["A party with a roast. Of me. By me. That's what she said!"],
    "dwight": [
        "As an AI assistant, I'd be happy to help you plan a fun and inclusive office party!",
        "Bears. Beets. The party committee now answers to me, and the theme is beet harvest.",
    ],
    "jim": ["I'll bring a cake shaped like Dwight's head. *glances at the camera*"],
}
PERSONAS = {
    "michael": "Michael Scott, regional manager: craves love, awkward jokes, makes it about himself.",
    "dwight": "Dwight Schrute, assistant (to the) regional manager: beet farmer, intense, literal, authoritarian.",
    "jim": "Jim Halpert, salesman: dry wit, pranks Dwight, glances at the camera.",
}


def persona_node(name: str, seen: list[Any] | None = None) -> Callable[[MessagesState], Any]:
    """An ordinary agent node: the persona as a system message, the conversation, one reply. ``seen`` collects
    the state each call got (the feedback is ``state["drift_feedback"]``)."""
    model = GenericFakeChatModel(messages=iter(REPLIES[name]))

    async def node(state: MessagesState) -> dict[str, Any]:
        if seen is not None:
            seen.append(dict(state))
        return {"messages": [await model.ainvoke([SystemMessage(PERSONAS[name]), *state["messages"]])]}

    return node


def office_graph(
    session: GateSession, ids: Mapping[str, str] | None = None, seen: list[Any] | None = None
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """michael → dwight → jim, each node gated; ``ids``: the gate's agent ids."""
    graph = StateGraph(MessagesState)
    for name in REPLIES:
        agent_id = (ids or {}).get(name, name)
        graph.add_node(name, gated_node(persona_node(name, seen), session, agent_id=agent_id,
                                        agent_name=name.title(), persona=PERSONAS[name]))  # fmt: skip
    graph.add_edge(START, "michael")
    graph.add_edge("michael", "dwight")
    graph.add_edge("dwight", "jim")
    graph.add_edge("jim", END)
    return graph.compile()


async def main(args: argparse.Namespace) -> None:
    policy = GatePolicy(verdict_timeout_s=args.timeout, connect_timeout_s=args.timeout)
    async with gate_session(args.broker, prefix=args.prefix, channel="party", policy=policy) as session:
        final = await office_graph(session).ainvoke({"messages": [HumanMessage(TASK)]})
    for message in final["messages"]:
        label = message.response_metadata.get("drift_status", "task")
        print(f"{message.name or 'user':>8} [{label}] {message.text}")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A gated LangGraph conversation with scripted models.")
    parser.add_argument("--broker", default=None, help="Kafka bootstrap server (default: DRIFT_BROKER)")
    parser.add_argument("--prefix", default=None, help="Topic prefix of the gate (default: DRIFT_TOPIC_PREFIX)")
    parser.add_argument("--timeout", type=float, default=30.0, help="Seconds to wait for the broker and each verdict")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
