"""A shadow's candidate judging one live attempt after the fact, on the inputs the live gate had.

The live gate judged the draft with the agent's persona (the draft's own persona text, else the propositions
tree's persona file), the merged proposition sets of its enabled dimensions, the conversation as the agent saw
it (the worker's history view: the channel's trajectory) and the agent's recent commits (similarity). The
candidate gets the same, reconstructed when the shadow lane reaches the attempt: the draft record itself (read
from ``drafts``), the history view's events dated before the live gate *received* the attempt (the live
correction log's ``created_at`` minus its latency), the persona and sets from the candidate's tree (or the
agent's live one) and the candidate's configuration (the agent's live one with the shadow's keys). A retry is
decided against the candidate's own verdicts on the draft's earlier attempts, as the gate decides against its.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from engine.checks import prepare
from engine.gate import (
    RECENT_FOR_SIMILARITY,
    AttemptResult,
    AttemptSummary,
    GateDecision,
    decide,
    pre_decision,
    run_checks,
)
from engine.judges.base import Judge
from engine.judges.budget import SHADOW_LANE
from engine.library import PropositionLibrary
from engine.models import AgentConfig, Event, Persona, TokenUsage
from engine.pricing import PriceTable
from engine.scoring import ScoringTarget
from engine.settings import Settings
from engine.shadow import Shadow
from engine.stepped_log import Held
from streams.runtime.history import HistoryView
from streams.services.candidates import Candidates
from streams.services.configs import ConfigCache
from streams.services.gate import utcnow_iso
from streams.services.records import build_log, build_verdict
from streams.wire.payloads import Draft


@dataclass(frozen=True, slots=True)
class ShadowResult:
    """The candidate's verdict on one attempt: the table row, the topic record and its cost."""

    row: dict[str, Any]
    record: dict[str, Any]
    usage: TokenUsage
    usd: float | None


def received_at(live: dict[str, Any]) -> datetime:
    """When the live gate received the attempt: its correction log's time minus its latency."""
    created: datetime = live["created_at"]
    return created - timedelta(milliseconds=float(live.get("latency_ms") or 0.0))


def _before(events: Sequence[Event], at: datetime) -> list[Event]:
    return [e for e in events if e.ts is None or e.ts < at]


class CandidateJudge:
    """Judges an attempt as a shadow's candidate would have (see the module docstring)."""

    def __init__(self, settings: Settings, configs: ConfigCache, candidates: Candidates, view: HistoryView,
                 prices: PriceTable) -> None:  # fmt: skip
        self.settings, self.configs, self.candidates, self.view, self.prices = (
            settings,
            configs,
            candidates,
            view,
            prices,
        )

    async def __call__(
        self, shadow: Shadow, draft: Draft, live: dict[str, Any], earlier: Sequence[dict[str, Any]]
    ) -> ShadowResult:
        config = shadow.candidate_config(await self.configs.lookup(draft.agent_id) or AgentConfig())
        judge, library = self.candidates.pick(config, SHADOW_LANE)
        received = received_at(live)
        own = _before(self.view.history(draft.agent_id, draft.run_id or ""), received)
        started = time.monotonic()
        early = pre_decision(skip=draft.skip, config=config, prior_actions=len(own), attempt=draft.attempt,
                             text=draft.text)  # fmt: skip
        result, decision = (
            (AttemptResult(attempt=draft.attempt, text=draft.text), early)
            if early is not None
            else await self._checked(draft, config, judge, library, received, own, earlier)
        )
        verdict = build_verdict(draft, result, decision, (time.monotonic() - started) * 1000.0, judge.name)
        log = build_log(draft, verdict, utcnow_iso())
        usd = self.prices.cost(judge.name, result.usage)
        return ShadowResult(_row(shadow, log, live), _record(shadow, log, live, judge.name), result.usage, usd)

    async def _checked(
        self, draft: Draft, config: AgentConfig, judge: Judge, library: PropositionLibrary, received: datetime,
        own: list[Event], earlier: Sequence[dict[str, Any]],
    ) -> tuple[AttemptResult, GateDecision]:  # fmt: skip
        dims = config.enabled_gate_dimensions()
        target = self._target(draft, library, received) if dims else ScoringTarget(draft.agent_id, action=draft.text)
        similar = config.gate_similarity_enabled
        result = await run_checks(
            judge,
            library.psets(draft.agent_id, dims, action=True),
            target,
            config,
            attempt=draft.attempt,
            recent=[prepare(e.text) for e in own[-RECENT_FOR_SIMILARITY:]] if similar else [],
            deadline_s=self.settings.judge_deadline_s,
            parallel=self.settings.gate_parallel,
            hopping=self.settings.gate_window == "hopping",  # the live gate's window
        )
        summaries = [
            AttemptSummary(e["attempt_number"], e["original_text"], float(e["total_score"] or 0.0))
            for e in earlier
            if e["attempt_number"] < draft.attempt
        ]
        return result, decide(result, summaries, config)

    def _target(self, draft: Draft, library: PropositionLibrary, received: datetime) -> ScoringTarget:
        persona = _persona(library, draft)
        name = draft.agent_name or (persona.name if persona else draft.agent_id)
        variables = {"agent_name": name, "action": draft.text}
        if draft.channel:
            variables["channel_name"] = draft.channel
        if draft.recipient:
            variables["recipient_name"] = draft.recipient
        if draft.channel is not None:  # a long channel's with the gap of what the view forgot, as at the gate
            held = self.view.conversation(draft.run_id, draft.channel, exclude=draft.draft_id)
        else:
            held = Held(tuple(self.view.trajectory(draft.run_id, None, (draft.agent_id,), exclude=draft.draft_id)))
        held = held.keep(lambda e: e.ts is None or e.ts < received)
        return ScoringTarget(target_name=name, agent_id=draft.agent_id, persona=persona, events=held.items,
                             gap=held.gap, action=draft.text, variables=variables,
                             context={"agent_id": draft.agent_id})  # fmt: skip


def _persona(library: PropositionLibrary, draft: Draft) -> Persona | None:
    if draft.persona:
        return Persona(id=draft.agent_id, name=draft.agent_name or draft.agent_id, personality=draft.persona)
    return library.persona(draft.agent_id)


def _row(shadow: Shadow, log: dict[str, Any], live: dict[str, Any]) -> dict[str, Any]:
    """The ``shadow_verdicts`` row: the candidate's correction log beside a copy of the live one."""
    return {
        "shadow": shadow.name, "draft_id": log["draft_id"], "attempt_number": log["attempt_number"],
        "agent_id": log["agent_id"], "run_id": log["run_id"], "original_text": log["original_text"],
        "dimension_scores": log["dimension_scores"], "similarity_score": log["similarity_score"],
        "total_score": log["total_score"], "decision": log["decision"], "live_decision": live["decision"],
        "live_dimension_scores": live["dimension_scores"], "live_total_score": live["total_score"],
        "live_token_usage": live["token_usage"], "token_usage": log["token_usage"], "latency_ms": log["latency_ms"],
    }  # fmt: skip


def _record(shadow: Shadow, log: dict[str, Any], live: dict[str, Any], judge: str) -> dict[str, Any]:
    """The ``shadow-verdicts`` record (shape of :class:`streams.wire.payloads.ShadowVerdict`)."""
    return {
        **log, "shadow": shadow.name, "live_verdict_id": f"{log['draft_id']}:{log['attempt_number']}",
        "live_decision": live["decision"], "live_dimension_scores": live["dimension_scores"] or {},
        "live_total_score": live["total_score"], "live_token_usage": live["token_usage"] or {}, "judge": judge,
    }  # fmt: skip
