"""Whatever the provider does, every draft gets a verdict within the fail-open deadline plus 1 s (issue 10,
defect 3): the Anthropic judge through the real ``anthropic`` SDK against the local Messages-API fake."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from engine.judges.anthropic import AnthropicJudge
from engine.judges.llm import CallPolicy
from engine.library import PropositionLibrary
from engine.models import AgentConfig
from engine.settings import BUNDLED_PROPOSITIONS, Settings
from ops.fakes.messages_api import MessagesApiServer
from ops.fakes.server import Behaviour, ReceivedRequest
from streams.services.configs import ConfigCache
from streams.services.gate import GateDeps, process_draft
from streams.wire.payloads import Draft
from tests.streams.test_verdict_records import Recorder

DEADLINE_S = 1.0
FAULTS: dict[str, Behaviour] = {
    "ratelimited": Behaviour.rate_limited(retry_after=0.3),
    "servererror": Behaviour.server_error(500),
    "overloaded": Behaviour.overloaded(),
    "hangs": Behaviour.slow(30.0),
    "prose": Behaviour.malformed(),
    "truncated": Behaviour.truncated_body(),
}


def behaviour_for(request: ReceivedRequest) -> Behaviour:
    """The fault named in the draft's text, on every call (``healthy``: a valid answer)."""
    text = orjson.dumps(request.body).decode()
    return next((b for name, b in FAULTS.items() if f"fault-{name}" in text), Behaviour.auto(value=8))


@pytest.mark.timed  # a 1 s judge deadline: a busy core made the truncated body time out instead (a full run)
async def test_every_draft_gets_a_verdict_within_the_deadline_plus_one_second_whatever_the_provider_does() -> None:
    async with MessagesApiServer(behaviour_for) as server:
        policy = CallPolicy(deadline_s=DEADLINE_S, backoff_base_s=0.02, backoff_max_s=0.2)
        judge = AnthropicJudge(api_key="test-key", model="claude-test", base_url=server.base_url, policy=policy)
        send = Recorder()
        config = AgentConfig(gate_suitability_enabled=True)
        deps = GateDeps(Settings(judge_deadline_s=DEADLINE_S), judge, PropositionLibrary(BUNDLED_PROPOSITIONS),
                        ConfigCache(default=config), send, {}, {})  # fmt: skip
        names = [*FAULTS, "healthy"] * 2 + ["truncated"]  # 13 drafts, as in the report
        drafts = [Draft(draft_id=f"d{i}", agent_id=f"agent{i}", text=f"fault-{name} on the paper order")
                  for i, name in enumerate(names)]  # fmt: skip

        async def timed(draft: Draft) -> float:
            started = time.monotonic()
            await process_draft(deps, draft, started)
            return time.monotonic() - started

        took = await asyncio.gather(*(timed(d) for d in drafts))
        await judge.aclose()

    verdicts: dict[str, dict[str, Any]] = {v["draft_id"]: v for v in send.values(deps.topics.verdicts)}
    assert sorted(verdicts) == sorted(d.draft_id for d in drafts)  # nothing lost
    assert max(took) <= DEADLINE_S + 1.0, took
    for draft, name in zip(drafts, names, strict=True):
        verdict = verdicts[draft.draft_id]
        scores = verdict["scores"].values()
        if name == "healthy":
            assert verdict["outcome"] != "timeout_pass_through" and not any(s["timed_out"] for s in scores), verdict
        else:  # failed open, marked, never a lost draft
            assert (verdict["decision"], verdict["outcome"]) == ("commit", "timeout_pass_through"), verdict
            assert all(s["timed_out"] for s in scores)
    truncated = verdicts[drafts[names.index("truncated")].draft_id]["scores"]["suitability"]
    assert truncated["error"] and "unreadable response body" in truncated["error"], truncated
