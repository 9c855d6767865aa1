"""Factories for judge requests, claims, personas and events (tests and benchmarks)."""

from __future__ import annotations

from collections.abc import Sequence

from engine.judges.base import Claim, JudgeMode, JudgeRequest
from engine.models import Event, EventKind, Persona


def make_claims(count: int, *, prefix: str = "claim") -> tuple[Claim, ...]:
    return tuple(Claim(id=f"{prefix}-{i}", text=f"The agent satisfies property number {i}.") for i in range(count))


def make_persona(agent_id: str = "michael", name: str = "Michael Scott") -> Persona:
    return Persona(
        id=agent_id,
        name=name,
        personality="Warm, attention-seeking, prone to awkward jokes",
        style="Informal, rambling, references himself",
        beliefs=("The office is a family",),
        behaviours=("Turns conversations towards himself",),
    )


def make_event(
    text: str,
    *,
    agent_id: str = "michael",
    agent_name: str = "Michael Scott",
    stimulus_from: str | None = None,
) -> Event:
    if stimulus_from is not None:
        return Event(agent_id, agent_name, text, kind=EventKind.STIMULUS, source=stimulus_from)
    return Event(agent_id, agent_name, text)


def make_events(count: int, *, agent_id: str = "michael", agent_name: str = "Michael Scott") -> tuple[Event, ...]:
    return tuple(make_event(f"message number {i}", agent_id=agent_id, agent_name=agent_name) for i in range(count))


def make_request(
    mode: JudgeMode = JudgeMode.SCORE,
    *,
    claims: Sequence[Claim] | int = 1,
    target_name: str = "Michael Scott",
    agent_id: str | None = "michael",
    persona: Persona | None = None,
    events: Sequence[Event] = (),
    first_part: int | None = None,
    omitted: int = 0,
    action: str | None = "I think we should all go bowling tonight.",
    supplementary: str | None = None,
    double_check: bool = False,
    share_history: bool = False,
) -> JudgeRequest:
    """A judge request; ``claims`` is a list or a number of generated claims."""
    claim_tuple = make_claims(claims) if isinstance(claims, int) else tuple(claims)
    return JudgeRequest(
        mode=mode,
        claims=claim_tuple,
        target_name=target_name,
        agent_id=agent_id,
        persona=persona,
        trajectory=tuple(events),
        first_part=len(events) if first_part is None else first_part,
        omitted=omitted,
        action=action,
        supplementary=supplementary,
        double_check=double_check,
        share_history=share_history,
    )
