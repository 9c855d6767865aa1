"""Factories shared by the intervention tests: events, personas, step contexts and scripted judges."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from engine.interventions import StepContext
from engine.judges.scripted import ScriptedJudge
from engine.models import AgentConfig, Event, EventKind, Persona

NAMES = {
    "michael": "Michael Scott",
    "dwight": "Dwight Schrute",
    "jim": "Jim Halpert",
    "pam": "Pam Beesly",
}

MakeEvents = Callable[..., list[Event]]
MakeContext = Callable[..., StepContext]
MakeJudge = Callable[..., ScriptedJudge]


def persona(agent_id: str) -> Persona:
    return Persona(id=agent_id, name=NAMES.get(agent_id, agent_id.title()))


@pytest.fixture
def make_events() -> MakeEvents:
    """``make_events("jim", ["a", "b"])``: the agent's own messages, in order, on #sales."""

    def make(agent_id: str, texts: Sequence[str], *, kind: EventKind = EventKind.ACTION) -> list[Event]:
        name = NAMES.get(agent_id, agent_id)
        return [Event(agent_id, name, text, kind=kind, channel="sales") for text in texts]

    return make


@pytest.fixture
def make_context(make_events: MakeEvents) -> MakeContext:
    """A step context; ``messages`` gives each agent that many own messages (all on the channel too)."""

    def make(
        agent_ids: Sequence[str] = ("michael",),
        *,
        messages: Mapping[str, int] | None = None,
        texts: Mapping[str, Sequence[str]] | None = None,
        configs: Mapping[str, AgentConfig] | None = None,
        step: int = 3,
    ) -> StepContext:
        own: dict[str, list[str]] = {a: [f"{a} says thing {i}" for i in range(n)] for a, n in (messages or {}).items()}
        own.update({a: list(t) for a, t in (texts or {}).items()})
        histories = {a: make_events(a, t) for a, t in own.items()}
        trajectory = [event for events in histories.values() for event in events]
        return StepContext(
            run_id="run-1",
            channel="sales",
            step=step,
            agent_ids=tuple(agent_ids),
            personas={a: persona(a) for a in NAMES},
            histories=histories,
            trajectory=trajectory,
            configs=dict(configs or {}),
        )

    return make


@pytest.fixture
def make_judge() -> MakeJudge:
    """``make_judge(rule, rule, default=9, default_check=True)``: a scripted judge with those rules."""

    def make(*rules: dict[str, Any], default: int = 9, default_check: bool = True) -> ScriptedJudge:
        return ScriptedJudge.from_rules({"default": default, "default_check": default_check, "rules": list(rules)})

    return make
