"""Agent and channel trajectories: who sees what."""

from __future__ import annotations

from engine.evaluation.subjects import (
    acting_agents,
    agent_channels,
    agent_subject,
    agent_trajectory,
    channel_subjects,
    channel_trajectory,
)
from engine.models import Event, EventKind

from .conftest import EventFactory


def test_the_agent_trajectory_holds_its_messages_and_what_was_said_to_it(make_event: EventFactory) -> None:
    events = (
        make_event("#general", "topic for everyone", kind=EventKind.STIMULUS, source="Facilitator", minute=0),
        make_event("ann", "first", minute=1),
        make_event("bob", "not for ann", minute=2),
        make_event("ann", "a private note to ann", kind=EventKind.STIMULUS, source="Bob", minute=3),
        make_event("bob", "a private note to bob", kind=EventKind.STIMULUS, source="Ann", minute=4),
        make_event("#sales", "topic for sales", kind=EventKind.STIMULUS, source="Boss", channel="#sales", minute=5),
        make_event("ann", "second", minute=6),
    )
    trajectory = agent_trajectory(events, "ann")
    assert [e.text for e in trajectory] == ["topic for everyone", "first", "a private note to ann", "second"]
    broadcast = trajectory[0]
    assert (broadcast.agent_id, broadcast.agent_name, broadcast.source) == ("ann", "Ann", "Facilitator")
    assert agent_subject(events, "ann", None).own_actions() == (events[1], events[6])


def test_channels_and_their_conversations(sample_events: tuple[Event, ...]) -> None:
    assert agent_channels(sample_events, "jim") == ("#general", "dm:jim-pam")
    assert agent_channels(sample_events, "kevin") == ("#general",)
    general = channel_trajectory(sample_events, "#general")
    assert len(general) == 39 and all(e.channel == "#general" for e in general)
    subjects = channel_subjects(sample_events, "pam")
    assert [(s.label, s.weight, len(s.events)) for s in subjects] == [("#general", 5, 39), ("dm:jim-pam", 1, 2)]


def test_acting_agents_in_order_of_first_message(make_event: EventFactory) -> None:
    events = (
        make_event("#general", "hello", kind=EventKind.STIMULUS, source="Facilitator"),
        make_event("bob", "b1"),
        make_event("ann", "a1"),
        make_event("bob", "b2"),
    )
    assert acting_agents(events) == ("bob", "ann")
