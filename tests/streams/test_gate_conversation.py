"""The gate judges a draft with the conversation: the channel's events as the agent saw them, windowed 5 + 10,
numbered, against the action-level claims (issue 10, point 5)."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from engine.judges.base import JudgeMode, JudgeRequest
from engine.judges.scripted import ScriptedJudge
from engine.library import PropositionLibrary
from engine.models import AgentConfig, EventKind
from engine.prompts import build_prompt
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from streams.services.configs import ConfigCache
from streams.services.gate import GateDeps, judge_attempt, process_draft
from streams.wire.payloads import Draft, Message
from tests.streams.judging import uniform_judge

CONFIG = AgentConfig(gate_suitability_enabled=True, gate_consistency_enabled=True)


def make_deps(judge: ScriptedJudge) -> GateDeps:
    async def send(topic: str, key: bytes, value: bytes | None, partition: int | None = None) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future

    return GateDeps(Settings(), judge, PropositionLibrary(BUNDLED_PROPOSITIONS), ConfigCache(default=CONFIG),
                    send, recent={}, pending={})  # fmt: skip


def message(n: int, agent: str, text: str, **fields: Any) -> Message:
    return Message.model_validate({"message_id": f"m{n}", "agent_id": agent, "agent_name": agent.title(),
                                   "text": text, "run_id": "r1", "channel": "#general", **fields})  # fmt: skip


def draft(**changes: Any) -> Draft:
    fields = {"draft_id": "d-1", "agent_id": "michael", "agent_name": "Michael", "text": "Who wants a party?",
              "run_id": "r1", "channel": "#general"}  # fmt: skip
    return Draft.model_validate({**fields, **changes})


def requests_of(judge: ScriptedJudge, prefix: str) -> list[JudgeRequest]:
    return [r for r in judge.log.calls if r.claims[0].id.startswith(prefix)]


async def test_the_judge_sees_the_channel_with_stimuli_and_other_agents() -> None:
    judge = uniform_judge(9)
    deps = make_deps(judge)
    deps.view.apply(message(0, "michael", "Welcome!", kind="stimulus", source="Facilitator"))
    for n in range(1, 20):
        agent = ("jim", "pam", "michael")[n % 3]
        deps.view.apply(message(n, agent, f"line {n} from {agent}"))
    deps.view.apply(message(99, "jim", "elsewhere", channel="#random"))  # another channel: not seen
    await judge_attempt(deps, draft())
    (request,) = requests_of(judge, "suitability")
    assert {c.id for c in request.claims} <= {
        "suitability-fits-the-moment-next", "suitability-answers-others-next", "suitability-derails-next",
        "suitability-audience-next",
    }  # fmt: skip
    events = request.trajectory
    assert (len(events), request.first_part, request.omitted) == (15, 5, 5)  # first 5, last 10 of 20 events
    assert events[0].kind is EventKind.STIMULUS and events[0].source == "Facilitator"
    assert {e.agent_id for e in events} == {"michael", "jim", "pam"}
    assert [e.text for e in events[-2:]] == ["line 18 from jim", "line 19 from pam"]
    assert all(e.text != "elsewhere" for e in events)
    prompt = build_prompt(request)
    variable = prompt.conversation() + prompt.draft
    assert re.search(r"\[event #20, [0-9T:Z-]+\] Pam acts: \[MESSAGE\] line 19 from pam\n", variable)
    assert "the judged action is event #21" in variable
    assert request.action == "Who wants a party?" and request.persona is not None  # suitability: persona


async def test_consistency_needs_an_action_of_the_agent_itself() -> None:
    judge = uniform_judge(9)
    deps = make_deps(judge)
    deps.view.apply(message(1, "jim", "Morning."))
    await judge_attempt(deps, draft())
    assert requests_of(judge, "consistency") == []  # others' messages are no prior action of michael
    deps.view.apply(message(2, "michael", "Morning, Jim!"))
    await judge_attempt(deps, draft(draft_id="d-2"))
    (request,) = requests_of(judge, "consistency")
    assert request.persona is None and [e.text for e in request.trajectory] == ["Morning.", "Morning, Jim!"]


async def test_a_commit_is_in_the_conversation_at_once_and_never_in_its_own_redelivery() -> None:
    anti_patterns = [{"proposition": p, "value": 0} for p in ("*-derails*", "*-new-personality*")]
    judge = ScriptedJudge.from_rules({"default": 9, "rules": anti_patterns})  # every draft passes
    deps = make_deps(judge)
    deps.view.apply(message(1, "jim", "Morning."))
    await process_draft(deps, draft(text="Morning, Jim!"), time.monotonic())
    await process_draft(deps, draft(text="Morning, Jim!"), time.monotonic())  # the same draft redelivered
    await judge_attempt(deps, draft(draft_id="d-2", text="Party at noon."))
    # the redelivery is re-emitted from its verdict record, never judged again (let alone against itself)
    first, nxt = (r.trajectory for r in requests_of(judge, "suitability"))
    assert [e.text for e in first] == ["Morning."]
    assert [e.text for e in nxt] == ["Morning.", "Morning, Jim!"]  # read-your-writes, before the feed has it
    assert nxt[-1].ts is not None and nxt[-1].agent_name == "Michael"
    assert deps.view.apply(message(5, "michael", "Morning, Jim!").model_copy(update={"message_id": "d-1"})) is False


async def test_a_direct_message_sees_the_agents_direct_events() -> None:
    judge = uniform_judge(9)
    deps = make_deps(judge)
    deps.view.apply(message(1, "michael", "Got a minute?", channel=None, kind="stimulus", source="Jan"))
    deps.view.apply(message(2, "jim", "in general"))
    await judge_attempt(deps, draft(channel=None, recipient="Jan"))
    (request,) = requests_of(judge, "suitability")
    assert [(e.kind, e.text) for e in request.trajectory] == [(EventKind.STIMULUS, "Got a minute?")]
    assert request.mode is JudgeMode.SCORE


async def test_the_first_judged_draft_waits_for_the_history_replay_once() -> None:
    judge = uniform_judge(9)
    deps = make_deps(judge)
    calls: list[float] = []

    class Feed:
        async def caught_up(self, timeout_s: float) -> bool:
            calls.append(timeout_s)
            if len(calls) == 2:  # the replay completes during the second wait
                deps.view.apply(message(1, "jim", "Replayed from the topic."))
                return True
            return False

    deps.feed = Feed()
    for n in range(4):
        await judge_attempt(deps, draft(draft_id=f"d-{n}"))
    assert len(calls) == 2 and all(0 < t <= 2.0 for t in calls)  # bounded, and never again once caught up
    trajectories = [[e.text for e in r.trajectory] for r in requests_of(judge, "suitability")]
    assert trajectories[1:] == [["Replayed from the topic."]] * 3


async def test_past_the_views_cap_the_judge_sees_the_conversations_first_events_and_true_numbers() -> None:
    """250 events in the channel: the view holds 10 + 71..90 of them; the judge sees what it would see over the
    whole conversation (the first 5, 235 omitted, the last 10 numbered #241-#250), on the gate's real path."""
    judge = uniform_judge(9)
    deps = make_deps(judge)
    for n in range(250):
        deps.view.apply(message(n, ("jim", "pam", "michael")[n % 3], f"line {n}"))
    assert len(deps.view.trajectory("r1", "#general", [])) < 100  # bounded: the view forgot old events
    await judge_attempt(deps, draft())
    (request,) = requests_of(judge, "suitability")
    assert (len(request.trajectory), request.first_part, request.omitted) == (15, 5, 235)
    assert [e.text for e in request.trajectory] == [f"line {n}" for n in (*range(5), *range(240, 250))]
    variable = build_prompt(request).conversation() + build_prompt(request).draft
    assert re.search(r"\[event #250, [0-9T:Z-]+] Jim acts: \[MESSAGE\] line 249\n", variable)
    assert "the judged action is event #251" in variable
