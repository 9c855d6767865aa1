"""Shared value types: dimensions, trajectory events, personas, token usage, per-agent configuration."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import cached_property
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, JsonValue


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


# The gate's decision and outcome live here, not in engine.gate, so the wire's payloads (and every command that
# reads a topic or the store) need neither the gate nor its checks' numpy.
class Decision(StrEnum):
    COMMIT = "commit"
    RETRY = "retry"
    REJECT = "reject"
    SKIP = "skip"  # the agent chose silence: nothing to commit


class Outcome(StrEnum):
    PASSED = "passed"
    PASSED_AFTER_RETRY = "passed_after_retry"
    FORCED_THROUGH = "forced_through"
    TIMEOUT_PASS_THROUGH = "timeout_pass_through"  # noqa: S105 (an outcome, not a password)
    CORRECTED = "corrected"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    NOT_GATED_YET = "not_gated_yet"  # fewer committed actions than minimum_required_qty_of_actions


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


#: A free-form persona value: text, a number, a list or a nested mapping (TinyTroupe-style specs).
SpecValue = JsonValue
#: A list field of a persona: items are text or mappings (a relationship, a dated fact), or a mapping of lists.
SpecList = tuple[str | dict[str, SpecValue], ...] | dict[str, SpecValue]

#: Persona fields in the order :meth:`Persona.render` prints them; any other field follows in file order.
PERSONA_ORDER: tuple[str, ...] = (
    "age", "gender", "nationality", "residence", "education", "occupation", "personality", "style",
    "beliefs", "preferences", "behaviours", "skills", "relationships",
)  # fmt: skip


class Persona(BaseModel):
    """A persona spec: who an agent is (``propositions/personas/<agent_id>.yaml``, population files).

    Only ``id`` and ``name`` are required. The named fields cover a TinyTroupe-style specification (age,
    nationality, occupation with its description, personality with traits and Big Five, beliefs,
    preferences, style, behaviours, skills, relationships); each may be text, a list or a nested mapping,
    and any further field (``other_facts``, ``long_term_goals``…) is kept as given. The judge sees it all.
    """

    model_config = ConfigDict(frozen=True, extra="allow")
    __pydantic_extra__: dict[str, SpecValue] = Field(init=False)

    id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    age: int | None = Field(None, ge=0, le=150)
    gender: str = ""
    nationality: str = ""
    residence: SpecValue = ""
    education: SpecValue = ""
    occupation: SpecValue = Field("", description="A title, or a mapping with title, organization, description")
    personality: SpecValue = Field("", description="Text, or a mapping with traits and big_five")
    style: SpecValue = ""
    beliefs: SpecList = ()
    preferences: SpecList = ()
    behaviours: SpecList = ()
    skills: SpecList = ()
    relationships: SpecList = ()

    def spec(self) -> dict[str, Any]:
        """The whole specification as plain data (named fields that are set, then the free-form ones)."""
        data = self.model_dump(mode="json", exclude_defaults=True)
        return {"id": self.id, "name": self.name, **{k: v for k, v in data.items() if k not in {"id", "name"}}}

    def render(self) -> str:
        """The whole persona as plain text for a judge or an actor: ``Title: value`` lines, nested as YAML."""
        lines = [f"Name: {self.name}"]
        spec = self.spec()
        keys = [k for k in PERSONA_ORDER if k in spec] + [k for k in spec if k not in PERSONA_ORDER]
        for key in keys:
            if key not in {"id", "name"}:
                lines.extend(_render_field(key.replace("_", " ").capitalize(), spec[key]))
        return "\n".join(lines)


def _render_field(title: str, value: Any) -> list[str]:
    if isinstance(value, str | int | float | bool):
        return [f"{title}: {value}"]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [f"{title}:", *(f"- {item}" for item in value)]
    dumped = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False, width=110)
    return [f"{title}:", *("  " + line for line in dumped.rstrip().splitlines())]


class AgentConfig(BaseModel):
    """Per-agent runtime configuration: the ``agent_evaluation_config`` row of seed doc 001.

    Every runtime correction is disabled by default. ``gate_enabled`` is the master switch: when false the
    gate commits every draft of the agent at once without any check.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Every numeric field is bounded: the bounds fit the agent_evaluation_config columns (integer = int32,
    # double precision since migration 009) and are checked before anything is written (engine.config_changes).
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
    # The drift monitor (engine.monitor): beside the verdict path, on first-attempt gate scores and evaluations.
    monitor_enabled: bool = True
    monitor_alpha: float = Field(0.01, ge=1e-9, le=0.5)  # α > 0: ge keeps the bound checkable
    monitor_min_shift: float = Field(1.0, ge=0, le=8)
    monitor_reference: Literal["baseline", "first-n"] = "baseline"
    # The gate's propositions tree and judge spec for this agent (shadow gating's promote, issue 30): None is the
    # worker's own (DRIFT_PROPOSITIONS_DIR, DRIFT_JUDGE); a worker builds each named one once and keeps it.
    propositions: str | None = Field(None, min_length=1, max_length=4096)
    judge: str | None = Field(None, min_length=1, max_length=4096)

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
