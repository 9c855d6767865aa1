"""Unit scores: the samples the bootstrap interval of a regression check resamples.

- Agent-level dimensions: **every message of the agent is scored on its own** — the message is the judged
  action, the agent's trajectory before it is the context (windowed like the trajectory score; fluency
  gets the n-gram statistics of the agent's messages up to and including it). Consistency gives 9 to a
  first message, which has nothing to be consistent with.
- Environment-level dimensions: the units are the channel scores the agent's score was built from.

The dimension score itself stays the single trajectory-level judgment (TinyTroupe's way, and what the
1.0-point regression rule compares); the units only estimate how much that score could move if the agent
had written a different sample of messages.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.evaluation.scorers import ScoringOptions, fluency_evidence, require_persona
from engine.evaluation.subjects import AgentSubject
from engine.judges.base import Judge
from engine.models import Dimension, Event, EventKind
from engine.propositions import PropositionSet
from engine.scoring import ScoringTarget, score_dimension


@dataclass(frozen=True, slots=True)
class MessageUnit:
    """One of the agent's messages with the trajectory that preceded it."""

    message: Event
    history: tuple[Event, ...]


def message_units(subject: AgentSubject) -> tuple[MessageUnit, ...]:
    units = []
    for index, event in enumerate(subject.trajectory):
        if event.kind is EventKind.ACTION and event.agent_id == subject.agent_id:
            units.append(MessageUnit(event, subject.trajectory[:index]))
    return tuple(units)


def unit_target(pset: PropositionSet, subject: AgentSubject, unit: MessageUnit) -> ScoringTarget:
    """The judged message as the action, its history as the trajectory."""
    supplementary = None
    if pset.dimension is Dimension.FLUENCY:
        earlier = [e.text for e in unit.history if e.kind is EventKind.ACTION and e.agent_id == subject.agent_id]
        supplementary = fluency_evidence([*earlier, unit.message.text])
    variables = {"channel_name": unit.message.channel} if unit.message.channel else {}
    return ScoringTarget(
        target_name=subject.agent_name,
        agent_id=subject.agent_id,
        persona=subject.persona,
        events=unit.history,
        action=unit.message.text,
        variables=variables,
        supplementary=supplementary,
    )


async def message_score(
    judge: Judge, pset: PropositionSet, subject: AgentSubject, unit: MessageUnit, options: ScoringOptions
) -> float:
    """The dimension score of one message."""
    require_persona(pset, subject)
    result = await score_dimension(
        judge,
        pset,
        unit_target(pset, subject, unit),
        window_defaults=options.window_defaults,
        strategy=options.strategy,
    )
    return result.score
