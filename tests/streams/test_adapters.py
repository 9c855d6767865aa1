"""The framework adapters on a scripted stand-in of the gate: AutoGen teams and LangGraph graphs with offline
models (AutoGen's ReplayChatCompletionClient, LangChain's GenericFakeChatModel), the step directives, and the
failure policy; a verdict that never comes on the real broker (timed, so apart from the long tests of the real
gate: tests/streams/test_adapters_e2e.py)."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any

import pytest

from engine.errors import ReplyTimeout
from engine.settings import Settings
from streams.adapters import GatePolicy, GateSession, gate_session
from streams.client import GateClient
from streams.embedded import free_port
from streams.wire.kafka import create_topics
from streams.wire.payloads import DirectiveOut, Directives, Message, Verdict
from tests.stack import Stack

autogen_agents = pytest.importorskip("autogen_agentchat.agents", reason="the [autogen] extra is not installed")
pytest.importorskip("langgraph.graph", reason="the [langgraph] extra is not installed")

from autogen_agentchat.agents import AssistantAgent  # noqa: E402
from autogen_agentchat.messages import TextMessage  # noqa: E402
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: E402
from autogen_ext.models.replay import ReplayChatCompletionClient  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402

from ops.examples.integrations.autogen_team import REPLIES, TASK  # noqa: E402
from streams.adapters.autogen import GatedAgent  # noqa: E402
from streams.adapters.langgraph import gated_node  # noqa: E402

DRIFT = "As an AI assistant, I'd be happy to help you with that."
FEEDBACK = "adherence 2 (failed): reads like a generic assistant. You may stay silent instead (skip: true)."


class ScriptedGate(GateClient):
    """The gate's replies without a broker: a draft holding "happy to help" is sent back, anything else is
    committed; steps answer with ``nudges``; ``fail`` raises instead, as a client whose verdict never comes."""

    def __init__(self, nudges: dict[str, str] | None = None, fail: bool = False) -> None:
        super().__init__(settings=Settings())
        self.nudges, self.fail = nudges or {}, fail
        self.drafts: list[tuple[str, int, str, bool]] = []
        self.steps: list[tuple[int, list[str]]] = []
        self.stimuli: list[Message] = []

    async def check(self, *, agent_id: str, text: str, draft_id: str | None = None, attempt: int = 1,
                    timeout_s: float | None = None, **fields: Any) -> Verdict:  # fmt: skip
        if self.fail:
            raise ReplyTimeout(f"no reply for verdict {draft_id} #{attempt} within {timeout_s:g}s")
        skip = bool(fields.get("skip"))
        self.drafts.append((agent_id, attempt, text, skip))
        decision, outcome = (
            ("skip", "skipped") if skip else ("commit", "passed" if attempt == 1 else "passed_after_retry")
        )
        if not skip and "happy to help" in text:
            decision, outcome = "retry", "corrected"
        return Verdict(draft_id=draft_id or "d", attempt=attempt, agent_id=agent_id, decision=decision,
                       outcome=outcome, text="" if decision != "commit" else text,
                       feedback=FEEDBACK if decision == "retry" else None, judge="scripted")  # fmt: skip

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None,
                   timeout_s: float | None = None) -> Directives:  # fmt: skip
        self.steps.append((step, agent_ids))
        found = [DirectiveOut(agent_id=a, kind="variety", text=self.nudges[a]) for a in agent_ids if a in self.nudges]
        return Directives(run_id=run_id, step=step, channel=channel, directives=found)

    async def publish_message(self, message: Message) -> None:
        self.stimuli.append(message)


def assistant(name: str, replies: list[str]) -> AssistantAgent:
    return AssistantAgent(name, model_client=ReplayChatCompletionClient(replies), system_message=f"You are {name}.")


async def test_an_autogen_team_sees_only_committed_text_and_the_drifting_agent_gets_the_feedback() -> None:
    gate = ScriptedGate(nudges={"dwight": "Propose something entirely new."})
    session = GateSession(gate, run_id="r1", channel="office")
    dwight = assistant("dwight", [DRIFT, "Bears. Beets. I will run this party like a beet harvest."])
    team = RoundRobinGroupChat(
        [GatedAgent(assistant("michael", ["That's what she said!"]), session),
         GatedAgent(dwight, session), GatedAgent(assistant("jim", ["*glances at the camera*"]), session)],
        max_turns=3,
    )  # fmt: skip
    result = await team.run(task="Plan the office party.")

    said = [(m.source, m.to_text()) for m in result.messages]
    assert said == [("user", "Plan the office party."), ("michael", "That's what she said!"),
                    ("dwight", "Bears. Beets. I will run this party like a beet harvest."),
                    ("jim", "*glances at the camera*")]  # fmt: skip
    assert [(a, n, s) for a, n, _, s in gate.drafts if a == "dwight"] == [("dwight", 1, False), ("dwight", 2, False)]
    assert gate.steps == [(0, ["michael"]), (1, ["dwight"]), (2, ["jim"])]  # one step per turn, in order
    private = [m.content for m in await dwight.model_context.get_messages()]
    assert any(isinstance(c, str) and "Propose something entirely new." in c for c in private)  # the directive
    assert any(isinstance(c, str) and FEEDBACK in c for c in private)  # the feedback, in the agent's own context
    assert result.messages[2].metadata["drift_outcome"] == "passed_after_retry"
    assert [m.text for m in gate.stimuli] == ["Plan the office party."]  # the user's task, once; agents not at all


async def test_a_langgraph_node_retries_with_the_feedback_in_state_and_commits_once() -> None:
    gate = ScriptedGate()
    session = GateSession(gate, run_id="r2", channel="office")
    seen: list[tuple[int, str | None]] = []
    model = GenericFakeChatModel(messages=iter([DRIFT, "Identity theft is not a joke, Jim. Beets at the party."]))

    async def dwight(state: MessagesState) -> dict[str, Any]:
        seen.append((state["drift_attempt"], state["drift_feedback"]))  # type: ignore[typeddict-item]
        return {"messages": [await model.ainvoke(state["messages"])]}

    def michael(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage("I declare... a party!")]}

    graph = StateGraph(MessagesState)
    graph.add_node("michael", gated_node(michael, session, agent_id="michael", agent_name="Michael"))
    graph.add_node("dwight", gated_node(dwight, session, agent_id="dwight", agent_name="Dwight"))
    graph.add_edge(START, "michael")
    graph.add_edge("michael", "dwight")
    graph.add_edge("dwight", END)
    final = await graph.compile().ainvoke({"messages": [HumanMessage("Plan the office party.")]})

    texts = [(m.name, m.text) for m in final["messages"][1:]]
    assert texts == [
        ("Michael", "I declare... a party!"),
        ("Dwight", "Identity theft is not a joke, Jim. Beets at the party."),
    ]
    assert seen == [(1, None), (2, FEEDBACK)]
    assert final["messages"][2].response_metadata["drift_status"] == "committed"


async def test_a_silent_agent_adds_nothing_to_the_graph() -> None:
    gate = ScriptedGate()
    session = GateSession(gate, run_id="r3")

    def quiet(state: MessagesState) -> dict[str, Any]:
        return {"messages": []}

    graph = StateGraph(MessagesState)
    graph.add_node("kevin", gated_node(quiet, session, agent_id="kevin"))
    graph.add_edge(START, "kevin")
    graph.add_edge("kevin", END)
    final = await graph.compile().ainvoke({"messages": [HumanMessage("Anyone?")]})
    assert [m.text for m in final["messages"]] == ["Anyone?"]
    assert gate.drafts == [("kevin", 1, "", True)]  # the silence is a skip draft the gate logs


@pytest.mark.parametrize("mode", ["open", "closed"])
async def test_a_verdict_that_never_comes_follows_the_policy_in_one_line(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    session = GateSession(ScriptedGate(fail=True), policy=GatePolicy(on_failure=mode, verdict_timeout_s=0.2))  # type: ignore[arg-type]
    agent = GatedAgent(assistant("michael", ["Hello, Scranton!"]), session)
    with caplog.at_level(logging.WARNING, logger="streams.adapters"):
        response = await agent.on_messages([TextMessage(content="Say hi.", source="user")], _token())
    expected = ("Hello, Scranton!", "ungated") if mode == "open" else ("", "blocked")
    assert (response.chat_message.to_text(), response.chat_message.metadata["drift_status"]) == expected
    (line,) = [r.getMessage() for r in caplog.records if r.name == "streams.adapters"]
    assert "no reply for verdict" in line and f"fail-{mode}" in line and "\n" not in line


@pytest.mark.timed
async def test_an_unreachable_broker_never_hangs_the_run(caplog: pytest.LogCaptureFixture) -> None:
    policy = GatePolicy(connect_timeout_s=1.0)
    started = time.perf_counter()
    with caplog.at_level(logging.WARNING, logger="streams.adapters"):
        async with gate_session(f"127.0.0.1:{free_port()}", prefix="nowhere.", policy=policy) as session:
            team = RoundRobinGroupChat([GatedAgent(assistant("jim", ["Bears. Beets."]), session)], max_turns=1)
            result = await team.run(task="Say something.")
    assert time.perf_counter() - started < 5.0
    assert [m.to_text() for m in result.messages] == ["Say something.", "Bears. Beets."]
    assert result.messages[1].metadata["drift_status"] == "ungated"
    lines = [r.getMessage() for r in caplog.records if r.name == "streams.adapters"]
    assert lines[0].startswith("drift gate: cannot connect to 127.0.0.1:") and "fail-open" in lines[0]
    assert not [r for r in caplog.records if r.getMessage().startswith("Unable connect")]  # aiokafka's, held back


@pytest.mark.e2e
@pytest.mark.timed
async def test_a_verdict_timeout_fails_closed_without_hanging_the_team(stack: Stack) -> None:
    """On the real broker (the embedded stack): the topics exist, but no worker answers."""
    idle = stack.settings(f"idle{uuid.uuid4().hex[:6]}.")  # topics, but no worker
    await create_topics(idle)
    policy = GatePolicy(on_failure="closed", verdict_timeout_s=0.5, step_timeout_s=0.5)
    started = asyncio.get_running_loop().time()
    async with gate_session(settings=idle, policy=policy) as session:
        drifting = AssistantAgent("kevin", model_client=ReplayChatCompletionClient([REPLIES["dwight"][0]]))
        team = RoundRobinGroupChat([GatedAgent(drifting, session)], max_turns=1)
        result = await team.run(task=TASK)
    assert asyncio.get_running_loop().time() - started < 10
    assert [(m.source, m.to_text()) for m in result.messages] == [("user", TASK), ("kevin", "")]
    assert result.messages[1].metadata["drift_status"] == "blocked"
    assert isinstance(session, GateSession) and session.step_no == 1


async def test_the_agents_own_failure_is_raised_not_taken_for_the_gates() -> None:
    session = GateSession(ScriptedGate())

    async def broken(state: MessagesState) -> dict[str, Any]:
        if state["drift_attempt"] > 1:  # type: ignore[typeddict-item]
            raise ConnectionError("the model endpoint is down")
        return {"messages": [AIMessage(DRIFT)]}

    node = gated_node(broken, session, agent_id="andy")
    with pytest.raises(ConnectionError, match="model endpoint"):
        await node({"messages": [HumanMessage("Sing.")]})


def _token() -> Any:
    from autogen_core import CancellationToken

    return CancellationToken()


def test_importing_the_package_pulls_in_no_framework() -> None:
    import subprocess
    import sys

    frameworks = "{'autogen_agentchat', 'autogen_core', 'langgraph', 'langchain_core'}"
    code = f"import sys, streams.adapters; print(sorted({{m.split('.')[0] for m in sys.modules}} & {frameworks}))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
    assert asyncio.iscoroutinefunction(GatedAgent.on_messages)


class SilentSteps(ScriptedGate):
    """Verdicts come, directives never do."""

    async def step(self, *, run_id: str, step: int, agent_ids: list[str], channel: str | None = None,
                   timeout_s: float | None = None) -> Directives:  # fmt: skip
        raise ReplyTimeout(f"no reply for step {run_id} #{step} within {timeout_s:g}s")


async def test_missing_directives_cost_one_warning_and_the_turn_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    gate = SilentSteps()
    session = GateSession(gate, run_id="r4", policy=GatePolicy(step_timeout_s=0.1))
    node = gated_node(lambda state: {"messages": [AIMessage("Dunder Mifflin, this is Pam.")]}, session, agent_id="pam")
    with caplog.at_level(logging.WARNING, logger="streams.adapters"):
        first = await node({"messages": [HumanMessage("Answer the phone.", id="h1")]})
        second = await node({"messages": [HumanMessage("Answer the phone.", id="h1")]})
    assert [u["messages"][0].text for u in (first, second)] == ["Dunder Mifflin, this is Pam."] * 2
    lines = [r.getMessage() for r in caplog.records if r.name == "streams.adapters"]
    assert len(lines) == 2 and all("no directives for pam" in line and "within 0.1s" in line for line in lines)
    assert [m.text for m in gate.stimuli] == ["Answer the phone."]  # the same human message, published once
    assert session.step_no == 2  # the failed steps still used their numbers: no step id is ever reused


async def test_a_stimulus_the_wire_refuses_costs_one_line_not_the_turn(caplog: pytest.LogCaptureFixture) -> None:
    gate = ScriptedGate()
    agent = GatedAgent(assistant("oscar", ["Actually, that is three reams."]), GateSession(gate, run_id="r5"))
    with caplog.at_level(logging.WARNING, logger="streams.adapters"):
        response = await agent.on_messages([TextMessage(content="bad\x00byte", source="user")], _token())
    assert response.chat_message.to_text() == "Actually, that is three reams." and gate.stimuli == []
    (line,) = [r.getMessage() for r in caplog.records if r.name == "streams.adapters"]
    assert line.startswith("drift gate: stimulus from user not published:") and "NUL" in line and "\n" not in line
