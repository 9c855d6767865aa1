"""A gated AutoGen AgentChat team, offline: three personas whose models are AutoGen's own replay stand-in.

    drift up --judge scripted:ops/examples/integrations/judge_rules.yaml &
    drift config set michael gate_adherence_enabled=true     # and the same for dwight and jim
    python ops/examples/integrations/autogen_team.py [--selector] [--broker 127.0.0.1:9092] [--prefix drift.]

Dwight's first reply drifts into the generic-assistant voice; the gate sends it back with its feedback, his next
reply is committed, and the team's transcript holds only committed text. Each transcript line carries the
adapter's label (committed, ungated, ...). In a real team the ``ReplayChatCompletionClient`` is your model client
(``OpenAIChatCompletionClient``, ``AnthropicChatCompletionClient``, ...); nothing else changes. Needs the
``[autogen]`` extra. Exit code 0 when the team ran (a gate that cannot be reached only labels the lines).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import ChatAgent, TaskResult, Team
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat
from autogen_ext.models.replay import ReplayChatCompletionClient

from streams.adapters import GatePolicy, GateSession, gate_session
from streams.adapters.autogen import GatedAgent

TASK = "Plan the office party, one idea each."
#: What each persona's (scripted) model answers, turn after turn: Dwight's first answer is the drift.
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


def office_team(
    session: GateSession, ids: Mapping[str, str] | None = None, *, selector: bool = False
) -> tuple[RoundRobinGroupChat | SelectorGroupChat, dict[str, GatedAgent]]:
    """The three gated personas in a team built exactly as without the gate; ``ids``: the gate's agent ids."""
    agents = {}
    for name, replies in REPLIES.items():
        model = ReplayChatCompletionClient(replies)
        agents[name] = GatedAgent(
            AssistantAgent(name, model_client=model, system_message=PERSONAS[name]), session,
            agent_id=(ids or {}).get(name, name), agent_name=name.title(), persona=PERSONAS[name],
        )  # fmt: skip
    members: list[ChatAgent | Team] = list(agents.values())
    if selector:  # the selector's model names the next speaker; scripted too
        chooser = ReplayChatCompletionClient(list(REPLIES))
        return SelectorGroupChat(members, model_client=chooser, max_turns=len(members)), agents
    return RoundRobinGroupChat(members, max_turns=len(members)), agents


def transcript(result: TaskResult) -> list[str]:
    """One line per message of the team's transcript, with the adapter's label."""
    lines = []
    for message in result.messages:
        label = getattr(message, "metadata", {}).get("drift_status", "")
        lines.append(f"{message.source:>8} [{label or 'task'}] {message.to_text()}")
    return lines


async def main(args: argparse.Namespace) -> None:
    policy = GatePolicy(verdict_timeout_s=args.timeout, connect_timeout_s=args.timeout)
    async with gate_session(args.broker, prefix=args.prefix, channel="party", policy=policy) as session:
        team, _ = office_team(session, selector=args.selector)
        result = await team.run(task=TASK)
    print("\n".join(transcript(result)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="A gated AutoGen team with scripted models.")
    parser.add_argument("--broker", default=None, help="Kafka bootstrap server (default: DRIFT_BROKER)")
    parser.add_argument("--prefix", default=None, help="Topic prefix of the gate (default: DRIFT_TOPIC_PREFIX)")
    parser.add_argument("--selector", action="store_true", help="SelectorGroupChat instead of RoundRobinGroupChat")
    parser.add_argument("--timeout", type=float, default=30.0, help="Seconds to wait for the broker and each verdict")
    return parser.parse_args(argv)


if __name__ == "__main__":
    asyncio.run(main(parse_args()))
