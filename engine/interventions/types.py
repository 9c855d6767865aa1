"""Value types of the intervention framework: the step context, directives and evaluation outcomes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from engine.errors import ConfigurationError
from engine.models import ZERO_USAGE, AgentConfig, Event, EventKind, Persona, TokenUsage
from engine.windows import Gap


class DirectiveKind(StrEnum):
    """The built-in directive kinds. A custom intervention's directives carry the intervention's name."""

    REPETITION = "repetition"
    ANTI_CONVERGENCE = "anti_convergence"
    VARIETY = "variety"


class Scope(StrEnum):
    """Which trajectory a textual or propositional precondition is judged on."""

    AGENT = "agent"  # the targeted agents' own histories
    CHANNEL = "channel"  # the whole channel trajectory


class PreconditionKind(StrEnum):
    FUNCTIONAL = "functional"
    TEXTUAL = "textual"
    PROPOSITIONAL = "propositional"


@dataclass(frozen=True, slots=True)
class Directive:
    """A transient nudge for one agent's next action; never stored in the agent's memory."""

    agent_id: str
    kind: str
    text: str
    evidence: str


@dataclass(frozen=True, slots=True)
class StepContext:
    """What an intervention sees at one orchestrator step, before the agents in ``agent_ids`` act.

    ``histories`` holds each agent's own events (its actions and the stimuli it received); ``trajectory`` is
    the channel's events in order, with ``gap`` the held events of a longer channel (engine/windows.py).
    Maps may cover more agents than ``agent_ids``: :meth:`narrow` restricts
    the targets without copying the maps.
    """

    run_id: str
    channel: str | None
    step: int
    agent_ids: tuple[str, ...]
    personas: Mapping[str, Persona] = field(default_factory=dict)
    histories: Mapping[str, Sequence[Event]] = field(default_factory=dict)
    trajectory: Sequence[Event] = ()
    configs: Mapping[str, AgentConfig] = field(default_factory=dict)
    gap: Gap | None = None

    def narrow(self, agent_ids: Sequence[str]) -> StepContext:
        """The same step seen by ``agent_ids`` only."""
        return replace(self, agent_ids=tuple(agent_ids))

    @property
    def agent_id(self) -> str:
        """The single target; a configuration error when the context targets several agents or none."""
        if len(self.agent_ids) != 1:
            raise ConfigurationError(f"expected exactly one targeted agent, got {list(self.agent_ids)}")
        return self.agent_ids[0]

    def agent_name(self, agent_id: str) -> str:
        persona = self.personas.get(agent_id)
        return persona.name if persona is not None else agent_id

    def channel_label(self) -> str:
        """The channel's name for templates; a direct conversation has none."""
        return self.channel or "this conversation"

    def target_names(self) -> str:
        """The targets' display names joined for a claim's ``{{agent_name}}``."""
        return ", ".join(self.agent_name(a) for a in self.agent_ids)

    def persona(self, agent_id: str | None = None) -> Persona | None:
        return self.personas.get(agent_id or self.agent_id)

    def config(self, agent_id: str | None = None) -> AgentConfig:
        return self.configs.get(agent_id or self.agent_id, AgentConfig())

    def history(self, agent_id: str | None = None) -> tuple[Event, ...]:
        return tuple(self.histories.get(agent_id or self.agent_id, ()))

    def target_events(self) -> tuple[Event, ...]:
        """Every target's own history, target after target (one target: its history)."""
        return tuple(event for agent_id in self.agent_ids for event in self.histories.get(agent_id, ()))

    def action_count(self, agent_id: str | None = None) -> int:
        """How many messages the agent has sent (its own action events)."""
        who = agent_id or self.agent_id
        return sum(1 for e in self.history(who) if e.kind is EventKind.ACTION and e.agent_id == who)

    def recent_messages(self, agent_id: str | None = None, limit: int = 5) -> tuple[str, ...]:
        """The texts of the agent's last ``limit`` messages, oldest first."""
        who = agent_id or self.agent_id
        texts = [e.text for e in self.history(who) if e.kind is EventKind.ACTION and e.agent_id == who]
        return tuple(texts[-limit:]) if limit > 0 else ()

    def channel_action_count(self) -> int:
        return sum(1 for e in self.trajectory if e.kind is EventKind.ACTION)


@dataclass(frozen=True, slots=True)
class PreconditionResult:
    """One precondition's verdict. ``satisfied`` is None when it was not evaluated (short-circuit)."""

    kind: PreconditionKind
    label: str
    satisfied: bool | None
    detail: str = ""
    score: float | None = None
    threshold: float | None = None
    judge_calls: int = 0
    usage: TokenUsage = ZERO_USAGE


@dataclass(frozen=True, slots=True)
class InterventionOutcome:
    """The result of evaluating one intervention. ``directives`` holds one per target when it fired."""

    name: str
    agent_ids: tuple[str, ...]
    fired: bool
    directives: tuple[Directive, ...]
    evidence: str
    preconditions: tuple[PreconditionResult, ...]
    judge_calls: int = 0
    usage: TokenUsage = ZERO_USAGE

    @property
    def text(self) -> str | None:
        """The directive text of the (first) target, or None when the intervention did not fire."""
        return self.directives[0].text if self.directives else None


@dataclass(frozen=True, slots=True)
class StepResult:
    """Everything one evaluation pass produced. ``timed_out`` and ``errors`` name ``(agent_id, kind)``."""

    directives: tuple[Directive, ...] = ()
    timed_out: tuple[tuple[str, str], ...] = ()
    judge_calls: int = 0
    usage: TokenUsage = ZERO_USAGE
    outcomes: tuple[InterventionOutcome, ...] = ()
    errors: tuple[tuple[str, str, str], ...] = ()

    def for_agent(self, agent_id: str) -> tuple[Directive, ...]:
        return tuple(d for d in self.directives if d.agent_id == agent_id)

    def merged(self, other: StepResult) -> StepResult:
        return StepResult(
            directives=self.directives + other.directives,
            timed_out=self.timed_out + other.timed_out,
            judge_calls=self.judge_calls + other.judge_calls,
            usage=self.usage + other.usage,
            outcomes=self.outcomes + other.outcomes,
            errors=self.errors + other.errors,
        )
