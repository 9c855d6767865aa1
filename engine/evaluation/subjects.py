"""What the scorers judge: an agent's own trajectory, and whole channels.

- The **agent trajectory** holds the agent's own messages (actions) and what was said *to* it: stimuli
  addressed to it and broadcasts (a facilitator's prompt, say) to the channels it posted in, in order.
  Other agents' messages are left out on purpose: the evaluation windows (``first_n``/``last_n``) then
  count the agent's own history, as seed doc 000 describes them, instead of being filled by a busy
  channel; how the agents sound *together* is what the environment-level dimensions judge.
- A **channel trajectory** is the conversation of one channel: every message posted there plus the
  broadcasts to it. Environment-level dimensions (convergence, ideas quantity) judge it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from engine.evaluation.messages import is_broadcast
from engine.models import Event, EventKind, Persona


@dataclass(frozen=True, slots=True)
class AgentSubject:
    """One agent to evaluate: its id and display name, its persona (if any) and its trajectory."""

    agent_id: str
    agent_name: str
    persona: Persona | None
    trajectory: tuple[Event, ...]

    def own_actions(self) -> tuple[Event, ...]:
        return tuple(e for e in self.trajectory if e.kind is EventKind.ACTION and e.agent_id == self.agent_id)


@dataclass(frozen=True, slots=True)
class ChannelSubject:
    """One channel an agent took part in; ``weight`` is the number of the agent's messages there."""

    channel: str | None
    events: tuple[Event, ...]
    weight: int

    @property
    def label(self) -> str:
        return self.channel if self.channel is not None else "(no channel)"


def acting_agents(events: Sequence[Event]) -> tuple[str, ...]:
    """Ids of the agents with at least one message, in order of their first message."""
    return tuple(dict.fromkeys(e.agent_id for e in events if e.kind is EventKind.ACTION))


def agent_name_of(events: Sequence[Event], agent_id: str) -> str:
    """The display name the agent used in its messages (its id when it never acted)."""
    for event in events:
        if event.kind is EventKind.ACTION and event.agent_id == agent_id:
            return event.agent_name
    return agent_id


def agent_channels(events: Sequence[Event], agent_id: str) -> tuple[str | None, ...]:
    """The channels the agent posted in, in order of its first message there."""
    return tuple(dict.fromkeys(e.channel for e in events if e.kind is EventKind.ACTION and e.agent_id == agent_id))


def _perceived(event: Event, agent_id: str, name: str, channels: set[str | None]) -> Event | None:
    if event.agent_id == agent_id:
        return event
    if is_broadcast(event) and (event.channel is None or event.channel in channels):
        return replace(event, agent_id=agent_id, agent_name=name)
    return None


def agent_trajectory(events: Sequence[Event], agent_id: str) -> tuple[Event, ...]:
    """The agent's view of the conversation (see the module docstring)."""
    name = agent_name_of(events, agent_id)
    channels = set(agent_channels(events, agent_id))
    perceived = (_perceived(e, agent_id, name, channels) for e in events)
    return tuple(e for e in perceived if e is not None)


def channel_trajectory(events: Sequence[Event], channel: str | None) -> tuple[Event, ...]:
    """Every message posted in ``channel`` and every broadcast to it, in order."""
    return tuple(e for e in events if e.channel == channel and (e.kind is EventKind.ACTION or is_broadcast(e)))


def agent_subject(events: Sequence[Event], agent_id: str, persona: Persona | None) -> AgentSubject:
    return AgentSubject(agent_id, agent_name_of(events, agent_id), persona, agent_trajectory(events, agent_id))


def channel_subjects(events: Sequence[Event], agent_id: str) -> tuple[ChannelSubject, ...]:
    """The channels the agent took part in, each with its whole conversation."""
    subjects = []
    for channel in agent_channels(events, agent_id):
        conversation = channel_trajectory(events, channel)
        weight = sum(1 for e in conversation if e.kind is EventKind.ACTION and e.agent_id == agent_id)
        subjects.append(ChannelSubject(channel, conversation, weight))
    return tuple(subjects)
