"""The intervention file schema (``propositions/interventions/*.yaml``), validated with pydantic.

```yaml
interventions:
  - name: stay-on-topic          # also the directive kind; not repetition / anti_convergence / variety
    targets: all                 # all | an agent id | a list of agent ids
    group: false                 # false: one intervention per target; true: one over all targets together
    enabled: true
    concurrent: false            # judge textual and propositional preconditions at the same time
    first_n: 10                  # trajectory window for the judge
    last_n: 100
    preconditions:               # all optional, AND-ed; functional ones are evaluated first
      functional:
        min_messages: 7          # name: parameter, or name: {keyword: value}
      textual: "{{agent_name}} keeps returning to the same topic"   # or {claim: ..., scope: channel}
      propositional:
        dimension: convergence   # a whole proposition set, or with proposition: <id> one proposition
        threshold: 5             # fires when the score is below it; without a threshold: when the check holds
        scope: channel           # agent (default) or channel
    effect:                      # a string, or a default plus per-agent variants
      default: "{{agent_name}}, bring the discussion back to the agenda."
      michael: "{{agent_name}}, tell a story that brings everyone back to the agenda."
```

An inline proposition replaces ``dimension``/``proposition`` with ``claim`` (plus optional ``id``,
``inverted`` and ``include_persona``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, Strict, field_validator, model_validator

from engine.interventions.types import Scope
from engine.models import Dimension
from engine.propositions.models import check_id

StrictText = Annotated[str, Strict()]
StrictFlag = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Field(ge=0)]

ALL_TARGETS = "all"
DEFAULT_EFFECT_KEY = "default"
MAX_SCORE = 9


class TextualModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    claim: StrictText = Field(description="A claim the judge checks true/false; may use {{agent_name}}.")
    scope: Scope = Field(Scope.AGENT, description="agent: the targets' own histories; channel: the channel.")
    include_persona: StrictFlag = Field(
        False, description="Give the judge the target's persona (default: no persona, as in TinyTroupe)."
    )

    @field_validator("claim")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the claim must not be empty")
        return value


class PropositionalModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    dimension: Dimension | None = Field(None, description="The proposition set's dimension.")
    proposition: StrictText | None = Field(None, description="One proposition id of that set (unset: all).")
    claim: StrictText | None = Field(None, description="An inline claim instead of a proposition file.")
    id: StrictText | None = Field(None, description="Id of the inline claim (default: '<name>-claim').")
    inverted: StrictFlag = Field(False, description="Inline claim only: an anti-pattern (score 9 - raw).")
    include_persona: StrictFlag = Field(True, description="Inline claim only: give the judge the persona.")
    threshold: Annotated[float, Strict(), Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="Fire when the score is below it; unset: fire when the check is true."
    )
    scope: Scope | None = Field(None, description="agent or channel (default: the set's target_type).")

    @model_validator(mode="after")
    def _one_source(self) -> PropositionalModel:
        if self.claim is not None and (self.dimension is not None or self.proposition is not None):
            raise ValueError("give either an inline 'claim' or a 'dimension' (and 'proposition'), not both")
        if self.claim is None and self.dimension is None:
            raise ValueError("needs an inline 'claim' or a 'dimension' (with an optional 'proposition' id)")
        if self.claim is not None and not self.claim.strip():
            raise ValueError("the claim must not be empty")
        if self.claim is None and (self.id is not None or self.inverted or not self.include_persona):
            raise ValueError("'id', 'inverted' and 'include_persona' apply to inline claims only")
        if self.dimension is Dimension.IDEAS_QUANTITY and self.threshold is None:
            raise ValueError("ideas_quantity is a count, not a true/false claim: give a threshold")
        if self.dimension is not Dimension.IDEAS_QUANTITY and (self.threshold or 0) > MAX_SCORE:
            raise ValueError(f"threshold {self.threshold:g} is above the 0-9 scale")
        return self


class PreconditionsModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    functional: dict[StrictText, Any] = Field(
        default_factory=dict, description="Named functional preconditions and their parameters, AND-ed."
    )
    textual: TextualModel | None = Field(None, description="A claim the judge checks true/false.")
    propositional: PropositionalModel | None = Field(None, description="A proposition with optional threshold.")

    @field_validator("textual", mode="before")
    @classmethod
    def _claim_shorthand(cls, value: Any) -> Any:
        return {"claim": value} if isinstance(value, str) else value


class InterventionModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: StrictText = Field(description="Unique intervention name; the kind of the directives it produces.")
    description: StrictText | None = Field(None, description="Free text for people reading the file.")
    enabled: StrictFlag = Field(True, description="A disabled intervention is loaded but never built.")
    targets: tuple[StrictText, ...] = Field(min_length=1, description="'all', an agent id or a list of ids.")
    group: StrictFlag = Field(False, description="One intervention over all targets instead of one each.")
    concurrent: StrictFlag = Field(False, description="Run textual and propositional judge calls together.")
    first_n: Count = Field(10, description="Trajectory events kept from the start.")
    last_n: Count = Field(100, description="Trajectory events kept from the end.")
    preconditions: PreconditionsModel = Field(default_factory=PreconditionsModel)
    effect: dict[StrictText, StrictText] = Field(description="Directive text: 'default' plus agent variants.")

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_id(value, "intervention name")

    @field_validator("targets", mode="before")
    @classmethod
    def _one_target(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("targets")
    @classmethod
    def _valid_targets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if ALL_TARGETS in value and len(value) > 1:
            raise ValueError("'all' cannot be combined with agent ids")
        for target in value:
            if target != ALL_TARGETS:
                check_id(target, "target agent id")
        if len(set(value)) != len(value):
            raise ValueError("an agent is listed twice")
        return value

    @field_validator("effect", mode="before")
    @classmethod
    def _text_shorthand(cls, value: Any) -> Any:
        return {DEFAULT_EFFECT_KEY: value} if isinstance(value, str) else value

    @field_validator("effect")
    @classmethod
    def _has_default(cls, value: dict[str, str]) -> dict[str, str]:
        if not value.get(DEFAULT_EFFECT_KEY, "").strip():
            raise ValueError("needs a non-empty 'default' text (variants are optional, keyed by agent id)")
        for key in value:
            if key != DEFAULT_EFFECT_KEY:
                check_id(key, "effect variant agent id")
        return value


class InterventionFileModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", title="persona-drift intervention file")

    interventions: tuple[InterventionModel, ...] = Field(description="The interventions of this file.")
