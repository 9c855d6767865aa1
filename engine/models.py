"""Shared value types: dimensions, trajectory events, personas, token usage, per-agent configuration."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Dimension(StrEnum):
    """What a proposition set measures. ``convergence`` means voice *divergence*: higher is better."""

    ADHERENCE = "adherence"
    CONSISTENCY = "consistency"
    FLUENCY = "fluency"
    CONVERGENCE = "convergence"
    IDEAS_QUANTITY = "ideas_quantity"
    SUITABILITY = "suitability"


#: The dimensions the action gate can judge (TinyTroupe's ActionGenerator quality checks).
GATE_DIMENSIONS: tuple[Dimension, ...] = (
    Dimension.ADHERENCE,
    Dimension.CONSISTENCY,
    Dimension.FLUENCY,
    Dimension.SUITABILITY,
)

#: The dimensions of offline evaluation (TinyTroupe Table 1).
EVALUATION_DIMENSIONS: tuple[Dimension, ...] = (
    Dimension.ADHERENCE,
    Dimension.CONSISTENCY,
    Dimension.FLUENCY,
    Dimension.CONVERGENCE,
    Dimension.IDEAS_QUANTITY,
)


class TargetType(StrEnum):
    AGENT = "agent"
    ENVIRONMENT = "environment"


class EventKind(StrEnum):
    ACTION = "action"
    STIMULUS = "stimulus"


@dataclass(frozen=True, slots=True)
class Event:
    """One conversation event: an agent's committed message (action) or something it received (stimulus).

    For a stimulus, ``agent_id``/``agent_name`` name the *recipient* and ``source`` the sender.
    """

    agent_id: str
    agent_name: str
    text: str
    kind: EventKind = EventKind.ACTION
    channel: str | None = None
    source: str | None = None
    ts: datetime | None = None


@dataclass(frozen=True, slots=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
        }


ZERO_USAGE = TokenUsage()


class Persona(BaseModel):
    """A persona spec: who an agent is. Loaded from ``propositions/personas/<agent_id>.yaml``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    personality: str = ""
    style: str = ""
    beliefs: tuple[str, ...] = ()
    behaviours: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()

    def render(self) -> str:
        """The persona as plain text for a judge or a generator."""
        lines = [f"Name: {self.name}"]
        if self.personality:
            lines.append(f"Personality: {self.personality}")
        if self.style:
            lines.append(f"Style: {self.style}")
        for title, items in (("Beliefs", self.beliefs), ("Behaviours", self.behaviours), ("Skills", self.skills)):
            if items:
                lines.append(f"{title}:")
                lines.extend(f"- {item}" for item in items)
        return "\n".join(lines)


class AgentConfig(BaseModel):
    """Per-agent runtime configuration: the ``agent_evaluation_config`` row of seed doc 001.

    Every runtime correction is disabled by default. ``gate_enabled`` is the master switch: when false the
    gate commits every draft of the agent at once without any check.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Every numeric field is bounded: the bounds fit the agent_evaluation_config columns (integer = int32,
    # real = float4) and are checked before anything is written (engine.config_changes).
    gate_enabled: bool = True
    gate_adherence_enabled: bool = False
    gate_consistency_enabled: bool = False
    gate_fluency_enabled: bool = False
    gate_suitability_enabled: bool = False
    gate_adherence_threshold: float = Field(7.0, ge=0, le=9)
    gate_consistency_threshold: float = Field(7.0, ge=0, le=9)
    gate_fluency_threshold: float = Field(7.0, ge=0, le=9)
    gate_suitability_threshold: float = Field(7.0, ge=0, le=9)
    gate_similarity_enabled: bool = False
    max_action_similarity: float = Field(0.6, ge=0, le=1)
    max_correction_attempts: int = Field(2, ge=0, le=20)
    continue_on_failure: bool = True
    minimum_required_qty_of_actions: int = Field(0, ge=0, le=1000)
    anti_convergence_enabled: bool = False
    convergence_threshold: float = Field(0.6, ge=0, le=9)
    variety_intervention_enabled: bool = False
    variety_message_threshold: int = Field(7, ge=0, le=1000)
    repetition_suppression_enabled: bool = False
    repetition_threshold: float = Field(0.3, ge=0, le=1)

    def dimension_enabled(self, dimension: Dimension) -> bool:
        return bool(getattr(self, f"gate_{dimension.value}_enabled", False))

    def threshold(self, dimension: Dimension) -> float:
        return float(getattr(self, f"gate_{dimension.value}_threshold", 7.0))

    @cached_property
    def _enabled(self) -> tuple[Dimension, ...]:
        return tuple(d for d in GATE_DIMENSIONS if self.dimension_enabled(d))

    def enabled_gate_dimensions(self) -> tuple[Dimension, ...]:
        return self._enabled

    @cached_property
    def needs_judge(self) -> bool:
        """True when the gate will call a judge for this agent (an LLM dimension is on and the gate is)."""
        return self.gate_enabled and bool(self._enabled)

    def with_changes(self, changes: dict[str, Any]) -> AgentConfig:
        """A validated copy with ``changes`` applied (raises pydantic's ValidationError on bad input)."""
        return AgentConfig.model_validate({**self.model_dump(), **changes})
